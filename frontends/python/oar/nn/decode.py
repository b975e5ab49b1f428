"""paddle.nn.BeamSearchDecoder and paddle.nn.dynamic_decode: step a cell
(any Layer with forward(inputs, states) -> (outputs, new_states)) until every
sequence has finished or max_step_num is passed."""
import collections

import numpy as np

from .. import math as M
from .. import _C
from ..creation import full, to_tensor
from ..framework import Tensor
from ..manip_extra import topk
from .functional import log_softmax
from .functional_more import gather_tree

_INF = 1e9  # "minus infinity" for a log-probability, finite so that sums stay finite

StateWrapper = collections.namedtuple("StateWrapper", ["cell_states", "log_probs", "finished", "lengths"])
OutputWrapper = collections.namedtuple("OutputWrapper", ["scores", "predicted_ids", "parent_ids"])


def _map(fn, value):
    """fn over the tensors of a nested list / tuple / dict (cell states)."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_map(fn, v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_map(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return value


def _map2(fn, a, b):
    if isinstance(a, Tensor):
        return fn(a, b)
    if isinstance(a, (list, tuple)):
        items = [_map2(fn, x, y) for x, y in zip(a, b)]
        return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)
    if isinstance(a, dict):
        return {k: _map2(fn, a[k], b[k]) for k in a}
    return a


class BeamSearchDecoder:
    """Beam search over a cell: each step embeds the last tokens, runs the
    cell on batch * beam_size rows, scores every (beam, token) extension by
    its summed log-probability and keeps the beam_size best per batch entry;
    a finished beam only extends with end_token at no cost."""

    tracks_own_finished = True

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None):
        if beam_size < 1:
            raise ValueError(f"BeamSearchDecoder: beam_size must be at least 1, got {beam_size}")
        self.cell, self.start_token, self.end_token, self.beam_size = cell, start_token, end_token, beam_size
        self.embedding_fn, self.output_fn = embedding_fn, output_fn

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """[B, ...] -> [B * beam_size, ...], each row repeated beam_size times."""
        x = M.unsqueeze(x, [1])
        x = M.tile(x, [1, beam_size] + [1] * (len(x.shape) - 2))
        return M.reshape(x, [-1] + list(x.shape[2:]))

    def _split(self, x):
        return M.reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge(self, x):
        return M.reshape(x, [-1] + list(x.shape[2:]))

    def _expand(self, x):
        x = M.unsqueeze(x, [1])
        return M.tile(x, [1, self.beam_size] + [1] * (len(x.shape) - 2))

    def initialize(self, initial_cell_states):
        states = _map(self._expand, initial_cell_states)
        first = next(iter(_leaves(states)))
        batch = first.shape[0]
        ids = full([batch, self.beam_size], self.start_token, dtype="int64")
        inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        log_probs = to_tensor(np.tile(np.array([[0.0] + [-_INF] * (self.beam_size - 1)], "float32"), (batch, 1)))
        log_probs = log_probs.astype(first.dtype)
        finished = to_tensor(np.zeros((batch, self.beam_size), dtype=bool))
        lengths = to_tensor(np.zeros((batch, self.beam_size), dtype=np.int64))
        return inputs, StateWrapper(states, log_probs, finished, lengths), finished

    def _gather(self, x, beam_indices):
        """x [B, beam, ...] re-ordered along beam by beam_indices [B, beam] (an int64 tensor)."""
        rank = len(x.shape)
        index = M.reshape(beam_indices, list(beam_indices.shape) + [1] * (rank - 2))
        index = M.broadcast_to(index, list(x.shape[:2]) + list(x.shape[2:]))
        return M.take_along_axis(x, index, 1)

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        # Tensor ops only (no values read), so that the same step runs eagerly and in a
        # captured loop of to_static (dynamic_decode's Note [Decoding in a trace]).
        vocab = logits.shape[-1]
        step_lp = log_softmax(logits, -1)
        only_end = np.full((vocab,), -_INF, dtype=np.float32)
        only_end[self.end_token] = 0.0
        finished = beam_state.finished
        step_lp = M.where(M.unsqueeze(finished, [-1]), to_tensor(only_end).astype(step_lp.dtype), step_lp)
        log_probs = M.add(step_lp, M.unsqueeze(beam_state.log_probs, [-1]))
        scores = M.reshape(log_probs, [-1, self.beam_size * vocab])
        # the beam_size best (beam, token) extensions, ties to the lower position
        top_scores, order = topk(scores, self.beam_size, axis=1)
        beam_indices = M.floor_divide(order, M.full_like(order, vocab))
        token_indices = M.remainder(order, M.full_like(order, vocab))
        next_cell_states = _map(lambda s: self._gather(s, beam_indices), next_cell_states)
        next_finished = M.cast(M.take_along_axis(M.cast(finished, "int64"), beam_indices, 1), "bool")
        next_lengths = M.add(M.take_along_axis(beam_state.lengths, beam_indices, 1),
                             M.cast(M.logical_not(next_finished), "int64"))
        next_finished = M.logical_or(next_finished, M.equal(token_indices, M.full_like(token_indices, self.end_token)))
        output = OutputWrapper(top_scores, token_indices, beam_indices)
        state = StateWrapper(next_cell_states, top_scores, next_finished, next_lengths)
        return output, state

    def step(self, time, inputs, states, **kwargs):
        inputs = _map(self._merge, inputs)
        cell_states = _map(self._merge, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = _map(self._split, cell_outputs)
        next_cell_states = _map(self._split, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        ids = output.predicted_ids
        next_inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """The token ids of each final beam, traced back through the parents: [T, B, beam]."""
        return gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states


def _leaves(value):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):
    """Run decoder.step from decoder.initialize(inits) until all sequences
    finish or step max_step_num is done; returns (outputs, final_states[,
    lengths]), the outputs stacked batch-major unless output_time_major."""
    if max_step_num is not None and max_step_num < 0:
        raise ValueError(f"dynamic_decode: max_step_num must be non-negative, got {max_step_num}")
    inputs, states, finished = decoder.initialize(inits)
    lengths = M.cast(M.full_like(M.cast(finished, "int64"), 0), "int64")
    if any(_C.ir.is_symbolic(t) for t in _leaves([inputs, states, finished])):
        outputs, states, lengths = _decode_captured(decoder, inputs, states, finished, lengths, max_step_num,
                                                    impute_finished, kwargs)
        return _decoded(decoder, outputs, states, lengths, output_time_major, return_length)
    steps = []
    step = 0
    while not bool(M.all(finished).item()):
        out, next_states, next_inputs, next_finished, next_lengths = _step(
            decoder, step, inputs, states, finished, lengths, impute_finished, kwargs)
        steps.append(out)
        inputs, states, finished, lengths = next_inputs, next_states, next_finished, next_lengths
        step += 1
        if max_step_num is not None and step > max_step_num:
            break
    if not steps:
        raise ValueError("dynamic_decode: every sequence was finished before the first step")
    outputs = type(steps[0])(*[M.stack([s[i] for s in steps], axis=0) for i in range(len(steps[0]))]) \
        if isinstance(steps[0], tuple) else M.stack(steps, axis=0)
    return _decoded(decoder, outputs, states, lengths, output_time_major, return_length)


def _step(decoder, step, inputs, states, finished, lengths, impute_finished, kwargs):
    """One decoding step: (outputs, states, inputs, finished, lengths) after it."""
    out, next_states, next_inputs, next_finished = decoder.step(step, inputs, states, **kwargs)
    if getattr(decoder, "tracks_own_finished", False):
        next_lengths = getattr(next_states, "lengths", lengths)
    else:
        next_finished = M.logical_or(next_finished, finished)
        next_lengths = M.add(lengths, M.cast(M.logical_not(finished), "int64"))
        if impute_finished:
            next_states = _map2(lambda new, old: M.where(_expand_like(finished, new), old, new),
                                next_states, states)
    return out, next_states, next_inputs, next_finished, next_lengths


# Note [Decoding in a trace]
# Under to_static the decoding loop is a captured while (no value is read
# while tracing). The first step runs before it (eager mode raises when
# every sequence has finished before it; the trace cannot know), then the
# while runs the next steps while a sequence is unfinished and no more
# than max_step_num + 1 steps ran, as eagerly. Each step's outputs are a
# carried value of a while that saves its iterations: the stack of what
# entered each iteration holds the outputs of steps 0 .. T-2, the final
# value those of step T-1, so their concatenation is every step's
# outputs, for a T known only when the program runs.
def _decode_captured(decoder, inputs, states, finished, lengths, max_step_num, impute_finished, kwargs):
    from ..control_flow import _captured_while
    out, states, inputs, finished, lengths = _step(decoder, 0, inputs, states, finished, lengths,
                                                   impute_finished, kwargs)
    structure = [out, inputs, states]
    flat = [list(_leaves(x)) for x in structure]
    sizes = [len(f) for f in flat]
    step = full([], 1, dtype="int64")  # steps run

    def unflatten(values):
        parts, at = [], 0
        for x, n in zip(structure, sizes):
            parts.append(_rebuild(x, iter(values[at:at + n])))
            at += n
        return parts

    def cond(step, finished, lengths, *rest):
        going = M.logical_not(M.all(finished))
        if max_step_num is not None:
            going = M.logical_and(going, M.less_equal(step, M.full_like(step, max_step_num)))
        return going

    def body(step, finished, lengths, *rest):
        _, inputs, states = unflatten(list(rest))
        out, states, inputs, finished, lengths = _step(decoder, step, inputs, states, finished, lengths,
                                                       impute_finished, kwargs)
        return [M.add(step, M.full_like(step, 1)), finished, lengths] + \
            list(_leaves(out)) + list(_leaves(inputs)) + list(_leaves(states))

    init = [step, finished, lengths] + flat[0] + flat[1] + flat[2]
    result = _captured_while(cond, body, init, " (at nn.dynamic_decode)", save_iterations=True)
    n = len(init)
    final, stacks = result[:n], result[n:]
    outs = [M.concat([stacks[3 + k], M.unsqueeze(final[3 + k], [0])], axis=0) for k in range(sizes[0])]
    _, _, states = unflatten(final[3:])
    return _rebuild(out, iter(outs)), states, final[2]


def _rebuild(like, values):
    """`like` (a tensor or a nested list / tuple / dict of them) with its tensors taken from `values`."""
    if isinstance(like, Tensor):
        return next(values)
    if isinstance(like, tuple) and hasattr(like, "_fields"):
        return type(like)(*[_rebuild(v, values) for v in like])
    if isinstance(like, (list, tuple)):
        return type(like)(_rebuild(v, values) for v in like)
    if isinstance(like, dict):
        return {k: _rebuild(v, values) for k, v in like.items()}
    return like


def _decoded(decoder, outputs, states, lengths, output_time_major, return_length):
    if hasattr(decoder, "finalize"):
        outputs, states = decoder.finalize(outputs, states, lengths)
    if not output_time_major:
        outputs = _map(lambda x: M.transpose(x, [1, 0] + list(range(2, len(x.shape)))), outputs)
    return (outputs, states, lengths) if return_length else (outputs, states)


def _expand_like(mask, x):
    return M.reshape(mask, list(mask.shape) + [1] * (len(x.shape) - len(mask.shape)))


__all__ = ["BeamSearchDecoder", "dynamic_decode"]
