"""paddle.vision.ops (part): ConvNormActivation and nms."""
import numpy as np

from ..creation import to_tensor
from ..framework import Tensor
from .models._utils import ConvNormActivation


def _iou(box, others):
    """IoU of one [x1, y1, x2, y2] box with each row of others."""
    w = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = w * h
    area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
    union = area(box) + area(others) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def _greedy(boxes, iou_threshold):
    """Indices kept by greedy suppression in the given order."""
    suppressed = np.zeros(len(boxes), bool)
    keep = []
    for i in range(len(boxes)):
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed[i + 1:] |= _iou(boxes[i], boxes[i + 1:]) > iou_threshold
    return np.array(keep, dtype=np.int64)


def _array(x, what):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x) if x is not None else None


def nms(boxes, iou_threshold=0.3, scores=None, category_idxs=None, categories=None, top_k=None):
    """Non-maximum suppression over boxes [N, 4] (x1, y1, x2, y2): int64
    indices of the kept boxes. Without scores the boxes are taken in order;
    with scores, by descending score; with category_idxs, per category."""
    b = _array(boxes, "boxes").astype(np.float64)
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"nms: boxes must have shape [N, 4], got {list(b.shape)}")
    if scores is None:
        return to_tensor(_greedy(b, iou_threshold))
    s = _array(scores, "scores").astype(np.float64)
    if s.shape != (len(b),):
        raise ValueError(f"nms: scores must have shape [{len(b)}], got {list(s.shape)}")
    order = np.argsort(-s, kind="stable")
    if category_idxs is None:
        return to_tensor(order[_greedy(b[order], iou_threshold)])
    if categories is None:
        raise ValueError("nms: categories (the list of category ids) is needed with category_idxs")
    if top_k is not None and top_k > len(b):
        raise ValueError(f"nms: top_k {top_k} exceeds the number of boxes {len(b)}")
    c = _array(category_idxs, "category_idxs")
    kept = []
    for cat in categories:
        idx = np.nonzero(c == cat)[0]
        if len(idx):
            sub = idx[np.argsort(-s[idx], kind="stable")]
            kept.append(sub[_greedy(b[sub], iou_threshold)])
    kept = np.concatenate(kept) if kept else np.zeros([0], np.int64)
    kept = kept[np.argsort(-s[kept], kind="stable")]
    return to_tensor(kept if top_k is None else kept[:top_k])


__all__ = ["ConvNormActivation", "nms"]
