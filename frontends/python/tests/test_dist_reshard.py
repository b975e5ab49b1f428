"""dist.reshard on cpu ranks (dist_harness): every transition on 2 ranks, on
a 2x2 mesh of 4 ranks, uneven shapes (a rank's chunk empty included),
between two meshes (send/recv), and the VJP (the gradient of a reshard is
the dense gradient, placed as the input). Each rank returns its pieces; the
expected pieces are cut from the dense value here with numpy, as
torch.chunk does. Partial inputs are made with dtensor_from_local from
pieces that combine to the dense value; a Partial result is checked by
combining the ranks' pieces."""
import itertools

import numpy as np

import oar
import oar.distributed as dist
from dist_harness import run_ranks

SUM, AVG, MAX = dist.ReduceType.kRedSum, dist.ReduceType.kRedAvg, dist.ReduceType.kRedMax


def full(shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32) + 1).reshape(shape)


# Placements as plain tuples (picklable, readable in test ids): ("R",), ("S", d), ("P", reduce).
def make(p):
    if p[0] == "R":
        return dist.Replicate()
    if p[0] == "S":
        return dist.Shard(p[1])
    return dist.Partial(p[1])


def chunk(size, parts, index):
    c = -(-size // parts)
    begin = min(size, index * c)
    return begin, min(size, (index + 1) * c)


def coords(mesh_shape, ids, rank):
    return list(np.argwhere(np.array(ids).reshape(mesh_shape) == rank)[0])


def cut(value, mesh_shape, ids, placements, rank):
    """`rank`'s piece of `value` placed as `placements` with Partial read as
    Replicate (mesh-dim order for a dim split over several mesh dims)."""
    if rank not in ids:
        return np.zeros([0] * value.ndim, np.float32)
    c = coords(mesh_shape, ids, rank)
    piece = value
    for m, p in enumerate(placements):
        if p[0] == "S":
            b, e = chunk(piece.shape[p[1]], mesh_shape[m], c[m])
            piece = np.take(piece, range(b, e), axis=p[1])
    return piece


def partial_piece(piece, reduce, coordinate, n):
    """Pieces along a Partial mesh dim that combine to `piece`."""
    if reduce == SUM:
        return piece - (n - 1) if coordinate == 0 else np.ones_like(piece)
    if reduce == AVG:
        return piece + (coordinate - (n - 1) / 2)
    return piece if coordinate == 0 else piece - 5  # MAX


def make_input(value, mesh_shape, ids, placements, rank):
    piece = cut(value, mesh_shape, ids, placements, rank)
    for m, p in enumerate(placements):
        if p[0] == "P" and rank in ids:
            piece = partial_piece(piece, p[1], coords(mesh_shape, ids, rank)[m], mesh_shape[m])
    return piece.astype(np.float32)


def reshard_body(rank, world, cases):
    """Per case: this rank's piece after the reshard, its placements, and the whole value."""
    out = []
    for shape, (mshape, ids, src), (tshape, tids, dst) in cases:
        value = full(shape)
        mesh = dist.ProcessMesh(np.array(ids).reshape(mshape).tolist())
        target = dist.ProcessMesh(np.array(tids).reshape(tshape).tolist())
        x = dist.dtensor_from_local(oar.to_tensor(make_input(value, mshape, ids, src, rank)), mesh,
                                    [make(p) for p in src], global_shape=shape)
        y = dist.reshard(x, target, [make(p) for p in dst])
        whole = y.numpy() if rank in tids else None  # a collective among the target's ranks
        out.append((y._local_value().numpy(), repr(y.placements), list(y.shape), whole))
    dist.barrier()  # rank 0 serves the store: it leaves last (the harness skips atexit)
    return out


def check(cases, results):
    for i, (shape, _, (tshape, tids, dst)) in enumerate(cases):
        value = full(shape)
        what = f"case {cases[i]}"
        for rank, r in enumerate(results):
            piece, placements, gshape, whole = r[i]
            assert gshape == list(shape), what
            assert placements == repr([make(p) for p in dst]), what
            if rank in tids:
                np.testing.assert_array_equal(whole, value, err_msg=what)
            want = cut(value, tshape, tids, dst, rank)
            assert piece.shape == want.shape, f"{what}: rank {rank} piece {piece.shape}, expected {want.shape}"
            if not any(p[0] == "P" for p in dst):
                np.testing.assert_array_equal(piece, want, err_msg=f"{what}: rank {rank}")
        # A Partial result: the pieces along that mesh dim combine to the piece.
        for m, p in enumerate(dst):
            if p[0] != "P":
                continue
            grid = np.array(tids).reshape(tshape)
            for line in np.moveaxis(grid, m, -1).reshape(-1, tshape[m]):
                pieces = np.stack([results[r][i][0] for r in line])
                combined = {SUM: pieces.sum(0), AVG: pieces.mean(0), MAX: pieces.max(0)}[p[1]]
                np.testing.assert_allclose(combined, cut(value, tshape, tids, dst, int(line[0])), rtol=1e-6,
                                           err_msg=what)


ONE_D = [("R",), ("S", 0), ("S", 1), ("P", SUM), ("P", AVG), ("P", MAX)]


def test_every_transition_on_two_ranks_even_and_uneven():
    mesh = ([2], [0, 1])
    cases = [(shape, (*mesh, [a]), (*mesh, [b]))
             for shape in ([4, 6], [5, 3], [1, 3])  # even; uneven; rank 1's chunk of dim 0 empty
             for a, b in itertools.product(ONE_D, ONE_D)]
    check(cases, run_ranks(reshard_body, world=2, args=(cases,)))


TWO_D = [[("R",), ("R",)], [("S", 0), ("R",)], [("R",), ("S", 1)], [("S", 0), ("S", 1)], [("S", 1), ("S", 0)],
         [("S", 0), ("S", 0)], [("R",), ("S", 0)], [("P", SUM), ("S", 0)], [("S", 1), ("P", SUM)],
         [("P", MAX), ("R",)]]


def test_transitions_on_a_2x2_mesh_of_four_ranks():
    mesh = ([2, 2], [0, 1, 2, 3])
    cases = [(shape, (*mesh, a), (*mesh, b)) for shape in ([4, 4], [3, 5])
             for a, b in itertools.product(TWO_D, TWO_D)]
    check(cases, run_ranks(reshard_body, world=4, args=(cases,), timeout=120))


def test_between_two_meshes():
    cases = [([4, 3], ([2], [0, 1], [("S", 0)]), ([2], [2, 3], [("S", 1)])),
             ([5, 2], ([2], [0, 1], [("P", SUM)]), ([2], [2, 3], [("R",)])),
             ([3, 2], ([2], [2, 3], [("R",)]), ([2], [0, 1], [("S", 0)])),
             ([3, 2], ([1], [0], [("R",)]), ([2], [1, 2], [("P", SUM)])),   # rank 3 in neither mesh
             ([2, 3], ([2], [0, 1], [("S", 1)]), ([2], [1, 2], [("S", 0)])),  # overlapping meshes
             ([4, 2], ([2, 2], [0, 1, 2, 3], [("S", 0), ("S", 1)]), ([2], [3, 1], [("S", 0)]))]
    check(cases, run_ranks(reshard_body, world=4, args=(cases,)))


# ---- the VJP ----

VJP_CASES = [([("S", 0)], [("S", 1)]), ([("S", 1)], [("R",)]), ([("R",)], [("S", 0)]), ([("S", 0)], [("P", SUM)]),
             ([("S", 0)], [("S", 0)])]


def vjp_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    value, weight = full([5, 4]), full([5, 4])[::-1].copy()
    out = []
    for src, dst in VJP_CASES:
        x = dist.shard_tensor(oar.to_tensor(value, stop_gradient=False), mesh, [make(p) for p in src])
        y = dist.reshard(x, mesh, [make(p) for p in dst])
        loss = (y * oar.to_tensor(weight)).sum()
        loss.backward()
        out.append({"grad": x.grad, "placements": repr(x.grad.placements), "loss": loss})
    return out


def test_gradient_of_a_reshard_equals_dense():
    value, weight = full([5, 4]), full([5, 4])[::-1].copy()
    for r in run_ranks(vjp_body, world=2):
        for (src, dst), c in zip(VJP_CASES, r):
            np.testing.assert_allclose(c["loss"], (value * weight).sum(), rtol=1e-6)
            np.testing.assert_array_equal(c["grad"], weight)  # d sum(y * w) / dx = w, whatever the placements
            assert c["placements"] == repr([make(p) for p in src]), (src, dst)


# ---- bad input: a sentence on every rank, before any collective ----

def bad_reshard_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    x = dist.shard_tensor(full([4, 2]), mesh, [dist.Shard(0)])
    errors = []
    for target, placements in [(mesh, [dist.Shard(2)]), (mesh, [dist.Shard(0), dist.Replicate()]),
                               (dist.ProcessMesh([0, 5]), [dist.Replicate()])]:
        try:
            dist.reshard(x, target, placements)
            errors.append(None)
        except ValueError as e:
            errors.append(str(e))
    return errors


def test_bad_reshard_errors_on_every_rank():
    expected = [["reshard", "[4, 2]", "[Shard(2)]", "2 dims"], ["reshard", "[4, 2]", "2 placements", "1 dims"],
                ["reshard", "[4, 2]", "names process 5", "2 processes"]]
    for errors in run_ranks(bad_reshard_body, world=2):
        for words, e in zip(expected, errors):
            assert e is not None and all(w in e for w in words), (words, e)
