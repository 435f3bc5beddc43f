"""Layer objects: the operators with their parameters bound, and a training mode that keeps
what the backward needs."""

# May import: _core, _errors, _validate, _half, ops.

from __future__ import annotations

import numpy as np

from pyroi import _core, _validate
from pyroi._errors import InvalidArgumentError, PyroiError, ShapeError
from pyroi.ops import (ps_roi_align, ps_roi_align_backward, ps_roi_pool, ps_roi_pool_backward,
                       roi_align, roi_align_backward, roi_align_rotated,
                       roi_align_rotated_backward, roi_pool, roi_pool_backward)

__all__ = ["MultiScaleRoIAlign", "PSRoIAlign", "PSRoIPool", "RoIAlign", "RoIAlignRotated",
           "RoIPool"]


def _copy_boxes(boxes):
    """The boxes as given, copied so that later changes by the caller do not reach backward."""
    if isinstance(boxes, (list, tuple)):
        return [np.array(b, copy=True) for b in boxes]
    return np.array(boxes, copy=True)


class _RoILayer:
    """An operator with its parameters bound, and a training mode.

    ``layer(input, boxes)`` runs the forward. With ``layer.training = True`` (the default) the
    call keeps what the backward needs (a copy of the boxes, the input shape and, for max
    pooling, the argmax); ``layer.backward(grad_output, lda_coeff=1.0)`` then returns the
    input gradient times ``lda_coeff`` (a loss-derivative coefficient, as in the ONNX-graph
    training layers). With ``training = False`` nothing is kept and ``backward`` raises.
    """

    training = True

    def __init__(self):
        self.training = True
        self._saved = None

    # Each layer defines _forward(input, boxes, batch_indices, num_threads) -> (output, extra)
    # and _backward(grad_output, (input_shape, boxes, batch_indices, extra), num_threads).

    def __call__(self, input, boxes, *, batch_indices=None, num_threads=None):
        """The forward of the bound operator on ``input`` and ``boxes`` (as the operator
        function takes them); in training mode also keeps what :meth:`backward` needs.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.RoIPool(1)
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> layer(x, np.array([[0, 0, 0, 1, 1]], np.float32))[:, :, 0, 0]
        array([[5.]], dtype=float32)
        """
        output, saved = self._forward(input, boxes, batch_indices, num_threads)
        self._saved = None
        if self.training:
            features_shape = np.shape(input)
            self._saved = (tuple(features_shape), _copy_boxes(boxes),
                           None if batch_indices is None else np.array(batch_indices, copy=True),
                           saved)
        return output

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """Gradient of the last call's loss with respect to its input, times ``lda_coeff``.

        Parameters
        ----------
        grad_output : ndarray
            Gradient with respect to the last call's output (same shape and dtype).
        lda_coeff : float, default 1.0
            Factor applied to the gradient.
        num_threads : int, optional
            Threads for this call.

        Returns
        -------
        ndarray of the last input's shape

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.RoIPool(1)
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> y = layer(x, np.array([[0, 0, 0, 1, 1]], np.float32))
        >>> layer.backward(np.ones_like(y), lda_coeff=2.0)[0, 0]
        array([[0., 0., 0., 0.],
               [0., 2., 0., 0.],
               [0., 0., 0., 0.],
               [0., 0., 0., 0.]], dtype=float32)
        """
        if self._saved is None:
            raise PyroiError(
                f"{type(self).__name__}.backward needs a preceding call in training mode "
                "(layer.training = True)")
        coeff = _validate.real_number(lda_coeff, "lda_coeff")
        gradient = self._backward(grad_output, self._saved, num_threads)
        if coeff != 1.0:
            gradient *= gradient.dtype.type(coeff)
        return gradient


class RoIAlign(_RoILayer):
    """Layer form of :func:`pyroi.roi_align` (torchvision ``RoIAlign``; ``mode="max"``: mmcv's).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.RoIAlign(2, spatial_scale=1.0, sampling_ratio=2, aligned=True)
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> y = layer(x, np.array([[0, 0, 0, 4, 4]], np.float32))
    >>> float(layer.backward(np.ones_like(y), lda_coeff=0.5).sum())
    2.0
    """

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False,
                 mode="avg"):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.aligned = _validate.flag(aligned, "aligned")
        self.mode = mode
        _validate.pooling_mode(mode)

    def __repr__(self) -> str:
        return (f"RoIAlign(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned}, "
                f"mode={self.mode!r})")

    def _args(self):
        return (self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def _forward(self, input, boxes, batch_indices, num_threads):
        if self.mode == "max":
            return roi_align(input, boxes, *self._args(), mode="max", return_argmax=True,
                             batch_indices=batch_indices, num_threads=num_threads)
        return roi_align(input, boxes, *self._args(), batch_indices=batch_indices,
                         num_threads=num_threads), None

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, argmax = saved
        return roi_align_backward(grad_output, boxes, shape, *self._args()[1:], mode=self.mode,
                                  argmax=argmax, batch_indices=batch_indices,
                                  num_threads=num_threads)


class RoIPool(_RoILayer):
    """Layer form of :func:`pyroi.roi_pool` (torchvision ``RoIPool``).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.RoIPool(2, spatial_scale=0.5)
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> layer(x, np.array([[0, 0, 0, 6, 6]], np.float32))[0, 0]
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)

    def __repr__(self) -> str:
        return f"RoIPool(output_size={self.output_size}, spatial_scale={self.spatial_scale})"

    def _forward(self, input, boxes, batch_indices, num_threads):
        return roi_pool(input, boxes, self.output_size, self.spatial_scale, return_argmax=True,
                        batch_indices=batch_indices, num_threads=num_threads)

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, argmax = saved
        return roi_pool_backward(grad_output, boxes, argmax, shape, self.output_size,
                                 self.spatial_scale, batch_indices=batch_indices,
                                 num_threads=num_threads)


class PSRoIAlign(_RoILayer):
    """Layer form of :func:`pyroi.ps_roi_align` (torchvision ``PSRoIAlign``).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.PSRoIAlign(2, sampling_ratio=1)
    >>> x = np.ones((1, 8, 5, 5), np.float32)  # 2 output channels x 2 x 2 bins
    >>> layer(x, np.array([[0, 0, 0, 4, 4]], np.float32)).shape
    (1, 2, 2, 2)
    """

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=-1):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)

    def __repr__(self) -> str:
        return (f"PSRoIAlign(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio})")

    def _forward(self, input, boxes, batch_indices, num_threads):
        return ps_roi_align(input, boxes, self.output_size, self.spatial_scale,
                            self.sampling_ratio, batch_indices=batch_indices,
                            num_threads=num_threads), None

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, _ = saved
        return ps_roi_align_backward(grad_output, boxes, shape, self.spatial_scale,
                                     self.sampling_ratio, batch_indices=batch_indices,
                                     num_threads=num_threads)


class PSRoIPool(_RoILayer):
    """Layer form of :func:`pyroi.ps_roi_pool` (torchvision ``PSRoIPool``).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.PSRoIPool(2)
    >>> x = np.arange(100, dtype=np.float32).reshape(1, 4, 5, 5)
    >>> layer(x, np.array([[0, 0, 0, 5, 5]], np.float32))
    array([[[[ 6. , 32.5],
             [63.5, 90. ]]]], dtype=float32)
    """

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)

    def __repr__(self) -> str:
        return f"PSRoIPool(output_size={self.output_size}, spatial_scale={self.spatial_scale})"

    def _forward(self, input, boxes, batch_indices, num_threads):
        return ps_roi_pool(input, boxes, self.output_size, self.spatial_scale,
                           batch_indices=batch_indices, num_threads=num_threads), None

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, _ = saved
        return ps_roi_pool_backward(grad_output, boxes, shape, self.spatial_scale,
                                    batch_indices=batch_indices, num_threads=num_threads)


class RoIAlignRotated(_RoILayer):
    """Layer form of :func:`pyroi.roi_align_rotated` (detectron2 ``ROIAlignRotated``; mmcv's
    ``RoIAlignRotated`` with ``angle="radians"``).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.RoIAlignRotated(2)
    >>> x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    >>> layer(x, np.array([[0, 2, 2, 2, 2, 0]], np.float32))[0, 0]
    array([[ 6.,  7.],
           [11., 12.]], dtype=float32)
    """

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=0, aligned=True,
                 clockwise=False, *, angle="degrees"):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.aligned = _validate.flag(aligned, "aligned")
        self.clockwise = _validate.flag(clockwise, "clockwise")
        _validate.angle_unit(angle)
        self.angle = angle

    def __repr__(self) -> str:
        return (f"RoIAlignRotated(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned}, clockwise={self.clockwise}, angle={self.angle!r})")

    def _forward(self, input, rois, batch_indices, num_threads):
        return roi_align_rotated(input, rois, self.output_size, self.spatial_scale,
                                 self.sampling_ratio, self.aligned, self.clockwise,
                                 angle=self.angle, batch_indices=batch_indices,
                                 num_threads=num_threads), None

    def _backward(self, grad_output, saved, num_threads):
        shape, rois, batch_indices, _ = saved
        return roi_align_rotated_backward(grad_output, rois, shape, self.spatial_scale,
                                          self.sampling_ratio, self.aligned, self.clockwise,
                                          angle=self.angle, batch_indices=batch_indices,
                                          num_threads=num_threads)


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
        try:
            max_height = max(int(h) for h, _ in image_shapes)
        except (TypeError, ValueError):
            raise _validate.ArgumentTypeError(
                f"image_shapes must be a list of (height, width) pairs, got {image_shapes!r}"
            ) from None
        if max_height <= 0:
            raise InvalidArgumentError(
                f"image_shapes must have a positive height, got {image_shapes!r}")
        for name, feature in features:
            if feature.shape[2] == 0:  # log2(0): no scale
                raise ShapeError(
                    f"features[{name!r}] has height 0, so its scale cannot be inferred")
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

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> pooler = pyroi.MultiScaleRoIAlign(["p2"], output_size=1, sampling_ratio=1)
        >>> features = {"p2": np.full((1, 1, 8, 8), 3.0, np.float32)}
        >>> pooler(features, [np.array([[0, 0, 16, 16]], np.float32)], [(32, 32)])
        array([[[[3.]]]], dtype=float32)
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

        Returns
        -------
        dict of str -> ndarray
            The gradient of each level's features (their shapes).

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> pooler = pyroi.MultiScaleRoIAlign(["p2"], output_size=1, sampling_ratio=1)
        >>> features = {"p2": np.zeros((1, 1, 8, 8), np.float32)}
        >>> y = pooler(features, [np.array([[0, 0, 16, 16]], np.float32)], [(32, 32)])
        >>> float(pooler.backward(np.ones_like(y))["p2"].sum())
        1.0
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


# float16 for MultiScaleRoIAlign (the other layers call the float16-capable operators): a
# float16 pyramid and boxes are widened to float32, pooled (levels assigned in float32) and the
# output and gradients rounded once to float16 -- see pyroi/_half.py.
from pyroi._half import _is_half, _widen_boxes  # noqa: E402

_multiscale_call = MultiScaleRoIAlign.__call__
_multiscale_backward = MultiScaleRoIAlign.backward
MultiScaleRoIAlign._float16 = False


def _multiscale_call_float16(self, x, boxes, image_shapes, *, num_threads=None):
    self._float16 = isinstance(x, dict) and any(
        _is_half(v) for k, v in x.items() if k in self.featmap_names)
    if not self._float16:
        return _multiscale_call(self, x, boxes, image_shapes, num_threads=num_threads)
    x = {k: np.asarray(v).astype(np.float32) if _is_half(v) else v for k, v in x.items()}
    if isinstance(boxes, (list, tuple)):
        boxes = _widen_boxes(list(boxes), "boxes")
    result = _multiscale_call(self, x, boxes, image_shapes, num_threads=num_threads)
    return result.astype(np.float16)


def _multiscale_backward_float16(self, grad_output, lda_coeff=1.0, *, num_threads=None):
    if not (self._float16 and _is_half(grad_output)):
        return _multiscale_backward(self, grad_output, lda_coeff, num_threads=num_threads)
    gradients = _multiscale_backward(self, np.asarray(grad_output).astype(np.float32),
                                     lda_coeff, num_threads=num_threads)
    return {name: gradient.astype(np.float16) for name, gradient in gradients.items()}


_multiscale_call_float16.__doc__ = _multiscale_call.__doc__
_multiscale_backward_float16.__doc__ = _multiscale_backward.__doc__
MultiScaleRoIAlign.__call__ = _multiscale_call_float16
MultiScaleRoIAlign.backward = _multiscale_backward_float16
