"""oar.callbacks (paddle.callbacks): hooks into Model.fit/evaluate/predict and
the text progress bar."""
import numbers
import os
import sys
import time

import numpy as np


class Callback:
    """Every hook is optional; `self.model` and `self.params` are set by the Model."""

    def __init__(self):
        self.model, self.params = None, {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_eval_begin(self, logs=None): pass
    def on_eval_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, step, logs=None): pass
    def on_train_batch_end(self, step, logs=None): pass
    def on_eval_batch_begin(self, step, logs=None): pass
    def on_eval_batch_end(self, step, logs=None): pass
    def on_predict_batch_begin(self, step, logs=None): pass
    def on_predict_batch_end(self, step, logs=None): pass


class CallbackList:
    def __init__(self, callbacks):
        self.callbacks = list(callbacks)

    def __getattr__(self, hook):
        def call(*args):
            for c in self.callbacks:
                getattr(c, hook)(*args)
        return call


class ProgressBar:
    """`step  3/50 [===>.......] - loss: 0.1234 - acc: 0.9000 - 12ms/step`.
    verbose=1 draws the bar, rewritten in place on a terminal (one line per
    update otherwise); verbose=2 prints the line without the bar."""

    def __init__(self, num=None, width=30, verbose=1, file=None):
        self._num, self._width, self._verbose = num, width, verbose
        self._file = file or sys.stdout
        self._dynamic = getattr(self._file, "isatty", lambda: False)()
        self._start = time.perf_counter()
        self._last_width = 0

    @staticmethod
    def _format(values):
        info = ""
        for k, val in values:
            info += f" - {k}:"
            for v in (val if isinstance(val, (list, tuple)) else [val]):
                if isinstance(v, np.ndarray):
                    v = v.reshape(-1)[0] if v.size == 1 else v
                if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)):
                    info += f" {float(v):.4f}" if abs(v) > 1e-3 else f" {float(v):.4e}"
                else:
                    info += f" {v}"
        return info

    def update(self, current, values=()):
        elapsed = time.perf_counter() - self._start
        per_step = elapsed / max(current, 1)
        timing = f" - {per_step * 1e3:.0f}ms/step" if per_step >= 1e-3 else f" - {per_step * 1e6:.0f}us/step"
        if self._num:
            digits = len(str(self._num))
            line = f"step {current:{digits}d}/{self._num}"
        else:
            line = f"step {current}"
        if self._verbose == 1 and self._num:
            done = int(self._width * min(current, self._num) / self._num)
            bar = "=" * max(done - 1, 0) + ((">" if current < self._num else "=") if done > 0 else "")
            line += " [" + bar + "." * (self._width - done) + "]"
        line += self._format(values) + timing
        if self._dynamic and self._verbose == 1:
            pad = max(self._last_width - len(line), 0)
            self._file.write("\r" + line + " " * pad)
            if self._num and current >= self._num:
                self._file.write("\n")
            self._last_width = len(line)
        else:
            self._file.write(line + "\n")
        self._file.flush()


class ProgBarLogger(Callback):
    """Prints "Epoch e/E" and a progress bar every log_freq steps and at the end
    of an epoch with the loss and the metrics (verbose 0: silent)."""

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        self.log_freq, self.verbose = log_freq, verbose

    def _names(self):
        return self.params.get("metrics", [])

    def _values(self, logs):
        return [(k, logs[k]) for k in self._names() if k in logs]

    def on_train_begin(self, logs=None):
        if self.verbose:
            print("The loss value printed in the log is the current step, and the metric is the average value of "
                  "previous steps.")

    def on_epoch_begin(self, epoch, logs=None):
        self.steps = self.params.get("steps")
        self.epoch = epoch
        self.train_step = 0
        if self.verbose and self.params.get("epochs", 1) > 0:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}")
        self.train_bar = ProgressBar(self.steps, verbose=self.verbose)

    def on_train_batch_end(self, step, logs=None):
        self.train_step += 1
        if self.verbose and (self.train_step % self.log_freq == 0 or self.train_step == self.steps):
            self.train_bar.update(self.train_step, self._values(logs or {}))

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose and self.train_step % self.log_freq != 0 and self.train_step != self.steps:
            self.train_bar.update(self.train_step, self._values(logs or {}))

    def on_eval_begin(self, logs=None):
        self.eval_steps, self.eval_step = (logs or {}).get("steps"), 0
        self.eval_bar = ProgressBar(self.eval_steps, verbose=self.verbose)
        if self.verbose:
            print("Eval begin...")

    def on_eval_batch_end(self, step, logs=None):
        self.eval_step += 1
        if self.verbose and (self.eval_step % self.log_freq == 0 or self.eval_step == self.eval_steps):
            self.eval_bar.update(self.eval_step, self._values(logs or {}))

    def on_eval_end(self, logs=None):
        if self.verbose:
            if self.eval_step % self.log_freq != 0 and self.eval_step != self.eval_steps:
                self.eval_bar.update(self.eval_step, self._values(logs or {}))
            print(f"Eval samples: {(logs or {}).get('samples', 0)}")

    def on_predict_begin(self, logs=None):
        self.predict_steps, self.predict_step = (logs or {}).get("steps"), 0
        self.predict_bar = ProgressBar(self.predict_steps, verbose=self.verbose)
        if self.verbose:
            print("Predict begin...")

    def on_predict_batch_end(self, step, logs=None):
        self.predict_step += 1
        if self.verbose and (self.predict_step % self.log_freq == 0 or self.predict_step == self.predict_steps):
            self.predict_bar.update(self.predict_step)

    def on_predict_end(self, logs=None):
        if self.verbose:
            print(f"Predict samples: {(logs or {}).get('samples', 0)}")


class LRScheduler(Callback):
    """Steps the optimizer's LRScheduler after every batch (by_step) or epoch."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step == by_epoch:
            raise ValueError("LRScheduler: exactly one of by_step and by_epoch must be True")
        self.by_step, self.by_epoch = by_step, by_epoch

    def _step(self):
        from .optimizer.lr import LRScheduler as Scheduler
        opt = getattr(self.model, "_optimizer", None)
        if opt is not None and isinstance(opt._learning_rate, Scheduler):
            opt._learning_rate.step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            self._step()

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch:
            self._step()


class ModelCheckpoint(Callback):
    """Saves the model to save_dir/<epoch> every save_freq epochs and to save_dir/final."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        self.save_freq, self.save_dir = save_freq, save_dir

    def on_epoch_end(self, epoch, logs=None):
        if self.save_dir and (epoch + 1) % self.save_freq == 0:
            self.model.save(os.path.join(self.save_dir, str(epoch)))

    def on_train_end(self, logs=None):
        if self.save_dir:
            self.model.save(os.path.join(self.save_dir, "final"))


class EarlyStopping(Callback):
    """Stops fit when the monitored eval value has not improved by min_delta for
    `patience` evaluations."""

    def __init__(self, monitor="loss", mode="auto", patience=0, verbose=1, min_delta=0, baseline=None,
                 save_best_model=True):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.min_delta, self.baseline = abs(min_delta), baseline
        if mode == "auto":
            mode = "max" if "acc" in monitor else "min"
        self.better = (lambda a, b: a > b + self.min_delta) if mode == "max" else (lambda a, b: a < b - self.min_delta)
        self.best = baseline
        self.wait = 0

    def on_eval_end(self, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            return
        value = float(np.asarray(value).reshape(-1)[0])
        if self.best is None or self.better(value, self.best):
            self.best, self.wait = value, 0
            return
        self.wait += 1
        if self.wait > self.patience:
            self.model.stop_training = True
            if self.verbose:
                print(f"EarlyStopping: '{self.monitor}' did not improve for {self.wait} evaluations; stopping")


__all__ = ["Callback", "ProgBarLogger", "LRScheduler", "ModelCheckpoint", "EarlyStopping", "ProgressBar"]
