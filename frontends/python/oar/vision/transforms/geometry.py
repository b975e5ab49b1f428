"""affine, rotate and perspective warps (paddle.vision.transforms.functional).

Note [Warp sampling]: every input kind (numpy, tensor, PIL) is warped the way
Paddle warps tensors: each output pixel centre is mapped back into the input
and sampled like grid_sample(align_corners=False, padding_mode='zeros');
'nearest' rounds half to even and gives `fill` outside; 'bilinear' blends the
in-range neighbours (weights summing to m) as m * sample + (1 - m) * fill.
(Paddle's cv2 and PIL backends follow their libraries and can differ by a pixel.)"""
import math
import numbers

import numpy as np

from .functional import _check_image, _hw, _on_hwc


def _sample(a, ix, iy, interpolation, fill):
    """a [H, W, C] sampled at float index coordinates ix, iy [oh, ow]."""
    h, w, c = a.shape
    src = a.astype(np.float64)
    fill = np.broadcast_to(np.asarray(fill, dtype=np.float64).reshape(-1), (c,))
    if interpolation == "nearest":
        x, y = np.rint(ix).astype(np.int64), np.rint(iy).astype(np.int64)
        inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
        out = src[np.clip(y, 0, h - 1), np.clip(x, 0, w - 1)]
        out = np.where(inside[..., None], out, fill)
    elif interpolation == "bilinear":
        x0, y0 = np.floor(ix).astype(np.int64), np.floor(iy).astype(np.int64)
        out = np.zeros(ix.shape + (c,))
        coverage = np.zeros(ix.shape)
        for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
            x, y = x0 + dx, y0 + dy
            weight = (1 - np.abs(ix - x)) * (1 - np.abs(iy - y))
            weight = weight * ((x >= 0) & (x < w) & (y >= 0) & (y < h))
            out += weight[..., None] * src[np.clip(y, 0, h - 1), np.clip(x, 0, w - 1)]
            coverage += weight
        # Paddle's fill rule: the coverage-weighted sample is weighted by the coverage once more.
        out = out * coverage[..., None] + (1 - coverage)[..., None] * fill
    else:
        raise ValueError(f"warp: interpolation must be 'nearest' or 'bilinear', got '{interpolation}'")
    if np.issubdtype(a.dtype, np.integer):
        info = np.iinfo(a.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(a.dtype)
    return out.astype(a.dtype)


def _affine_warp(img, matrix, out_hw, interpolation, fill):
    """matrix (2x3, row-major) maps output coordinates to input ones, both
    centred on their image (pixel centres at +0.5). The grid is computed in
    float32 in Paddle's order of operations, so ties round the same way."""
    f32 = np.float32

    def run(a):
        h, w = a.shape[:2]
        oh, ow = out_hw or (h, w)
        m = np.asarray(matrix, dtype=f32).reshape(2, 3)
        scaled = (m.T / np.array([0.5 * w, 0.5 * h], dtype=f32)).astype(f32)  # [3, 2]
        gx, gy = np.meshgrid(np.arange(ow, dtype=f32) + f32(0.5 - ow * 0.5),
                             np.arange(oh, dtype=f32) + f32(0.5 - oh * 0.5))
        nx = gx * scaled[0, 0] + gy * scaled[1, 0] + scaled[2, 0]
        ny = gx * scaled[0, 1] + gy * scaled[1, 1] + scaled[2, 1]
        ix = ((nx + f32(1)) * f32(w) - f32(1)) / f32(2)
        iy = ((ny + f32(1)) * f32(h) - f32(1)) / f32(2)
        return _sample(a, ix.astype(np.float64), iy.astype(np.float64), interpolation, fill)
    return _on_hwc(run, img)


def _get_affine_matrix(center, angle, translate, scale, shear):
    """Inverse of T * C * RotateScaleShear * C^-1, as 6 numbers."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    (cx, cy), (tx, ty) = center, translate
    m = [v / scale for v in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def _centred(center, img):
    if center is None:
        return [0.0, 0.0]
    h, w = _hw(img)
    return [float(center[0]) - w * 0.5, float(center[1]) - h * 0.5]


def affine(img, angle, translate, scale, shear, interpolation="nearest", fill=0, center=None):
    """Rotation by angle degrees (counter-clockwise), translation (pixels),
    scale and shear (degrees; a number or (x, y)) about center (default the image centre)."""
    _check_image(img, "affine")
    if not isinstance(angle, numbers.Number):
        raise TypeError(f"affine: angle must be a number, got {type(angle).__name__}")
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise ValueError(f"affine: translate must be a pair (tx, ty), got {translate!r}")
    if scale <= 0:
        raise ValueError(f"affine: scale must be positive, got {scale}")
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    shear = shear * 2 if len(shear) == 1 else shear
    if len(shear) != 2:
        raise ValueError(f"affine: shear must be a number or a pair, got {shear!r}")
    matrix = _get_affine_matrix(_centred(center, img), angle, [float(t) for t in translate], scale, shear)
    return _affine_warp(img, matrix, None, interpolation, fill)


def rotate(img, angle, interpolation="nearest", expand=False, center=None, fill=0):
    """Rotation by angle degrees counter-clockwise about center; expand grows
    the output to hold the whole rotated image."""
    _check_image(img, "rotate")
    h, w = _hw(img)
    rad = math.radians(-angle % 360)
    cx, cy = _centred(center, img)
    m = [math.cos(rad), math.sin(rad), 0.0, -math.sin(rad), math.cos(rad), 0.0]
    m[2] += m[0] * -cx + m[1] * -cy + cx
    m[5] += m[3] * -cx + m[4] * -cy + cy
    out_hw = None
    if expand:
        corners = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                            [0.5 * w, -0.5 * h, 1.0]], dtype=np.float32)
        pos = corners @ np.asarray(m, dtype=np.float32).reshape(2, 3).T  # float32, as Paddle
        size = np.ceil(pos.max(0)) - np.floor(pos.min(0))
        out_hw = (int(size[1]), int(size[0]))
    return _affine_warp(img, m, out_hw, interpolation, fill)


def _get_perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients mapping endpoints back to startpoints (least squares)."""
    a = np.zeros((2 * len(startpoints), 8))
    for i, ((ex, ey), (sx, sy)) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey]
        a[2 * i + 1] = [0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey]
    return list(np.linalg.lstsq(a, np.asarray(startpoints, dtype=np.float64).reshape(8), rcond=None)[0])


def perspective(img, startpoints, endpoints, interpolation="nearest", fill=0):
    """The projective warp that moves the 4 startpoints (corners, [x, y]) to endpoints."""
    _check_image(img, "perspective")
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError("perspective: startpoints and endpoints must each hold 4 [x, y] points")
    a, b, c, d, e, f, g, k = _get_perspective_coeffs(startpoints, endpoints)

    def run(arr):
        h, w = arr.shape[:2]
        gx, gy = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
        den = g * gx + k * gy + 1.0
        return _sample(arr, (a * gx + b * gy + c) / den - 0.5, (d * gx + e * gy + f) / den - 0.5, interpolation, fill)
    return _on_hwc(run, img)
