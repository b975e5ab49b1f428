"""A physics-informed network (PINN) for the Poisson problem, in Python
(the port of examples/pinn_poisson.cpp):
  -Δu = f on (0,1)^2,  u = 0 on the boundary,
  f = 2π² sin(πx) sin(πy),  exact solution u* = sin(πx) sin(πy).
An oar.nn MLP u(x, y) (tanh) is trained with oar.optimizer.Adam on
  mean((u_xx + u_yy + f)^2) over interior points + λ mean(u^2) over boundary points,
the Laplacian by grad-of-grad (oar.grad with create_graph=True). Prints the
relative L2 error against u* on a 50x50 grid; exits 0 when it is below 1e-2.
With --lbfgs, the Adam steps are followed by --lbfgs-iters iterations of
oar.optimizer.LBFGS (strong Wolfe line search) on the same loss, and a second
run trains with Adam alone for the same wall time; both errors are printed
(exit 0 when Adam then L-BFGS is the lower one and below 1e-2).
Usage: python pinn_poisson.py [--steps N] [--points N] [--width N] [--device T]
                              [--lbfgs [--lbfgs-iters N]]
"""
import argparse
import math
import sys
import time

import numpy as np

import oar
import oar.nn as nn


class MLP(nn.Layer):
    """2 -> width (x depth, tanh) -> 1; inputs mapped from [0,1] to [-1,1];
    weights Normal(0, sqrt(2 / (fan_in + fan_out))), biases zero."""

    def __init__(self, width=32, depth=3):
        super().__init__()
        sizes = [2] + [width] * depth + [1]
        self.layers = nn.LayerList([
            nn.Linear(a, b, weight_attr=nn.initializer.Normal(0.0, math.sqrt(2.0 / (a + b))))
            for a, b in zip(sizes[:-1], sizes[1:])])

    def forward(self, x):
        h = x * 2.0 - 1.0
        for layer in self.layers[:-1]:
            h = oar.tanh(layer(h))
        return self.layers[-1](h)


def exact_solution(xy):
    return oar.sin(math.pi * xy[:, 0:1]) * oar.sin(math.pi * xy[:, 1:2])


def laplacian(u, x):
    """u_xx + u_yy at x (which requires grad), by grad-of-grad."""
    g = oar.grad(u.sum(), x, create_graph=True)[0]
    u_xx = oar.grad(g[:, 0].sum(), x, create_graph=True)[0][:, 0:1]
    u_yy = oar.grad(g[:, 1].sum(), x, create_graph=True)[0][:, 1:2]
    return u_xx + u_yy


def boundary_points(n):
    """n points spread evenly over the four edges of the unit square, [n, 2]."""
    xy = []
    for i in range(n):
        edge = i % 4
        s = (i // 4 + 0.5) / ((n + 3 - edge) // 4)
        xy.append([(s, 0.0), (1.0, s), (1.0 - s, 1.0), (0.0, 1.0 - s)][edge])
    return oar.to_tensor(np.asarray(xy, dtype=np.float32))


def relative_l2_error(net, n=50):
    g = np.linspace(0.0, 1.0, n, dtype=np.float32)
    grid = oar.to_tensor(np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2))
    with oar.no_grad():
        exact = exact_solution(grid)
        diff = net(grid) - exact
        return math.sqrt(float((diff * diff).sum()) / float((exact * exact).sum()))


def train(steps=2000, points=1024, width=32, depth=3, lr=5e-3, boundary_weight=100.0, seed=2026, quiet=False,
          lbfgs_iters=0, timing=None, seconds_budget=None):
    """Trains the PINN (Adam for `steps`, then `lbfgs_iters` L-BFGS iterations when that is not 0);
    returns (relative L2 error, seconds). With `seconds_budget`, Adam runs until that much wall time
    has passed instead (the cosine schedule spans `steps`, then stays at its floor). `timing`, a dict,
    gets the Adam phase's seconds as "adam" and its step count as "adam_steps"."""
    oar.seed(seed)
    net = MLP(width, depth)
    interior = oar.uniform([points, 2], min=0.0, max=1.0)
    interior.stop_gradient = False
    forcing = 2.0 * math.pi ** 2 * exact_solution(interior.detach())
    boundary = boundary_points(points // 4)
    # Cosine decay from lr to lr / 20 over the run, stepped once per step.
    schedule = oar.optimizer.lr.CosineAnnealingDecay(lr, T_max=steps, eta_min=lr / 20)
    opt = oar.optimizer.Adam(schedule, parameters=net.parameters())

    def losses():
        residual = laplacian(net(interior), interior) + forcing
        pde_loss = (residual * residual).mean()
        u_b = net(boundary)
        bc_loss = (u_b * u_b).mean()
        return pde_loss + boundary_weight * bc_loss, pde_loss, bc_loss

    start = time.perf_counter()
    step = 0
    while (step < steps) if seconds_budget is None else (time.perf_counter() - start < seconds_budget):
        loss, pde_loss, bc_loss = losses()
        loss.backward()
        opt.step()
        opt.clear_grad()
        if step < steps:
            schedule.step()
        if not quiet and (step % 500 == 0 or step + 1 == steps):
            print(f"  step {step:5d}  loss {float(loss):.4e}  (pde {float(pde_loss):.4e}, "
                  f"boundary {float(bc_loss):.4e})  lr {opt.get_lr():.2e}", flush=True)
        step += 1
    if timing is not None:
        timing["adam"], timing["adam_steps"] = time.perf_counter() - start, step
    if lbfgs_iters:
        lbfgs = oar.optimizer.LBFGS(max_iter=lbfgs_iters, max_eval=lbfgs_iters * 5 // 4, history_size=50,
                                    line_search_fn="strong_wolfe", tolerance_grad=1e-9, tolerance_change=1e-12,
                                    parameters=net.parameters())

        def closure():
            lbfgs.clear_grad()
            loss = losses()[0]
            loss.backward()
            return loss

        lbfgs.step(closure)
    seconds = time.perf_counter() - start
    if lbfgs_iters and not quiet:
        state = lbfgs.state_dict()["state"]
        print(f"  L-BFGS: {state['n_iter']} iterations, {state['func_evals']} evaluations, "
              f"loss {float(losses()[0]):.4e}", flush=True)
    return relative_l2_error(net), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--device", default=None)
    parser.add_argument("--lbfgs", action="store_true", help="Adam then L-BFGS, against Adam alone for the same time")
    parser.add_argument("--lbfgs-iters", type=int, default=500)
    args = parser.parse_args()
    if args.device:
        oar.set_device(args.device)
    print(f"pinn_poisson.py on {oar.get_device()}: width {args.width}, depth 3, {args.points} interior + "
          f"{args.points // 4} boundary points, float32, {args.steps} steps")
    if args.lbfgs:
        return compare_with_lbfgs(args)
    error, seconds = train(args.steps, args.points, args.width)
    print(f"train time: {seconds:.2f} s ({1e3 * seconds / args.steps:.2f} ms/step)")
    print(f"relative L2 error: {error:.6e}")
    return 0 if error < 1e-2 else 2


def compare_with_lbfgs(args):
    """Adam (--steps) then L-BFGS (--lbfgs-iters) against Adam alone for the same wall time: the
    Adam-only run steps until the first run's time has passed; its cosine schedule spans the steps
    that fit at the first run's Adam ms/step."""
    print(f"Adam {args.steps} steps, then L-BFGS up to {args.lbfgs_iters} iterations:")
    timing = {}
    error_lbfgs, seconds = train(args.steps, args.points, args.width, lbfgs_iters=args.lbfgs_iters, timing=timing)
    adam_steps = max(args.steps, round(seconds * args.steps / timing["adam"]))
    print(f"Adam alone for {seconds:.2f} s (schedule over {adam_steps} steps):")
    alone = {}
    error_adam, seconds_adam = train(adam_steps, args.points, args.width, timing=alone, seconds_budget=seconds)
    print(f"Adam then L-BFGS: relative L2 error {error_lbfgs:.6e} in {seconds:.2f} s")
    print(f"Adam alone:       relative L2 error {error_adam:.6e} in {seconds_adam:.2f} s ({alone['adam_steps']} steps)")
    return 0 if error_lbfgs < min(error_adam, 1e-2) else 2


if __name__ == "__main__":
    sys.exit(main())
