"""oar.Model (paddle.Model, the high-level API): prepare, fit, evaluate,
predict, train_batch/eval_batch/predict_batch, save/load, summary.

A batch from the loader is a list; its first n entries are the network's
inputs and the rest the labels, n being len(inputs) when given, else the
number of positional parameters of network.forward (as Paddle does in
dynamic mode)."""
import inspect
import os

import numpy as np

from . import callbacks as cbks_module
from .autograd import no_grad
from .framework import Tensor
from .io import DataLoader, Dataset
from .metric import Metric
from .serialization import load, save


def _to_list(v):
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _numpy(v):
    return v.numpy() if isinstance(v, Tensor) else np.asarray(v)


def _forward_arity(network):
    params = inspect.signature(network.forward).parameters.values()
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and
               p.default is p.empty) or 1


class Model:
    def __init__(self, network, inputs=None, labels=None):
        self.network = network
        self._inputs, self._labels = _to_list(inputs), _to_list(labels)
        self._n_inputs = len(self._inputs) or _forward_arity(network)
        self._optimizer, self._loss, self._metrics = None, None, []
        self.stop_training = False

    # ---- setup ----
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None):
        if loss is not None and not callable(loss):
            raise TypeError(f"prepare: loss must be a Layer or a callable, got {type(loss).__name__}")
        metrics = _to_list(metrics)
        for m in metrics:
            if not isinstance(m, Metric):
                raise TypeError(f"prepare: every metric must be an oar.metric.Metric, got {type(m).__name__}")
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics

    def parameters(self, *args, **kwargs):
        return self.network.parameters(*args, **kwargs)

    def _metrics_name(self):
        names = ["loss"] if self._loss is not None else []
        for m in self._metrics:
            names.extend(_to_list(m.name()))
        return names

    # ---- one batch ----
    def _losses(self, outputs, labels):
        losses = _to_list(self._loss(*(_to_list(outputs) + _to_list(labels))))
        total = losses[0]
        for extra in losses[1:]:
            total = total + extra
        return losses, total

    def _update_metrics(self, outputs, labels):
        return [m.update(*[_numpy(v) for v in _to_list(m.compute(*(_to_list(outputs) + _to_list(labels))))])
                for m in self._metrics]

    def train_batch(self, inputs, labels=None, update=True):
        """One step; returns [loss] (numpy), or ([loss], metrics) with metrics."""
        if self._optimizer is None or self._loss is None:
            raise RuntimeError("train_batch: call prepare(optimizer, loss) first")
        self.network.train()
        outputs = self.network(*_to_list(inputs))
        losses, total = self._losses(outputs, labels)
        total.backward()
        if update:
            self._optimizer.step()
            self._optimizer.clear_grad()
        losses = [_numpy(v) for v in losses]
        if not self._metrics:
            return losses
        with no_grad():
            return losses, self._update_metrics(outputs, labels)

    @no_grad()
    def eval_batch(self, inputs, labels=None):
        self.network.eval()
        outputs = self.network(*_to_list(inputs))
        losses = [_numpy(v) for v in self._losses(outputs, labels)[0]] if self._loss is not None else []
        if not self._metrics:
            return losses
        return losses, self._update_metrics(outputs, labels)

    @no_grad()
    def predict_batch(self, inputs):
        self.network.eval()
        return [_numpy(v) for v in _to_list(self.network(*_to_list(inputs)))]

    # ---- loops ----
    def _loader(self, data, batch_size, shuffle, drop_last):
        if data is None or isinstance(data, DataLoader):
            return data
        if isinstance(data, Dataset):
            return DataLoader(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last)
        raise TypeError(f"expected an oar.io.Dataset or DataLoader, got {type(data).__name__}")

    def _callbacks(self, callbacks, epochs, steps, log_freq, verbose, save_freq=1, save_dir=None):
        cbs = _to_list(callbacks)
        if not any(isinstance(c, cbks_module.ProgBarLogger) for c in cbs):
            cbs.insert(0, cbks_module.ProgBarLogger(log_freq, verbose))
        if not any(isinstance(c, cbks_module.LRScheduler) for c in cbs):
            cbs.append(cbks_module.LRScheduler())
        if save_dir and not any(isinstance(c, cbks_module.ModelCheckpoint) for c in cbs):
            cbs.append(cbks_module.ModelCheckpoint(save_freq, save_dir))
        for c in cbs:
            c.set_model(self)
            c.set_params({"epochs": epochs, "steps": steps, "verbose": verbose, "metrics": self._metrics_name()})
        return cbks_module.CallbackList(cbs)

    def _run_one_epoch(self, loader, cbks, mode, num_iters=None, accumulate=1):
        for m in self._metrics:
            m.reset()
        logs, outputs, samples = {}, [], 0
        for step, data in enumerate(loader):
            if num_iters is not None and step >= num_iters:
                break
            data = _to_list(data)
            inputs, labels = data[: self._n_inputs], data[self._n_inputs:]
            getattr(cbks, f"on_{mode}_batch_begin")(step, logs)
            if mode == "predict":
                outputs.append(self.predict_batch(inputs))
            else:
                if mode == "train":
                    outs = self.train_batch(inputs, labels, update=(step + 1) % accumulate == 0)
                else:
                    outs = self.eval_batch(inputs, labels)
                losses = outs[0] if self._metrics else outs
                values = [[float(np.asarray(v).reshape(-1)[0]) for v in losses]] if self._loss is not None else []
                for m in self._metrics:
                    values.extend(_to_list(m.accumulate()))
                logs.update(zip(self._metrics_name(), values))
            batch = data[0].shape[0] if data and isinstance(data[0], Tensor) and data[0].shape else 1
            samples += batch
            logs.update(step=step, batch_size=batch)
            getattr(cbks, f"on_{mode}_batch_end")(step, logs)
        logs["samples"] = samples
        return (logs, outputs) if mode == "predict" else logs

    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs=1, eval_freq=1, log_freq=10, save_dir=None,
            save_freq=1, verbose=2, drop_last=False, shuffle=True, num_workers=0, callbacks=None,
            accumulate_grad_batches=1, num_iters=None):
        """Trains for `epochs` over train_data (a Dataset, batched here, or a
        DataLoader); evaluates on eval_data every eval_freq epochs. verbose=1
        shows a progress bar, 2 one line per log_freq steps, 0 nothing."""
        if train_data is None:
            raise ValueError("fit: train_data is required")
        train_loader = self._loader(train_data, batch_size, shuffle, drop_last)
        eval_loader = self._loader(eval_data, batch_size, False, False)
        steps = len(train_loader) if num_iters is None else min(len(train_loader), num_iters)
        cbks = self._callbacks(callbacks, epochs, steps, log_freq, verbose, save_freq, save_dir)
        self.stop_training = False
        cbks.on_train_begin({})
        logs = {}
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch, {})
            logs = self._run_one_epoch(train_loader, cbks, "train", num_iters, accumulate_grad_batches)
            cbks.on_epoch_end(epoch, logs)
            if eval_loader is not None and epoch % eval_freq == 0:
                cbks.on_eval_begin({"steps": len(eval_loader), "metrics": self._metrics_name()})
                eval_logs = self._run_one_epoch(eval_loader, cbks, "eval")
                cbks.on_eval_end(eval_logs)
            if self.stop_training:
                break
        cbks.on_train_end(logs)

    def evaluate(self, eval_data, batch_size=1, log_freq=10, verbose=2, num_workers=0, callbacks=None,
                 num_iters=None):
        """{'loss': [loss of the last batch], <metric>: value over the whole set} (Paddle's result)."""
        loader = self._loader(eval_data, batch_size, False, False)
        steps = len(loader) if num_iters is None else min(len(loader), num_iters)
        cbks = self._callbacks(callbacks, 1, steps, log_freq, verbose)
        cbks.on_eval_begin({"steps": steps, "metrics": self._metrics_name()})
        logs = self._run_one_epoch(loader, cbks, "eval", num_iters)
        cbks.on_eval_end(logs)
        result = {}
        for k in self._metrics_name():
            if k in logs:
                result[k] = logs[k]
        return result

    def predict(self, test_data, batch_size=1, num_workers=0, stack_outputs=False, verbose=1, callbacks=None):
        """One tuple per network output of numpy arrays, one per batch (or one
        array stacked along the first axis with stack_outputs=True)."""
        loader = self._loader(test_data, batch_size, False, False)
        cbks = self._callbacks(callbacks, 1, len(loader), 10, verbose)
        cbks.on_predict_begin({"steps": len(loader)})
        logs, outputs = self._run_one_epoch(loader, cbks, "predict")
        cbks.on_predict_end(logs)
        per_output = list(zip(*outputs))
        if stack_outputs:
            per_output = [np.concatenate(o, axis=0) for o in per_output]
        return per_output

    # ---- persistence ----
    def save(self, path, training=True):
        """training=True: path.pdparams (the network's state dict) and
        path.pdopt (the optimizer's), both safetensors files.
        training=False: the inference program, traced in eval mode from the
        `inputs` specs given to Model, as path.json + path.safetensors
        (oar.jit.save; load with oar.jit.load or run with oar-run)."""
        if not training:
            if not self._inputs:
                raise ValueError("Model.save(training=False) traces the network from its input specs; create the "
                                 "Model with inputs=[oar.static.InputSpec([None, ...], 'float32')]")
            from . import jit
            was_training = self.network.training
            self.network.eval()
            try:
                jit.save(self.network, path, input_spec=self._inputs)
            finally:
                if was_training:
                    self.network.train()
            return
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        save(self.network.state_dict(), path + ".pdparams")
        if self._optimizer is not None:
            save(self._optimizer.state_dict(), path + ".pdopt")

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        path = path[: -len(".pdparams")] if path.endswith(".pdparams") else path
        state = load(path + ".pdparams")
        if skip_mismatch:
            own = self.network.state_dict()
            state = {k: v for k, v in state.items() if k in own and list(own[k].shape) == list(v.shape)}
        self.network.set_state_dict(state)
        if not reset_optimizer and self._optimizer is not None and os.path.exists(path + ".pdopt"):
            self._optimizer.set_state_dict(load(path + ".pdopt"))

    def summary(self, input_size=None, dtype=None):
        """paddle.summary of the network; without input_size, the shapes and
        dtypes of the Model's input specs."""
        from .summary import summary
        if input_size is None and self._inputs:
            input_size = [tuple(spec.shape) for spec in self._inputs]
            dtype = dtype or [spec.dtype for spec in self._inputs]
            if len(input_size) == 1:
                input_size, dtype = input_size[0], dtype[0] if isinstance(dtype, list) else dtype
        return summary(self.network, input_size, dtype)


__all__ = ["Model"]
