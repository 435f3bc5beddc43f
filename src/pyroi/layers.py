"""Layer objects: the operators with their parameters bound, and a training mode that keeps
what the backward needs."""

from __future__ import annotations

import numpy as np

from pyroi import _core, _validate
from pyroi._errors import InvalidArgumentError, PyroiError, ShapeError
from pyroi.ops import roi_align, roi_align_backward

__all__ = ["MultiScaleRoIAlign"]


class MultiScaleRoIAlign:
    """RoIAlign over a feature pyramid, exactly as ``torchvision.ops.MultiScaleRoIAlign``.

    Each box is pooled from one pyramid level chosen by its size (FPN paper, eqn. 1):
    ``floor(canonical_level + log2(sqrt(area) / canonical_scale) + 1e-6)``, clamped to the
    levels present. The level assignment runs in the C core.

    Parameters
    ----------
    featmap_names : sequence of str
        Keys of the feature dict to pool from. Levels are taken in the dict's order (as
        torchvision does), not in this list's order, and must go from fine to coarse.
    output_size : int or (int, int)
        Output bins ``(ph, pw)``.
    sampling_ratio : int
        Samples per bin and axis; ``<= 0`` is adaptive.
    canonical_scale : int, default 224
        Box side that maps to ``canonical_level``.
    canonical_level : int, default 4
        Level of a ``canonical_scale`` box.

    Notes
    -----
    As in torchvision, the scale of each level (``2 ** round(log2(H_level / max_image_h))``,
    height only) is inferred on the first call and reused by later calls; RoIAlign runs with
    ``aligned=False``. A box with negative area (inverted) belongs to no level and its output
    row stays zero. With ``training = True`` (the default) a call keeps the boxes and levels
    so that :meth:`backward` can return each level's input gradient.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pooler = pyroi.MultiScaleRoIAlign(["p2", "p3"], output_size=2, sampling_ratio=2)
    >>> features = {"p2": np.ones((1, 3, 64, 64), np.float32),
    ...             "p3": np.ones((1, 3, 32, 32), np.float32)}
    >>> boxes = [np.array([[0, 0, 40, 40], [0, 0, 250, 250]], np.float32)]
    >>> pooler(features, boxes, [(256, 256)]).shape
    (2, 3, 2, 2)
    """

    def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                 canonical_level=4):
        if isinstance(featmap_names, str) or not all(isinstance(n, str) for n in featmap_names):
            raise _validate.ArgumentTypeError(
                f"featmap_names must be a sequence of str, got {featmap_names!r}")
        self.featmap_names = list(featmap_names)
        self.output_size = _validate.output_size(output_size)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.canonical_scale = _validate.positive_int(canonical_scale, "canonical_scale")
        self.canonical_level = _validate.positive_int(canonical_level, "canonical_level")
        self.scales: list[float] | None = None
        self.min_level: int | None = None
        self.max_level: int | None = None
        self.training = True
        self._saved = None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(featmap_names={self.featmap_names}, "
                f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})")

    def _selected_features(self, x) -> list[tuple[str, np.ndarray]]:
        if not isinstance(x, dict):
            raise _validate.ArgumentTypeError(
                f"features must be a dict of name -> (N, C, H, W) array, got {type(x).__name__}")
        selected = [(name, _validate.float_array(value, f"features[{name!r}]", 4))
                    for name, value in x.items() if name in self.featmap_names]
        if not selected:
            raise InvalidArgumentError(
                f"features has none of featmap_names {self.featmap_names}; keys: {list(x)}")
        dtype = selected[0][1].dtype
        for name, value in selected[1:]:
            if value.dtype != dtype:
                raise _validate.DTypeError(
                    f"features[{name!r}] has dtype {value.dtype}, the first level {dtype}")
        return selected

    def _infer_scales(self, features, image_shapes) -> None:
        """torchvision's scale inference: per level 2 ** round(log2(H_l / max image height))
        in float32, the levels' range from the first and last scale."""
        max_height = max(int(h) for h, _ in image_shapes)
        scales = []
        for _, feature in features:
            approx = np.float32(float(feature.shape[2]) / float(max_height))
            scales.append(float(2.0 ** float(np.round(np.log2(approx)))))
        self.scales = scales
        self.min_level = int(-np.log2(np.float32(scales[0])))
        self.max_level = int(-np.log2(np.float32(scales[-1])))

    def __call__(self, x, boxes, image_shapes, *, num_threads=None):
        """Pool every box from its level.

        Parameters
        ----------
        x : dict of str -> ndarray (N, C, H_l, W_l)
            The pyramid; entries whose key is not in ``featmap_names`` are ignored.
        boxes : list of ndarray (L_i, 4)
            ``[x1, y1, x2, y2]`` per image in input-image pixels, the features' dtype.
        image_shapes : list of (int, int)
            ``(height, width)`` of each input image (used on the first call only).
        num_threads : int, optional
            Threads for this call.

        Returns
        -------
        ndarray (sum L_i, C, ph, pw)
        """
        features = self._selected_features(x)
        if not isinstance(boxes, (list, tuple)):
            raise _validate.ArgumentTypeError(
                "boxes must be a list of (L_i, 4) arrays, one per image")
        if self.scales is None:
            if not image_shapes:
                raise InvalidArgumentError("image_shapes must not be empty")
            self._infer_scales(features, image_shapes)
        if len(self.scales) != len(features):
            raise ShapeError(
                f"the first call had {len(self.scales)} levels, this one {len(features)}")
        first = features[0][1]
        coords, images = _validate.boxes(list(boxes), first.dtype, first.shape[0])
        levels = np.empty(coords.shape[0], dtype=np.int64)
        _core.fpn_levels(coords, levels, self.min_level, self.max_level,
                         float(self.canonical_scale), float(self.canonical_level), 1e-6)
        ph, pw = self.output_size
        result = np.zeros((coords.shape[0], first.shape[1], ph, pw), dtype=first.dtype)
        per_level = []
        for index, ((name, feature), scale) in enumerate(zip(features, self.scales)):
            rows = np.flatnonzero(levels == index) if len(features) > 1 else np.arange(
                coords.shape[0])
            per_level.append(rows)
            if rows.size:
                result[rows] = roi_align(feature, coords[rows], (ph, pw), scale,
                                         self.sampling_ratio, False,
                                         batch_indices=images[rows], num_threads=num_threads)
        self._saved = None
        if self.training:
            self._saved = ([(name, f.shape) for name, f in features], coords, images, per_level,
                           first.dtype)
        return result

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """Input gradients of the last call: a dict name -> gradient of that level.

        Parameters
        ----------
        grad_output : ndarray (K, C, ph, pw)
            Gradient of the loss with respect to the last call's output.
        lda_coeff : float, default 1.0
            Factor applied to every gradient (a loss-derivative coefficient).
        """
        if self._saved is None:
            raise PyroiError(
                "backward needs a preceding call in training mode (layer.training = True)")
        shapes, coords, images, per_level, dtype = self._saved
        grad = _validate.float_array(grad_output, "grad_output", 4)
        ph, pw = self.output_size
        expected = (coords.shape[0], shapes[0][1][1], ph, pw)
        if grad.shape != expected or grad.dtype != dtype:
            raise ShapeError(f"grad_output must have shape {expected} and dtype {dtype}, got "
                             f"{grad.shape} {grad.dtype}")
        coeff = _validate.real_number(lda_coeff, "lda_coeff")
        gradients = {}
        for (name, shape), rows, scale in zip(shapes, per_level, self.scales):
            gradients[name] = roi_align_backward(
                grad[rows], coords[rows], shape, scale, self.sampling_ratio, False,
                batch_indices=images[rows], num_threads=num_threads)
            if coeff != 1.0:
                gradients[name] *= gradients[name].dtype.type(coeff)
        return gradients
