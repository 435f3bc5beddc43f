"""Layer objects: the operators with their parameters bound, and a training mode that keeps
what the backward needs."""

# May import: _core, _errors, _validate, _half, _pyramid, _results, ops.

from __future__ import annotations

import copy
import threading

import numpy as np

from pyroi import _core, _pyramid, _results, _validate
from pyroi._errors import InvalidArgumentError, PyroiError, ShapeError
from pyroi._half import _SLICE_ELEMENTS, _is_half, _widen_boxes
from pyroi.ops import prroi_pool, prroi_pool_backward
from pyroi.ops import deform_roi_pool, deform_roi_pool_backward
from pyroi.ops import (crop_and_resize, crop_and_resize_backward_boxes,
                       crop_and_resize_backward_image)
from pyroi.ops import (ps_roi_align, ps_roi_align_backward, ps_roi_pool, ps_roi_pool_backward,
                       roi_align, roi_align_backward, roi_align_backward_boxes,
                       roi_align_rotated,
                       roi_align_rotated_backward, roi_pool, roi_pool_backward)

__all__ = ["CropAndResize", "DeformRoIPool", "MultiScaleRoIAlign", "PSRoIAlign", "PSRoIPool",
           "PrRoIPool", "RoIAlign", "RoIAlignRotated", "RoIPool"]


def _copy_boxes(boxes, half: bool = False):
    """The boxes as given, copied so that later changes by the caller do not reach backward
    (as float32 when the data is float16: the backward runs in float32)."""
    if half:
        return _widen_boxes(boxes, "boxes")  # a copy, as float32
    if _validate._holds_python_numbers(boxes):  # converted with the features' dtype later
        return copy.deepcopy(boxes)
    if isinstance(boxes, (list, tuple)):
        return [_copy_boxes(b) for b in boxes]
    return np.array(_validate._as_array(boxes, "boxes"), copy=True)


class _Saved:
    """What one training forward keeps for its backward, in the thread that ran it."""

    __slots__ = ("generation", "shape", "dtype", "data")

    def __init__(self, generation: int, output: np.ndarray, data):
        self.generation = generation
        self.shape = output.shape
        self.dtype = output.dtype
        self.data = data


def _bits(array: np.ndarray) -> np.ndarray:
    """A float16 array as the uint16 view of its bits the C float16 entry points take (other
    dtypes as they are)."""
    return array.view(np.uint16) if array.dtype == np.float16 else array


def _scaled(gradient: np.ndarray, coeff, half: bool) -> np.ndarray:
    """``coeff * gradient`` in the computation's dtype, rounded once to float16 when ``half``
    (in C, in the same pass as the rounding)."""
    if half:
        source = np.ascontiguousarray(gradient, dtype=np.float32)
        target = np.empty(source.shape, np.float16)
        flat_source, flat_target = source.reshape(-1), target.reshape(-1).view(np.uint16)
        for i in range(0, flat_source.size, _SLICE_ELEMENTS):  # Ctrl-C is handled between
            _core.scale_f32_to_f16(flat_source[i:i + _SLICE_ELEMENTS], coeff,
                                   flat_target[i:i + _SLICE_ELEMENTS])
        return target
    if coeff != 1:
        # in slices, Ctrl-C being handled between them (a C-contiguous result, as always here)
        flat = gradient.reshape(-1) if gradient.flags.c_contiguous else gradient[np.newaxis]
        with np.errstate(over="ignore"):  # beyond the dtype's range: infinity, as float16's
            for i in range(0, len(flat), _SLICE_ELEMENTS):
                np.multiply(flat[i:i + _SLICE_ELEMENTS], coeff, out=flat[i:i + _SLICE_ELEMENTS])
    return gradient


class _TrainableLayer:
    """A layer's training mode and the state its backward needs: the one mechanism every layer
    uses (a layer calls :meth:`_forget` first in its forward, :meth:`_remember` when the
    forward succeeded, and :meth:`_recall` first in its backward).

    * The state is per thread (``threading.local``): ``backward`` in a thread uses the last
      forward of that thread, as each PyTorch autograd graph belongs to its call; a layer can
      be shared by threads (its parameters and ``training`` are shared).
    * A forward that raises leaves no state: ``backward`` then raises.
    * Switching ``training`` off discards what training calls kept, in every thread;
      ``backward`` raises while it is off and until the next training forward.
    * ``grad_output`` must have the shape and dtype of that forward's output, ``lda_coeff``
      must be finite in the dtype the gradient is computed in (float32 for float16 data).
    """

    # The attributes __repr__ shows, in the constructor's order.
    _shown: tuple[str, ...] = ()

    def __init__(self):
        self._training = True
        self._generation = 0  # bumped when training is switched off: older state is void
        self._state = threading.local()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__name__}({shown})"

    @property
    def training(self) -> bool:
        """True (the default): a call keeps what :meth:`backward` needs. Set it to False (or
        call :meth:`eval`) for inference: nothing is kept, and what earlier calls kept is
        discarded.

        Examples
        --------
        >>> import pyroi
        >>> layer = pyroi.RoIAlign(7, 1 / 16, 2)
        >>> layer.training
        True
        >>> layer.training = False  # inference: calls keep nothing, backward raises
        """
        return self._training

    @training.setter
    def training(self, mode) -> None:
        mode = _validate.flag(mode, "training")
        if self._training and not mode:
            self._generation += 1
        self._training = mode

    def train(self, mode=True):
        """Set training mode (``mode=False``: inference) and return the layer, as PyTorch's
        ``Module.train``.

        Examples
        --------
        >>> import pyroi
        >>> pyroi.RoIPool(7).eval().train().training
        True
        """
        self.training = mode
        return self

    def eval(self):
        """Inference mode (``training = False``); returns the layer, as PyTorch's
        ``Module.eval``.

        Examples
        --------
        >>> import pyroi
        >>> pooler = pyroi.RoIAlign(7, 1 / 16, 2).eval()
        >>> pooler.training
        False
        """
        return self.train(False)

    def __getstate__(self):
        # copies and pickles carry the parameters and the mode, not a forward's state
        state = self.__dict__.copy()
        del state["_state"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._state = threading.local()

    def _forget(self) -> None:
        self._state.saved = None

    def _remember(self, output: np.ndarray, data) -> None:
        if self._training:
            self._state.saved = _Saved(self._generation, output, data)

    def _recall(self, grad_output, lda_coeff):
        """``(grad_output as an array, lda_coeff in the computation's dtype, the kept data)``
        after checking both against the calling thread's last training forward."""
        saved = getattr(self._state, "saved", None)
        name = type(self).__name__
        if not self._training:
            raise PyroiError(f"{name}.backward needs training mode, but layer.training is "
                             "False (layer.train() switches it on; then call the layer again)")
        if saved is None or saved.generation != self._generation:
            raise PyroiError(f"{name}.backward needs a successful call of the layer in training "
                             "mode (layer.training = True) in this thread first")
        grad = _validate._as_array(grad_output, "grad_output")
        if grad.dtype.newbyteorder("=") != saved.dtype:
            raise _validate.DTypeError(
                f"grad_output must have the dtype of the forward's output, {saved.dtype}, got "
                f"{grad.dtype}")
        if grad.shape != saved.shape:
            raise ShapeError(
                f"grad_output must have the shape of the forward's output, {saved.shape}, got "
                f"{grad.shape}")
        return grad, _coefficient(lda_coeff, saved.dtype), saved.data


def _coefficient(lda_coeff, dtype: np.dtype):
    """lda_coeff as a scalar of the dtype the gradient is computed in (float32 for float16
    and float32 data), which it must be finite in."""
    wide = np.float64 if dtype == np.float64 else np.float32
    number = _validate.real_number(lda_coeff, "lda_coeff")
    with np.errstate(over="ignore"):
        coeff = wide(number)
    if not np.isfinite(coeff):
        raise InvalidArgumentError(
            f"lda_coeff must be finite in {np.dtype(wide)} (the dtype the gradient is "
            f"computed in), got {lda_coeff!r}")
    return coeff


class _RoILayer(_TrainableLayer):
    """An operator with its parameters bound, and a training mode.

    ``layer(input, boxes)`` runs the forward. With ``layer.training = True`` (the default) the
    call keeps what the backward needs (a copy of the boxes, the input shape and, for max
    pooling, the argmax, or for RoIPool a copy of the input where the C core says finding each
    bin's pixel again is faster on this CPU); ``layer.backward(grad_output, lda_coeff=1.0)`` then returns the
    input gradient times ``lda_coeff`` (a loss-derivative coefficient, as in the ONNX-graph
    training layers). With ``training = False`` (``layer.eval()``) nothing is kept and
    ``backward`` raises.

    Threads: a layer may be shared by threads. What a call keeps belongs to the calling thread,
    so ``backward`` returns the gradient of the same thread's last call, whatever other threads
    do meanwhile. A call that raises keeps nothing (``backward`` then raises).
    """

    def _bind(self, output_size, spatial_scale):
        """Checks and keeps the parameters every RoI layer has (first, in this order)."""
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)

    # Each layer defines _forward(input, boxes, batch_indices, num_threads) -> (output, extra)
    # and _backward(grad_output, (input_shape, boxes, batch_indices, extra), num_threads);
    # the backward runs in float32 for float16 data (grad_output and boxes widened).

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
        return self._run(input, boxes, batch_indices, num_threads)

    def _run(self, input, boxes, batch_indices, num_threads, *more):
        """The forward (``more``: a layer's further arguments, passed on to its _forward) and,
        in training mode, what the backward needs."""
        self._forget()
        output, extra = self._forward(input, boxes, batch_indices, num_threads, *more)
        if self._training:
            half = output.dtype == np.float16
            self._remember(output, (
                tuple(np.shape(input)), _copy_boxes(boxes, half),
                None if batch_indices is None else _copy_boxes(batch_indices), extra))
        return output

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """Gradient of the last call's loss with respect to its input, times ``lda_coeff``.

        Parameters
        ----------
        grad_output : ndarray
            Gradient with respect to the output of this thread's last call: its shape and
            dtype (else :class:`pyroi.ShapeError` / :class:`pyroi.DTypeError`).
        lda_coeff : float, default 1.0
            Factor applied to the gradient, in the dtype the gradient is computed in
            (float32 for float16 data, whose gradient is then rounded once); it must be
            finite there.
        num_threads : int, optional
            Threads for this call.

        Returns
        -------
        ndarray of the last input's shape

        Raises
        ------
        PyroiError
            When the layer is not in training mode, or this thread has no successful
            training call since training mode was last switched on.

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
        grad, coeff, saved = self._recall(grad_output, lda_coeff)
        half = grad.dtype.itemsize == 2  # float16, of either byte order
        if half:
            grad = grad.astype(np.float32)
        return _scaled(self._backward(grad, saved, num_threads), coeff, half)


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

    _shown = ("output_size", "spatial_scale", "sampling_ratio", "aligned", "mode", "exact")

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False,
                 mode="avg", *, exact=True):
        super().__init__()
        self._bind(output_size, spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.aligned = _validate.flag(aligned, "aligned")
        self.mode = mode
        self.exact = not _validate.merge_samples(exact, _validate.pooling_mode(mode))

    def _args(self):
        return (self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def _forward(self, input, boxes, batch_indices, num_threads):
        if self.mode == "max":
            return roi_align(input, boxes, *self._args(), mode="max", return_argmax=True,
                             batch_indices=batch_indices, num_threads=num_threads)
        return roi_align(input, boxes, *self._args(), batch_indices=batch_indices,
                         num_threads=num_threads, exact=self.exact), None

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, argmax = saved
        return roi_align_backward(grad_output, boxes, shape, *self._args()[1:], mode=self.mode,
                                  argmax=argmax, batch_indices=batch_indices,
                                  num_threads=num_threads, exact=self.exact)

    def backward_boxes(self, grad_output, input, lda_coeff=1.0, *, num_threads=None):
        """The gradient of the last call with respect to its boxes (``mode="avg"``), times
        ``lda_coeff``, in the form the boxes were given (see
        :func:`pyroi.roi_align_backward_boxes`); ``input`` is the input of that call (the
        layer keeps no copy of it). float32 and float64.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.RoIAlign(1, sampling_ratio=1)
        >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
        >>> y = layer(x, np.array([[0, 1, 1, 2, 2]], np.float64))
        >>> layer.backward_boxes(np.ones_like(y), x, lda_coeff=2.0)
        array([[0., 1., 0., 1., 0.]])
        """
        if self.mode != "avg":
            raise InvalidArgumentError(
                f'backward_boxes: the box gradient is offered for mode="avg", this layer has '
                f"mode={self.mode!r}")
        grad, coeff, (shape, boxes, batch_indices, _) = self._recall(grad_output, lda_coeff)
        if tuple(np.shape(input)) != shape:
            raise ShapeError(f"input must have the shape of the forward's input {shape}, got "
                             f"{np.shape(input)}")
        gradient = roi_align_backward_boxes(grad, input, boxes, *self._args()[1:],
                                            batch_indices=batch_indices,
                                            num_threads=num_threads)
        if isinstance(gradient, list):
            return [_scaled(part, coeff, False) for part in gradient]
        return _scaled(gradient, coeff, False)


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

    _shown = ("output_size", "spatial_scale")

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._bind(output_size, spatial_scale)

    def _forward(self, input, boxes, batch_indices, num_threads):
        # The backward finds each bin's pixel again from a copy of the input where the C core
        # says that is faster on this CPU than keeping an argmax (maps whose image blocks fit
        # a core's L2 cache), else from the argmax (int32, as torchvision keeps it: half the
        # bytes the backward reads). Either way the gradient is the same bit for bit.
        if self._training and self._keeps_input(input, boxes, batch_indices):
            output = roi_pool(input, boxes, self.output_size, self.spatial_scale,
                              batch_indices=batch_indices, num_threads=num_threads)
            # the backward of float16 data runs in float32: keep the input widened
            wide = np.float32 if output.dtype == np.float16 else output.dtype
            return output, ("input", np.array(input, dtype=wide, copy=True))
        output, argmax = roi_pool(input, boxes, self.output_size, self.spatial_scale,
                                  return_argmax=True, argmax_dtype="int32",
                                  batch_indices=batch_indices, num_threads=num_threads)
        return output, ("argmax", argmax)

    def _keeps_input(self, input, boxes, batch_indices) -> bool:
        """The C core's rule on this call's shapes (the argument checks raise as the forward
        would: they are the forward's own)."""
        features = _validate.float_array(input, "input", 4)
        if _is_half(features):  # float16 data takes float16 or float32 boxes
            boxes = _widen_boxes(boxes, "boxes")
        coords, _ = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
        return _core.roi_pool_backward_from_input_pays(features.shape, coords.shape[0],
                                                       *self.output_size)

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, (kind, kept) = saved
        if kind == "input":
            return roi_pool_backward(grad_output, boxes, input=kept,
                                     output_size=self.output_size,
                                     spatial_scale=self.spatial_scale,
                                     batch_indices=batch_indices, num_threads=num_threads)
        return roi_pool_backward(grad_output, boxes, kept, shape, self.output_size,
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

    _shown = ("output_size", "spatial_scale", "sampling_ratio")

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=-1):
        super().__init__()
        self._bind(output_size, spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)

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

    _shown = ("output_size", "spatial_scale")

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._bind(output_size, spatial_scale)

    def _forward(self, input, boxes, batch_indices, num_threads):
        return ps_roi_pool(input, boxes, self.output_size, self.spatial_scale,
                           batch_indices=batch_indices, num_threads=num_threads), None

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, _ = saved
        return ps_roi_pool_backward(grad_output, boxes, shape, self.spatial_scale,
                                    batch_indices=batch_indices, num_threads=num_threads)


class PrRoIPool(_RoILayer):
    """Layer form of :func:`pyroi.prroi_pool` (mmcv ``PrRoIPool(output_size, spatial_scale)``).

    In training mode a call keeps a copy of its input as well (the box gradient reads it), and
    :meth:`backward` returns both gradients.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.PrRoIPool(1)
    >>> x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    >>> y = layer(x, np.array([[0, 0, 0, 1, 1]], np.float32))
    >>> grad_input, grad_boxes = layer.backward(np.ones_like(y))
    >>> grad_input[0, 0]
    array([[0.25, 0.25],
           [0.25, 0.25]], dtype=float32)
    """

    _shown = ("output_size", "spatial_scale")

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._bind(output_size, spatial_scale)

    def _forward(self, input, boxes, batch_indices, num_threads):
        output = prroi_pool(input, boxes, self.output_size, self.spatial_scale,
                            batch_indices=batch_indices, num_threads=num_threads)
        kept = None
        if self._training:  # the input as the box gradient reads it (float16: as float32)
            kept = _validate.float_array(input, "input", 4)
            kept = kept.astype(np.float32) if _is_half(kept) else np.array(kept, copy=True)
        return output, kept

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, features = saved
        return prroi_pool_backward(grad_output, boxes, shape, self.spatial_scale,
                                   input=features, batch_indices=batch_indices,
                                   num_threads=num_threads)

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """Gradients of the last call's loss with respect to its input and its boxes, times
        ``lda_coeff``: ``(grad_input, grad_boxes)``, ``grad_boxes`` in the form the boxes
        were given (see :func:`pyroi.prroi_pool_backward`); otherwise as
        :meth:`RoIAlign.backward`.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.PrRoIPool(1)
        >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
        >>> y = layer(x, [np.array([[0, 0, 2, 2]], np.float64)])
        >>> layer.backward(np.ones_like(y), lda_coeff=2.0)[1]
        [array([[1., 0., 1., 0.]])]
        """
        grad, coeff, saved = self._recall(grad_output, lda_coeff)
        half = grad.dtype.itemsize == 2  # float16, of either byte order
        if half:
            grad = grad.astype(np.float32)
        grad_input, grad_boxes = self._backward(grad, saved, num_threads)
        if isinstance(grad_boxes, list):
            grad_boxes = [_scaled(part, coeff, False) for part in grad_boxes]
        else:
            grad_boxes = _scaled(grad_boxes, coeff, False)
        return _scaled(grad_input, coeff, half), grad_boxes


class DeformRoIPool(_RoILayer):
    """Layer form of :func:`pyroi.deform_roi_pool` (mmcv ``DeformRoIPool(output_size,
    spatial_scale, sampling_ratio, gamma)``): ``layer(input, rois, offset=None, mask=None)``.

    In training mode a call keeps copies of its input, offsets and mask as well (their
    gradients read them), and :meth:`backward` returns ``(grad_input, grad_offset,
    grad_mask)``.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.DeformRoIPool(1, sampling_ratio=1)
    >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
    >>> y = layer(x, np.array([[0, 0, 0, 2, 2]], np.float64), np.zeros((1, 2, 1, 1)))
    >>> grad_input, grad_offset, grad_mask = layer.backward(np.ones_like(y))
    >>> grad_offset[0, :, 0, 0]
    array([0.2, 0. ])
    """

    _shown = ("output_size", "spatial_scale", "sampling_ratio", "gamma")

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=0, gamma=0.1):
        super().__init__()
        self._bind(output_size, spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.gamma = _validate.gamma(gamma)

    def __call__(self, input, rois, offset=None, mask=None, *, batch_indices=None,
                 num_threads=None):
        """The forward on ``input``, ``rois`` and the per-bin ``offset`` and ``mask`` (as
        :func:`pyroi.deform_roi_pool` takes them); in training mode also keeps what
        :meth:`backward` needs.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> rois = np.array([[0, 0, 0, 2, 2]], np.float32)
        >>> pyroi.DeformRoIPool(1, sampling_ratio=1)(x, rois, np.full((1, 2, 1, 1), 5, np.float32))
        array([[[[7.5]]]], dtype=float32)
        """
        return self._run(input, rois, batch_indices, num_threads, offset, mask)

    def _forward(self, input, boxes, batch_indices, num_threads, offset=None, mask=None):
        output = deform_roi_pool(input, boxes, offset, self.output_size, self.spatial_scale,
                                 self.sampling_ratio, self.gamma, mask=mask,
                                 batch_indices=batch_indices, num_threads=num_threads)
        kept = None
        if self._training:  # what the offset and mask gradients read
            kept = tuple(None if a is None else np.array(a, copy=True)
                         for a in (input, offset, mask))
        return output, kept

    def _backward(self, grad_output, saved, num_threads):
        shape, boxes, batch_indices, (features, offset, mask) = saved
        return deform_roi_pool_backward(grad_output, boxes, shape, offset, self.spatial_scale,
                                        self.sampling_ratio, self.gamma, input=features,
                                        mask=mask, batch_indices=batch_indices,
                                        num_threads=num_threads)

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """Gradients of the last call's loss with respect to its input, its offsets and its
        mask, times ``lda_coeff``: ``(grad_input, grad_offset, grad_mask)`` (``grad_mask``
        None when the call had no mask); otherwise as :meth:`RoIAlign.backward`.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.DeformRoIPool(1, sampling_ratio=1)
        >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
        >>> y = layer(x, np.array([[0, 0, 0, 2, 2]], np.float64), None, np.ones((1, 1, 1, 1)))
        >>> [g.ravel() for g in layer.backward(np.ones_like(y), lda_coeff=2.0)[1:]]
        [array([0.4, 0. ]), array([1.])]
        """
        grad, coeff, saved = self._recall(grad_output, lda_coeff)
        return tuple(None if g is None else _scaled(g, coeff, False)
                     for g in self._backward(grad, saved, num_threads))


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

    _shown = ("output_size", "spatial_scale", "sampling_ratio", "aligned", "clockwise",
              "angle")

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=0, aligned=True,
                 clockwise=False, *, angle="degrees"):
        super().__init__()
        self._bind(output_size, spatial_scale)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.aligned = _validate.flag(aligned, "aligned")
        self.clockwise = _validate.flag(clockwise, "clockwise")
        _validate.angle_unit(angle)
        self.angle = angle

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


class MultiScaleRoIAlign(_TrainableLayer):
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
    strict_levels : bool, default False
        Whether a pyramid whose maps are not one per level (e.g. scales 1/8 and 1/32, which
        skip level 4) is a :class:`pyroi.ShapeError`. By default it is pooled as torchvision
        pools it, with a ``pyroi.PyramidLevelsWarning`` naming the levels: the ``i``-th map
        takes the boxes of level ``min_level + i`` at its own scale, boxes of a level with
        no map at its position stay zero, and maps past ``max_level - min_level`` take none.

    Notes
    -----
    As in torchvision, the scale of each level (``2 ** round(log2(H_level / max_image_h))``,
    height only) is inferred on the first call and reused by later calls; RoIAlign runs with
    ``aligned=False``. A box with negative area (inverted) belongs to no level and its output
    row stays zero. With ``training = True`` (the default) a call keeps the boxes and levels
    so that :meth:`backward` can return each level's input gradient; as for the other layers,
    that state is per thread, and a call that raises keeps nothing.

    float16 pyramids are widened to float32 (boxes too; levels are assigned in float32), pooled,
    and the output and gradients rounded once to float16.

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

    _shown = ("featmap_names", "output_size", "sampling_ratio")

    def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                 canonical_level=4, strict_levels=False):
        if isinstance(featmap_names, str) or not all(isinstance(n, str) for n in featmap_names):
            raise _validate.ArgumentTypeError(
                f"featmap_names must be a sequence of str, got {featmap_names!r}")
        self.featmap_names = list(featmap_names)
        self.output_size = _validate.output_size(output_size)
        self.sampling_ratio = _validate.sampling_ratio(sampling_ratio)
        self.canonical_scale = _validate.positive_int(canonical_scale, "canonical_scale")
        self.canonical_level = _validate.positive_int(canonical_level, "canonical_level")
        self.strict_levels = _validate.flag(strict_levels, "strict_levels")
        self.scales: list[float] | None = None
        self.min_level: int | None = None
        self.max_level: int | None = None
        super().__init__()

    def _selected_features(self, x) -> tuple[list[tuple[str, np.ndarray]], bool]:
        """The levels to pool from (float16 ones as they are: the C core widens them chunk by
        chunk), and whether they are float16."""
        if not isinstance(x, dict):
            raise _validate.ArgumentTypeError(
                f"features must be a dict of name -> (N, C, H, W) array, got {type(x).__name__}")
        levels = {name: _validate._as_array(value, f"features[{name!r}]")  # any library's
                  for name, value in x.items() if name in self.featmap_names}
        half = any(_is_half(value) for value in levels.values())
        if half and not all(_is_half(value) for value in levels.values()):
            raise _validate.DTypeError("features must all be float16 when one level is")
        selected = [(name, _validate.float_array(value, f"features[{name!r}]", 4))
                    for name, value in levels.items()]
        if not selected:
            raise InvalidArgumentError(
                f"features has none of featmap_names {self.featmap_names}; keys: {list(x)}")
        dtype = selected[0][1].dtype
        for name, value in selected[1:]:
            if value.dtype != dtype:
                raise _validate.DTypeError(
                    f"features[{name!r}] has dtype {value.dtype}, the first level {dtype}")
        return selected, half

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
        min_level = int(-np.log2(np.float32(scales[0])))
        max_level = int(-np.log2(np.float32(scales[-1])))
        if len(features) > 1:  # one map pools every box, whatever its scale
            _pyramid.check_levels(scales, min_level, max_level, self.strict_levels)
        self.scales, self.min_level, self.max_level = scales, min_level, max_level

    def _mapping(self) -> tuple:
        """The level assignment's arguments of the C call (torchvision's LevelMapper: k_min,
        k_max, s0, lvl0, eps)."""
        return (self.min_level, self.max_level, float(self.canonical_scale),
                float(self.canonical_level), 1e-6)

    def __call__(self, x, boxes, image_shapes, *, num_threads=None):
        """Pool every box from its level.

        Parameters
        ----------
        x : dict of str -> ndarray (N, C, H_l, W_l)
            The pyramid; entries whose key is not in ``featmap_names`` are ignored.
        boxes : list of ndarray (L_i, 4)
            ``[x1, y1, x2, y2]`` per image in input-image pixels, the features' dtype (float16
            or float32 for float16 features).
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
        self._forget()
        features, half = self._selected_features(x)
        if not isinstance(boxes, (list, tuple)):
            raise _validate.ArgumentTypeError(
                "boxes must be a list of (L_i, 4) arrays, one per image")
        if half:
            boxes = _widen_boxes(list(boxes), "boxes")
        if self.scales is None:
            if not image_shapes:
                raise InvalidArgumentError("image_shapes must not be empty")
            self._infer_scales(features, image_shapes)
        if len(self.scales) != len(features):
            raise ShapeError(
                f"the first call had {len(self.scales)} levels, this one {len(features)}")
        first = features[0][1]
        coords, images = _validate.boxes(list(boxes), _validate.coordinate_dtype(first.dtype),
                                         first.shape[0])
        threads = _validate.num_threads(num_threads)
        if len(features) == 1:  # every box from the one level, as torchvision
            result = roi_align(first, coords, self.output_size, self.scales[0],
                               self.sampling_ratio, False, batch_indices=images,
                               num_threads=threads)
        else:  # one C call: level assignment, each box's row written in place
            shape = (coords.shape[0], first.shape[1], *self.output_size)
            maps, scales = _pyramid.positions([_bits(feature) for _, feature in features],
                                              self.scales, self.min_level, self.max_level,
                                              _pyramid.empty_map)
            if not maps:  # no level: every box zero, as torchvision
                result = np.zeros(shape, first.dtype)
            else:
                result = _results.empty(shape, first.dtype)
                _core.roi_align_levels_forward(maps, scales, coords, images, _bits(result),
                                               self.sampling_ratio, False, *self._mapping(),
                                               threads)
        self._remember(result, ([(name, f.shape) for name, f in features], coords, images))
        return result

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """Input gradients of the last call: a dict name -> gradient of that level.

        Parameters
        ----------
        grad_output : ndarray (K, C, ph, pw)
            Gradient of the loss with respect to the output of this thread's last call: its
            shape and dtype.
        lda_coeff : float, default 1.0
            Factor applied to every gradient (a loss-derivative coefficient), in the dtype
            the gradient is computed in (float32 for float16 data); it must be finite there.

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
        grad, coeff, (shapes, coords, images) = self._recall(grad_output, lda_coeff)
        half = grad.dtype.itemsize == 2  # float16, of either byte order
        # a float16 gradient is rounded once from float32: by the C core's float16 entry points
        # when it is not scaled (coeff * g is g), else after the scaling, from a float32 one
        rounded_in_c = half and coeff == 1
        grad = _validate.float_array(grad.astype(np.float32) if half and not rounded_in_c
                                     else grad, "grad_output", 4)
        threads = _validate.num_threads(num_threads)
        if len(shapes) == 1:
            (name, shape), = shapes
            maps = [roi_align_backward(grad, coords, shape, self.scales[0],
                                       self.sampling_ratio, False, batch_indices=images,
                                       num_threads=threads)]
        else:  # one C call: each box's gradient row read in place, each map written once
            levels = _pyramid.level_count(self.min_level, self.max_level)
            # maps past the last level receive no box: zero
            maps = [_results.empty(shape, grad.dtype) if i < levels else
                    np.zeros(shape, grad.dtype) for i, (_, shape) in enumerate(shapes)]
            written, scales = _pyramid.positions([_bits(m) for m in maps], self.scales,
                                                 self.min_level, self.max_level,
                                                 _pyramid.empty_map)
            if written:
                _core.roi_align_levels_backward(_bits(grad), coords, images, written, scales,
                                                self.sampling_ratio, False, *self._mapping(),
                                                threads)
        gradients = {name: gradient if rounded_in_c else _scaled(gradient, coeff, half)
                     for (name, _), gradient in zip(shapes, maps)}
        return gradients



class CropAndResize(_TrainableLayer):
    """Layer form of :func:`pyroi.crop_and_resize` (TensorFlow's ``crop_and_resize``; NHWC by
    default). In training mode a call keeps a copy of its boxes and box indices and the
    image's shape; :meth:`backward` returns the image gradient times ``lda_coeff``,
    :meth:`backward_boxes` the box gradient (given the forward's image: the layer keeps no
    copy of it).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> layer = pyroi.CropAndResize((3, 3))
    >>> image = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    >>> crops = layer(image, np.array([[0, 0, 1, 1]], np.float32), [0])
    >>> float(layer.backward(np.ones_like(crops)).sum())
    9.0
    """

    _shown = ("crop_size", "method", "extrapolation_value", "layout", "placement")

    def __init__(self, crop_size, method="bilinear", extrapolation_value=0.0, *,
                 layout="NHWC", placement="tensorflow"):
        super().__init__()
        _validate.crop_layer_options(self, crop_size, method, extrapolation_value, layout,
                                     placement)

    def _options(self):
        return {"layout": self.layout, "placement": self.placement}

    def __call__(self, image, boxes, box_indices, *, num_threads=None):
        """The crops of ``image`` (see :func:`pyroi.crop_and_resize`); in training mode also
        keeps what :meth:`backward` needs.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> image = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
        >>> pyroi.CropAndResize((1, 1))(image, np.array([[0, 0, 1, 1]], np.float32), [0])
        array([[[[2.5]]]], dtype=float32)
        """
        self._forget()
        output = crop_and_resize(image, boxes, box_indices, self.crop_size, self.method,
                                 self.extrapolation_value, num_threads=num_threads,
                                 **self._options())
        self._remember(output, (tuple(np.shape(image)), _copy_boxes(boxes),
                                _copy_boxes(box_indices)))
        return output

    def backward(self, grad_output, lda_coeff=1.0, *, num_threads=None):
        """The gradient of the last call with respect to its image, times ``lda_coeff``.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.CropAndResize((1, 1))
        >>> y = layer(np.zeros((1, 2, 2, 1), np.float32), np.array([[0, 0, 1, 1]], np.float32), [0])
        >>> layer.backward(np.ones_like(y), lda_coeff=4.0)[0, :, :, 0]
        array([[1., 1.],
               [1., 1.]], dtype=float32)
        """
        grad, coeff, (shape, boxes, box_indices) = self._recall(grad_output, lda_coeff)
        gradient = crop_and_resize_backward_image(grad, boxes, box_indices, shape, self.method,
                                                  num_threads=num_threads, **self._options())
        return _scaled(gradient, coeff, False)

    def backward_boxes(self, grad_output, image, lda_coeff=1.0, *, num_threads=None):
        """The gradient of the last call with respect to its boxes (bilinear only), times
        ``lda_coeff``; ``image`` is the image of that call.

        Examples
        --------
        >>> import numpy as np, pyroi
        >>> layer = pyroi.CropAndResize((1, 1))
        >>> image = np.array([1, 2, 3, 4], np.float64).reshape(1, 2, 2, 1)
        >>> y = layer(image, np.array([[0.2, 0.2, 0.6, 0.6]]), [0])
        >>> layer.backward_boxes(np.ones_like(y), image)
        array([[1. , 0.5, 1. , 0.5]])
        """
        grad, coeff, (shape, boxes, box_indices) = self._recall(grad_output, lda_coeff)
        if tuple(np.shape(image)) != shape:
            raise ShapeError(f"image must have the shape of the forward's image {shape}, got "
                             f"{np.shape(image)}")
        gradient = crop_and_resize_backward_boxes(grad, image, boxes, box_indices, self.method,
                                                  num_threads=num_threads, **self._options())
        return _scaled(gradient, coeff, False)
