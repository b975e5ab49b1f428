"""oar.metric (paddle.metric): Metric, Accuracy, Precision, Recall, accuracy().

compute() runs on tensors (in the step), update() and accumulate() on numpy,
as in Paddle."""
import numpy as np

from .creation import to_tensor
from .framework import Tensor


def _numpy(v):
    return v.numpy() if isinstance(v, Tensor) else np.asarray(v)


class Metric:
    """Base class: reset(), update(*args), accumulate(), name(); compute(*args)
    maps (outputs..., labels...) to update's arguments (identity by default)."""

    def reset(self):
        raise NotImplementedError(f"{type(self).__name__}.reset is not implemented")

    def update(self, *args):
        raise NotImplementedError(f"{type(self).__name__}.update is not implemented")

    def accumulate(self):
        raise NotImplementedError(f"{type(self).__name__}.accumulate is not implemented")

    def name(self):
        raise NotImplementedError(f"{type(self).__name__}.name is not implemented")

    def compute(self, *args):
        return args


def _labels_column(label, pred_shape):
    """Class ids as [N, 1]: from [N], [N, 1] or one-hot [N, C]."""
    label = _numpy(label)
    if label.ndim == 1 or (label.ndim == 2 and label.shape[-1] == 1):
        return label.reshape(-1, 1)
    return label.argmax(-1).reshape(-1, 1)


class Accuracy(Metric):
    """Top-k accuracy; name 'acc' (or 'acc_top1', 'acc_top5', ... for several k).
    accumulate() is the accuracy over every sample since reset()."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        self.topk = tuple(topk)
        self.maxk = max(self.topk)
        name = name or "acc"
        self._name = [name] if self.maxk == 1 else [f"{name}_top{k}" for k in self.topk]
        self.reset()

    def compute(self, pred, label, *args):
        """float32 [N, maxk]: 1 where the k-th ranked class is the label."""
        p = _numpy(pred)
        p = p.reshape(-1, p.shape[-1])
        top = np.argsort(-p, axis=-1, kind="stable")[:, : self.maxk]
        return to_tensor((top == _labels_column(label, p.shape)).astype(np.float32))

    def update(self, correct, *args):
        correct = _numpy(correct)
        num_samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            num_correct = float(correct[..., :k].sum())
            accs.append(num_correct / num_samples if num_samples else 0.0)
            self.total[i] += num_correct
            self.count[i] += num_samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [t / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def name(self):
        return self._name


class _BinaryCounts(Metric):
    """preds are probabilities of the positive class (> 0.5 is positive); labels 0/1."""

    def __init__(self, name):
        self._name = name
        self.reset()

    def update(self, preds, labels):
        p = _numpy(preds).reshape(-1) > 0.5
        y = _numpy(labels).reshape(-1).astype(bool)
        self.tp += int(np.sum(p & y))
        self.fp += int(np.sum(p & ~y))
        self.fn += int(np.sum(~p & y))

    def reset(self):
        self.tp = self.fp = self.fn = 0

    def name(self):
        return self._name


class Precision(_BinaryCounts):
    def __init__(self, name="precision", *args, **kwargs):
        super().__init__(name)

    def accumulate(self):
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0


class Recall(_BinaryCounts):
    def __init__(self, name="recall", *args, **kwargs):
        super().__init__(name)

    def accumulate(self):
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


def accuracy(input, label, k=1, correct=None, total=None, name=None):  # noqa: A002 - paddle's name
    """Top-k accuracy of input [N, C] against label [N, 1] (or [N]) as a float32 scalar tensor."""
    c = Accuracy(topk=(k,)).compute(input, label).numpy()
    return to_tensor(np.float32(c.sum() / max(c.shape[0], 1)))


__all__ = ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]


from .metric_auc import Auc  # noqa: E402,F401
