"""paddle.metric.Auc: the area under the ROC curve from bucketed scores."""
import numpy as np

from .metric import Metric, _numpy


class Auc(Metric):
    """Counts positives and negatives per score bucket (num_thresholds + 1
    buckets over [0, 1]) and integrates the ROC curve over the buckets with
    the trapezoid rule. preds are [N, 2] class probabilities (the second
    column scores the positive class); labels are [N] or [N, 1] of 0/1."""

    def __init__(self, curve="ROC", num_thresholds=4095, name="auc", *args, **kwargs):
        if curve != "ROC":
            raise ValueError(f"Auc: only curve='ROC' is supported, got {curve!r}")
        if not isinstance(num_thresholds, int) or num_thresholds < 1:
            raise ValueError(f"Auc: num_thresholds must be a positive int, got {num_thresholds!r}")
        self._curve, self._num_thresholds, self._name = curve, num_thresholds, name
        self.reset()

    def update(self, preds, labels):
        preds, labels = _numpy(preds), _numpy(labels).reshape(-1)
        if preds.ndim != 2 or preds.shape[1] < 2 or preds.shape[0] != labels.shape[0]:
            raise ValueError(f"Auc.update: preds must be [N, 2] and labels [N] or [N, 1], got preds of shape "
                             f"{list(preds.shape)} and {labels.shape[0]} labels")
        buckets = (preds[:, 1] * self._num_thresholds).astype(np.int64)
        if buckets.min(initial=0) < 0 or buckets.max(initial=0) > self._num_thresholds:
            raise ValueError("Auc.update: the positive-class scores preds[:, 1] must lie in [0, 1]")
        positive = labels.astype(bool)
        self._stat_pos += np.bincount(buckets[positive], minlength=self._num_thresholds + 1)
        self._stat_neg += np.bincount(buckets[~positive], minlength=self._num_thresholds + 1)

    def accumulate(self):
        # from the highest bucket down: each adds a trapezoid to the (fp, tp) curve
        tp = np.cumsum(self._stat_pos[::-1]).astype(np.float64)
        fp = np.cumsum(self._stat_neg[::-1]).astype(np.float64)
        tp_prev, fp_prev = np.concatenate([[0.0], tp[:-1]]), np.concatenate([[0.0], fp[:-1]])
        area = float(np.sum(np.abs(fp - fp_prev) * (tp + tp_prev) / 2.0))
        total_pos, total_neg = tp[-1], fp[-1]
        return area / total_pos / total_neg if total_pos > 0 and total_neg > 0 else 0.0

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1, dtype=np.int64)
        self._stat_neg = np.zeros(self._num_thresholds + 1, dtype=np.int64)

    def name(self):
        return self._name
