# cython: language_level=3
"""Typed bindings over the pyroi C core.

May import: _errors (and cimport _cpyroi, the mirror of pyroi.h).

Each function marshals already-validated NumPy arrays into pointers, shapes and element
strides, calls C without the GIL and turns a non-OK status into its exception class. No
arithmetic on data happens here; argument checking with good messages is in _validate.py.
"""
from libc.stdint cimport int64_t, uint16_t
from libc.stdint cimport int8_t
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from cpython.ref cimport PyObject

from pyroi cimport _cpyroi as c

from pyroi._errors import (
    BatchIndexError,
    BoxError,
    InvalidArgumentError,
    PyroiError,
    PyroiMemoryError,
    ShapeError,
)

ctypedef fused real:
    float
    double

# Exactly one exception class per status code.
_STATUS_ERRORS = {
    c.PYROI_E_NULL_POINTER: InvalidArgumentError,
    c.PYROI_E_INVALID_SHAPE: ShapeError,
    c.PYROI_E_INVALID_STRIDES: ShapeError,
    c.PYROI_E_INVALID_OUTPUT_SIZE: InvalidArgumentError,
    c.PYROI_E_INVALID_SCALE: InvalidArgumentError,
    c.PYROI_E_INVALID_SAMPLING_RATIO: InvalidArgumentError,
    c.PYROI_E_INVALID_BATCH_INDEX: BatchIndexError,
    c.PYROI_E_INVALID_BOX: BoxError,
    c.PYROI_E_INVALID_NUM_THREADS: InvalidArgumentError,
    c.PYROI_E_NO_MEMORY: PyroiMemoryError,
    c.PYROI_E_INVALID_ARGMAX: InvalidArgumentError,
}

MAX_SAMPLING_GRID = c.PYROI_MAX_SAMPLING_GRID


# ---- Ctrl-C during a call --------------------------------------------------------------
# Python runs signal handlers only in the main thread, and only when it checks for them,
# which it cannot do while that thread is inside a C call. So a call made from the main
# thread gets a cancel token whose poll (run by the C core every 20 ms in calls of more than
# about 20 ms of work, while helper threads do the work) takes the GIL and checks for signals.
# When a handler raises (KeyboardInterrupt for SIGINT), the exception is kept, the token
# set, and check_status raises it once the call has stopped. One token serves the main
# thread (it makes one call at a time); a pyroi call made from a signal handler while the
# token polls is not interruptible.
import threading

cdef extern from "Python.h":
    int check_signals "PyErr_CheckSignals" () noexcept
    unsigned long PyThread_get_thread_ident() noexcept

cdef struct SignalWatch:
    c.pyroi_cancel token  # first: poll receives &token
    PyObject *error_type
    PyObject *error_value
    PyObject *error_traceback
    bint polling

cdef SignalWatch _watch
cdef unsigned long _main_thread = threading.main_thread().ident


cdef void poll_signals(c.pyroi_cancel *token) noexcept nogil:
    cdef SignalWatch *watch = <SignalWatch *>token
    with gil:
        watch.polling = True
        if check_signals() != 0 and not token.requested:
            PyErr_Fetch(&watch.error_type, &watch.error_value, &watch.error_traceback)
            token.requested = 1
        watch.polling = False


cdef c.pyroi_cancel *signal_watch() noexcept:
    """The cancel token of a call: the signal watch in the main thread, else NULL."""
    if PyThread_get_thread_ident() != _main_thread or _watch.polling:
        return NULL
    c.pyroi_cancel_init(&_watch.token)
    _watch.token.poll = poll_signals
    return &_watch.token


cdef int raise_interrupt() except -1:
    """Raises the exception a signal handler raised during the cancelled call."""
    if _watch.error_type == NULL:
        raise KeyboardInterrupt
    PyErr_Restore(_watch.error_type, _watch.error_value, _watch.error_traceback)
    _watch.error_type = _watch.error_value = _watch.error_traceback = NULL
    return -1


cdef int check_status(c.pyroi_status status, int64_t failed_roi=-1,
                      str argument="boxes") except -1:
    if status == c.PYROI_OK:
        return 0
    if status == c.PYROI_E_CANCELLED:
        return raise_interrupt()
    message = c.pyroi_status_string(status).decode("ascii")
    if failed_roi >= 0 and status == c.PYROI_E_INVALID_BOX:
        # pyroi._validate has rejected non-finite coordinates before the call: what is left
        # is a finite box too large to sample
        message = (f"{argument}: RoI {failed_roi} is too large to sample (its coordinates are "
                   f"finite): times spatial_scale it overflows the dtype, or with adaptive "
                   f"sampling (sampling_ratio <= 0) a bin needs more than 2147483647 samples "
                   f"along an axis; give a fixed sampling_ratio or check the boxes' scale")
    elif failed_roi >= 0:
        message = f"{argument}: RoI {failed_roi}: {message}"
    raise _STATUS_ERRORS.get(status, PyroiError)(f"pyroi: {message} (status {<int>status})")


cdef struct Arrays:
    # A call's arrays as the C API takes them: the (N, C, H, W) map (a forward's input, a
    # backward's grad_input), the per-RoI (K, C', PH, PW) tensor (output or grad_output),
    # both in elements, and the boxes' row stride.
    int64_t map_shape[4]
    int64_t map_strides[4]
    int64_t pooled_strides[4]
    int64_t box_row_stride


cdef int marshal(Arrays *a, const Py_ssize_t *map_shape, const Py_ssize_t *map_strides,
                 const Py_ssize_t *pooled_strides, Py_ssize_t itemsize,
                 const Py_ssize_t *box_strides, Py_ssize_t box_itemsize) except -1:
    cdef int i
    for i in range(4):
        a.map_shape[i] = map_shape[i]
    element_strides(map_strides, itemsize, 4, a.map_strides)
    element_strides(pooled_strides, itemsize, 4, a.pooled_strides)
    a.box_row_stride = box_rows_stride(box_strides, box_itemsize)
    return 0


cdef int64_t first_invalid_roi(const real[:, :] boxes, const int64_t[::1] batch_indices,
        const Arrays *a, const c.pyroi_roi_align_params *params) noexcept:
    """Index of the first RoI the C core rejects, or -1 (for error messages only)."""
    cdef int64_t failed_roi = -1
    if real is float:
        c.pyroi_roi_align_find_invalid_roi_f32(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            a.map_shape[2], a.map_shape[3], params, &failed_roi)
    else:
        c.pyroi_roi_align_find_invalid_roi_f64(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            a.map_shape[2], a.map_shape[3], params, &failed_roi)
    return failed_roi


cdef bint is_roi_status(c.pyroi_status status) noexcept:
    return status == c.PYROI_E_INVALID_BOX or status == c.PYROI_E_INVALID_BATCH_INDEX


def version_string():
    """The C library's version string."""
    return c.pyroi_version_string().decode("ascii")


def vector_isa():
    """The instruction set the C core's vector loops run on this CPU ("x86-64-v4", "avx2",
    "baseline", "baseline-only build")."""
    return c.pyroi_vector_isa().decode("ascii")


def version_number():
    """The C library's version as MAJOR * 10000 + MINOR * 100 + PATCH."""
    return c.pyroi_version_number()


def header_version_number():
    """PYROI_VERSION_NUMBER of the header this extension was compiled against."""
    return c.PYROI_VERSION_NUMBER


cdef int element_strides(const Py_ssize_t *byte_strides, Py_ssize_t itemsize, int ndim,
                         int64_t *out) except -1:
    cdef int i
    for i in range(ndim):
        if byte_strides[i] % itemsize != 0:
            raise ShapeError("pyroi: array strides must be multiples of the item size")
        out[i] = byte_strides[i] // itemsize
    return 0


cdef int64_t box_rows_stride(const Py_ssize_t *byte_strides, Py_ssize_t itemsize) except? -1:
    # The C API takes the four coordinates of a box as consecutive elements.
    if byte_strides[1] != itemsize or byte_strides[0] % itemsize != 0:
        raise ShapeError("pyroi: box coordinates must be consecutive elements")
    return byte_strides[0] // itemsize


cdef int fill_roi_align_params(c.pyroi_roi_align_params *params, int64_t pooled_height,
                               int64_t pooled_width, double spatial_scale_h,
                               double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                               int num_threads) except -1:
    c.pyroi_roi_align_params_init(params)
    params.pooled_height = pooled_height
    params.pooled_width = pooled_width
    params.spatial_scale_h = spatial_scale_h
    params.spatial_scale_w = spatial_scale_w
    params.sampling_ratio = sampling_ratio
    params.aligned = aligned
    params.num_threads = num_threads
    params.cancel = signal_watch()
    return 0


def roi_align_forward(const real[:, :, :, :] input, const real[:, :] boxes,
                      const int64_t[::1] batch_indices, real[:, :, :, :] output,
                      int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                      double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                      int num_threads):
    """RoIAlign forward into output (K, C, pooled_height, pooled_width)."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    marshal(&a, input.shape, input.strides, output.strides, sizeof(real), boxes.strides,
            sizeof(real))
    fill_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_forward_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
        else:
            status = c.pyroi_roi_align_forward_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
    if is_roi_status(status):
        check_status(status, first_invalid_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def roi_align_backward(const real[:, :, :, :] grad_output, const real[:, :] boxes,
                       const int64_t[::1] batch_indices, real[:, :, :, :] grad_input,
                       double spatial_scale_h, double spatial_scale_w, int64_t sampling_ratio,
                       bint aligned, int num_threads):
    """RoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois or grad_output.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes, batch_indices and grad_output differ in length")
    if grad_output.shape[1] != grad_input.shape[1]:
        raise ShapeError("pyroi: grad_output and grad_input differ in channels")
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(real),
            boxes.strides, sizeof(real))
    fill_roi_align_params(&params, grad_output.shape[2], grad_output.shape[3], spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_backward_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
        else:
            status = c.pyroi_roi_align_backward_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_roi(boxes, batch_indices, &a, &params))
    check_status(status)




def roi_align_max_forward(const real[:, :, :, :] input, const real[:, :] boxes,
                          const int64_t[::1] batch_indices, real[:, :, :, :] output,
                          argmax, int64_t pooled_height, int64_t pooled_width,
                          double spatial_scale_h, double spatial_scale_w,
                          int64_t sampling_ratio, bint aligned, int num_threads,
                          bint onnx=False):
    """RoIAlign max mode into output; argmax is an int64 array of the output's shape or None.
    onnx: ONNX's max over weighted taps (argmax: winner codes 4 * sample + tap), else mmcv's."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t argmax_strides[4]
    cdef int64_t[:, :, :, :] argmax_view
    cdef int64_t *argmax_data = NULL
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    cdef int i
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    for i in range(4):
        argmax_strides[i] = 0
    if argmax is not None:
        argmax_view = argmax
        element_strides(argmax_view.strides, sizeof(int64_t), 4, argmax_strides)
        argmax_data = &argmax_view[0, 0, 0, 0]
    marshal(&a, input.shape, input.strides, output.strides, sizeof(real), boxes.strides,
            sizeof(real))
    fill_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        if real is float and onnx:
            status = c.pyroi_roi_align_onnx_max_forward_argmax_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                argmax_data, argmax_strides, &params)
        elif real is float:
            status = c.pyroi_roi_align_max_forward_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                argmax_data, argmax_strides, &params)
        elif onnx:
            status = c.pyroi_roi_align_onnx_max_forward_argmax_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                argmax_data, argmax_strides, &params)
        else:
            status = c.pyroi_roi_align_max_forward_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                argmax_data, argmax_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def roi_align_max_backward(const real[:, :, :, :] grad_output,
                           const int64_t[:, :, :, :] argmax, const real[:, :] boxes,
                           const int64_t[::1] batch_indices, real[:, :, :, :] grad_input,
                           double spatial_scale_h, double spatial_scale_w,
                           int64_t sampling_ratio, bint aligned, int num_threads,
                           bint onnx=False):
    """RoIAlign max-mode backward: overwrite grad_input with the input gradient (onnx: of
    ONNX's max, from its winner codes; else of mmcv's)."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t argmax_strides[4]
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    cdef int i
    if batch_indices.shape[0] != num_rois or grad_output.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes, batch_indices and grad_output differ in length")
    for i in range(4):
        if argmax.shape[i] != grad_output.shape[i]:
            raise ShapeError("pyroi: argmax and grad_output differ in shape")
    element_strides(argmax.strides, sizeof(int64_t), 4, argmax_strides)
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(real),
            boxes.strides, sizeof(real))
    fill_roi_align_params(&params, grad_output.shape[2], grad_output.shape[3], spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        if real is float and onnx:
            status = c.pyroi_roi_align_onnx_max_backward_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &argmax[0, 0, 0, 0],
                argmax_strides, &boxes[0, 0], num_rois, a.box_row_stride, &batch_indices[0],
                &grad_input[0, 0, 0, 0], a.map_shape, a.map_strides, &params)
        elif real is float:
            status = c.pyroi_roi_align_max_backward_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &argmax[0, 0, 0, 0],
                argmax_strides, &boxes[0, 0], num_rois, a.box_row_stride, &batch_indices[0],
                &grad_input[0, 0, 0, 0], a.map_shape, a.map_strides, &params)
        elif onnx:
            status = c.pyroi_roi_align_onnx_max_backward_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &argmax[0, 0, 0, 0],
                argmax_strides, &boxes[0, 0], num_rois, a.box_row_stride, &batch_indices[0],
                &grad_input[0, 0, 0, 0], a.map_shape, a.map_strides, &params)
        else:
            status = c.pyroi_roi_align_max_backward_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &argmax[0, 0, 0, 0],
                argmax_strides, &boxes[0, 0], num_rois, a.box_row_stride, &batch_indices[0],
                &grad_input[0, 0, 0, 0], a.map_shape, a.map_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_roi(boxes, batch_indices, &a, &params))
    check_status(status)

cdef int fill_roi_pool_params(c.pyroi_roi_pool_params *params, int64_t pooled_height,
                              int64_t pooled_width, double spatial_scale_h,
                              double spatial_scale_w, int num_threads) except -1:
    c.pyroi_roi_pool_params_init(params)
    params.pooled_height = pooled_height
    params.pooled_width = pooled_width
    params.spatial_scale_h = spatial_scale_h
    params.spatial_scale_w = spatial_scale_w
    params.num_threads = num_threads
    params.cancel = signal_watch()
    return 0


cdef int64_t first_invalid_pool_roi(const real[:, :] boxes, const int64_t[::1] batch_indices,
        const Arrays *a, const c.pyroi_roi_pool_params *params) noexcept:
    """Index of the first RoI the C core's RoIPool rejects, or -1 (for error messages)."""
    cdef int64_t failed_roi = -1
    if real is float:
        c.pyroi_roi_pool_find_invalid_roi_f32(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            params, &failed_roi)
    else:
        c.pyroi_roi_pool_find_invalid_roi_f64(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            params, &failed_roi)
    return failed_roi


def roi_pool_forward(const real[:, :, :, :] input, const real[:, :] boxes,
                     const int64_t[::1] batch_indices, real[:, :, :, :] output,
                     int64_t[:, :, :, :] argmax, int64_t pooled_height, int64_t pooled_width,
                     double spatial_scale_h, double spatial_scale_w, int num_threads):
    """RoIPool forward into output (K, C, pooled_height, pooled_width) and, unless it is
    None, argmax (same shape)."""
    cdef c.pyroi_roi_pool_params params
    cdef int64_t argmax_strides[4]
    cdef int64_t *argmax_data = NULL
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    cdef int i
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    for i in range(4):
        argmax_strides[i] = 0
    if argmax is not None:
        for i in range(4):
            if argmax.shape[i] != output.shape[i]:
                raise ShapeError("pyroi: argmax and output differ in shape")
        element_strides(argmax.strides, sizeof(int64_t), 4, argmax_strides)
        argmax_data = &argmax[0, 0, 0, 0]
    marshal(&a, input.shape, input.strides, output.strides, sizeof(real), boxes.strides,
            sizeof(real))
    fill_roi_pool_params(&params, pooled_height, pooled_width, spatial_scale_h,
                         spatial_scale_w, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_pool_forward_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                argmax_data, argmax_strides, &params)
        else:
            status = c.pyroi_roi_pool_forward_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                argmax_data, argmax_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_pool_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def roi_pool_backward(const real[:, :, :, :] grad_output, const int64_t[:, :, :, :] argmax,
                      const int64_t[::1] batch_indices, real[:, :, :, :] grad_input,
                      double spatial_scale_h, double spatial_scale_w, int num_threads):
    """RoIPool backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef c.pyroi_roi_pool_params params
    cdef int64_t grad_input_shape[4]
    cdef int64_t grad_input_strides[4]
    cdef int64_t grad_output_strides[4]
    cdef int64_t argmax_strides[4]
    cdef int64_t num_rois = grad_output.shape[0]
    cdef c.pyroi_status status
    cdef int i
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: batch_indices and grad_output differ in length")
    for i in range(4):
        if argmax.shape[i] != grad_output.shape[i]:
            raise ShapeError("pyroi: argmax and grad_output differ in shape")
    if grad_output.shape[1] != grad_input.shape[1]:
        raise ShapeError("pyroi: grad_output and grad_input differ in channels")
    for i in range(4):
        grad_input_shape[i] = grad_input.shape[i]
    element_strides(grad_input.strides, sizeof(real), 4, grad_input_strides)
    element_strides(grad_output.strides, sizeof(real), 4, grad_output_strides)
    element_strides(argmax.strides, sizeof(int64_t), 4, argmax_strides)
    fill_roi_pool_params(&params, grad_output.shape[2], grad_output.shape[3], spatial_scale_h,
                         spatial_scale_w, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_pool_backward_f32(
                &grad_output[0, 0, 0, 0], grad_output_strides, &argmax[0, 0, 0, 0],
                argmax_strides, &batch_indices[0], num_rois, &grad_input[0, 0, 0, 0],
                grad_input_shape, grad_input_strides, &params)
        else:
            status = c.pyroi_roi_pool_backward_f64(
                &grad_output[0, 0, 0, 0], grad_output_strides, &argmax[0, 0, 0, 0],
                argmax_strides, &batch_indices[0], num_rois, &grad_input[0, 0, 0, 0],
                grad_input_shape, grad_input_strides, &params)
    check_status(status)


# ------------------------------------------------------------------------------------------
# position-sensitive RoIAlign and RoIPool

cdef int fill_ps_roi_align_params(c.pyroi_ps_roi_align_params *params, int64_t pooled_height,
                                  int64_t pooled_width, double spatial_scale_h,
                                  double spatial_scale_w, int64_t sampling_ratio,
                                  int num_threads) except -1:
    c.pyroi_ps_roi_align_params_init(params)
    params.pooled_height = pooled_height
    params.pooled_width = pooled_width
    params.spatial_scale_h = spatial_scale_h
    params.spatial_scale_w = spatial_scale_w
    params.sampling_ratio = sampling_ratio
    params.num_threads = num_threads
    params.cancel = signal_watch()
    return 0


cdef int fill_ps_roi_pool_params(c.pyroi_ps_roi_pool_params *params, int64_t pooled_height,
                                 int64_t pooled_width, double spatial_scale_h,
                                 double spatial_scale_w, int num_threads) except -1:
    c.pyroi_ps_roi_pool_params_init(params)
    params.pooled_height = pooled_height
    params.pooled_width = pooled_width
    params.spatial_scale_h = spatial_scale_h
    params.spatial_scale_w = spatial_scale_w
    params.num_threads = num_threads
    params.cancel = signal_watch()
    return 0


cdef int64_t first_invalid_ps_align_roi(const real[:, :] boxes, const int64_t[::1] batch_indices,
        const Arrays *a, const c.pyroi_ps_roi_align_params *params) noexcept:
    """Index of the first RoI ps_roi_align rejects, or -1 (for error messages only)."""
    cdef int64_t failed_roi = -1
    if real is float:
        c.pyroi_ps_roi_align_find_invalid_roi_f32(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            a.map_shape[2], a.map_shape[3], params, &failed_roi)
    else:
        c.pyroi_ps_roi_align_find_invalid_roi_f64(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            a.map_shape[2], a.map_shape[3], params, &failed_roi)
    return failed_roi


cdef int64_t first_invalid_ps_pool_roi(const real[:, :] boxes, const int64_t[::1] batch_indices,
        const Arrays *a, const c.pyroi_ps_roi_pool_params *params) noexcept:
    """Index of the first RoI ps_roi_pool rejects, or -1 (for error messages only)."""
    cdef int64_t failed_roi = -1
    if real is float:
        c.pyroi_ps_roi_pool_find_invalid_roi_f32(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            params, &failed_roi)
    else:
        c.pyroi_ps_roi_pool_find_invalid_roi_f64(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            params, &failed_roi)
    return failed_roi


cdef int check_ps_shapes(Py_ssize_t num_rois, Py_ssize_t batch_length, Py_ssize_t channels,
                         const Py_ssize_t *pooled_view_shape, int64_t pooled_height,
                         int64_t pooled_width) except -1:
    # The C API derives the pooled tensor's shape (K, C / (PH * PW), PH, PW) from its
    # arguments; the memoryview must have exactly that shape (Python ints: no overflow).
    pooled_shape = tuple(pooled_view_shape[i] for i in range(4))
    if batch_length != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    if (pooled_shape[0] != num_rois or pooled_shape[2] != pooled_height
            or pooled_shape[3] != pooled_width
            or pooled_shape[1] * pooled_height * pooled_width != channels):
        raise ShapeError(
            f"pyroi: pooled shape {pooled_shape} does not match {num_rois} RoIs, "
            f"{channels} channels and output size ({pooled_height}, {pooled_width})")
    return 0


def ps_roi_align_forward(const real[:, :, :, :] input, const real[:, :] boxes,
                         const int64_t[::1] batch_indices, real[:, :, :, :] output,
                         int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                         double spatial_scale_w, int64_t sampling_ratio, int num_threads):
    """PSRoIAlign forward into output (K, C / (PH * PW), PH, PW)."""
    cdef c.pyroi_ps_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    check_ps_shapes(boxes.shape[0], batch_indices.shape[0], input.shape[1], output.shape,
                    pooled_height, pooled_width)
    marshal(&a, input.shape, input.strides, output.strides, sizeof(real), boxes.strides,
            sizeof(real))
    fill_ps_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                             spatial_scale_w, sampling_ratio, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_ps_roi_align_forward_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
        else:
            status = c.pyroi_ps_roi_align_forward_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
    if is_roi_status(status):
        check_status(status, first_invalid_ps_align_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def ps_roi_align_backward(const real[:, :, :, :] grad_output, const real[:, :] boxes,
                          const int64_t[::1] batch_indices, real[:, :, :, :] grad_input,
                          double spatial_scale_h, double spatial_scale_w,
                          int64_t sampling_ratio, int num_threads):
    """PSRoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef c.pyroi_ps_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    check_ps_shapes(boxes.shape[0], batch_indices.shape[0], grad_input.shape[1],
                    grad_output.shape, grad_output.shape[2], grad_output.shape[3])
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(real),
            boxes.strides, sizeof(real))
    fill_ps_roi_align_params(&params, grad_output.shape[2], grad_output.shape[3],
                             spatial_scale_h, spatial_scale_w, sampling_ratio, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_ps_roi_align_backward_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
        else:
            status = c.pyroi_ps_roi_align_backward_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_ps_align_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def ps_roi_pool_forward(const real[:, :, :, :] input, const real[:, :] boxes,
                        const int64_t[::1] batch_indices, real[:, :, :, :] output,
                        int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                        double spatial_scale_w, int num_threads):
    """PSRoIPool forward into output (K, C / (PH * PW), PH, PW)."""
    cdef c.pyroi_ps_roi_pool_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    check_ps_shapes(boxes.shape[0], batch_indices.shape[0], input.shape[1], output.shape,
                    pooled_height, pooled_width)
    marshal(&a, input.shape, input.strides, output.strides, sizeof(real), boxes.strides,
            sizeof(real))
    fill_ps_roi_pool_params(&params, pooled_height, pooled_width, spatial_scale_h,
                            spatial_scale_w, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_ps_roi_pool_forward_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
        else:
            status = c.pyroi_ps_roi_pool_forward_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
    if is_roi_status(status):
        check_status(status, first_invalid_ps_pool_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def ps_roi_pool_backward(const real[:, :, :, :] grad_output, const real[:, :] boxes,
                         const int64_t[::1] batch_indices, real[:, :, :, :] grad_input,
                         double spatial_scale_h, double spatial_scale_w, int num_threads):
    """PSRoIPool backward: overwrite grad_input (N, C, H, W) with torchvision's gradient."""
    cdef c.pyroi_ps_roi_pool_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    check_ps_shapes(boxes.shape[0], batch_indices.shape[0], grad_input.shape[1],
                    grad_output.shape, grad_output.shape[2], grad_output.shape[3])
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(real),
            boxes.strides, sizeof(real))
    fill_ps_roi_pool_params(&params, grad_output.shape[2], grad_output.shape[3],
                            spatial_scale_h, spatial_scale_w, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_ps_roi_pool_backward_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
        else:
            status = c.pyroi_ps_roi_pool_backward_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_ps_pool_roi(boxes, batch_indices, &a, &params))
    check_status(status)


# ------------------------------------------------------------------------------------------
# boxes given as (K, 1 + n) rows [batch_index, coordinates...]

def roi_rows_batch_indices(const real[:, :] rows, int64_t num_images,
                           int64_t[::1] batch_indices):
    """Write the batch index of each row [batch_index, coordinates...] into batch_indices:
    (0, -1) when every index is an integer in [0, num_images) and every coordinate finite,
    else (1, k) for the first bad batch index (RoI k), or (2, k) for the first non-finite
    coordinate (nothing written then)."""
    cdef int64_t failed_roi = -1
    cdef int64_t num_rois = rows.shape[0]
    cdef int64_t row_stride
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois or rows.shape[1] < 2:
        raise ShapeError("pyroi: rows need an index and coordinates, and one output each")
    if num_rois == 0:
        return 0, -1
    row_stride = box_rows_stride(rows.strides, sizeof(real))
    with nogil:
        if real is float:
            status = c.pyroi_roi_rows_batch_indices_f32(&rows[0, 0], num_rois, row_stride,
                                                        rows.shape[1] - 1, num_images,
                                                        &batch_indices[0], &failed_roi)
        else:
            status = c.pyroi_roi_rows_batch_indices_f64(&rows[0, 0], num_rois, row_stride,
                                                        rows.shape[1] - 1, num_images,
                                                        &batch_indices[0], &failed_roi)
    if status == c.PYROI_E_INVALID_BATCH_INDEX:
        return 1, failed_roi
    if status == c.PYROI_E_INVALID_BOX:
        return 2, failed_roi
    check_status(status)
    return 0, -1


# ------------------------------------------------------------------------------------------
# multi-scale (FPN) level assignment

def fpn_levels(const real[:, :] boxes, int64_t[::1] levels, int64_t min_level,
               int64_t max_level, double canonical_scale, double canonical_level,
               double eps):
    """Write the pyramid level index (or -1) of each (x1, y1, x2, y2) row into levels."""
    cdef c.pyroi_fpn_level_params params
    cdef int64_t box_row_stride
    cdef int64_t num_rois = boxes.shape[0]
    cdef c.pyroi_status status
    if levels.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and levels differ in length")
    box_row_stride = box_rows_stride(boxes.strides, sizeof(real))
    c.pyroi_fpn_level_params_init(&params)
    params.min_level = min_level
    params.max_level = max_level
    params.canonical_scale = canonical_scale
    params.canonical_level = canonical_level
    params.eps = eps
    with nogil:
        if real is float:
            status = c.pyroi_fpn_levels_f32(&boxes[0, 0], num_rois, box_row_stride, &params,
                                            &levels[0])
        else:
            status = c.pyroi_fpn_levels_f64(&boxes[0, 0], num_rois, box_row_stride, &params,
                                            &levels[0])
    check_status(status)


# --------------------------------------------------------------------------------------
# rotated RoIAlign
# --------------------------------------------------------------------------------------

cdef int64_t first_invalid_rotated_roi(const real[:, :] boxes, const int64_t[::1] batch_indices,
        const Arrays *a, const c.pyroi_roi_align_rotated_params *params) noexcept:
    """Index of the first rotated RoI the C core rejects, or -1 (for error messages only)."""
    cdef int64_t failed_roi = -1
    if real is float:
        c.pyroi_roi_align_rotated_find_invalid_roi_f32(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            a.map_shape[2], a.map_shape[3], params, &failed_roi)
    else:
        c.pyroi_roi_align_rotated_find_invalid_roi_f64(
            &boxes[0, 0], boxes.shape[0], a.box_row_stride, &batch_indices[0], a.map_shape[0],
            a.map_shape[2], a.map_shape[3], params, &failed_roi)
    return failed_roi


cdef int fill_roi_align_rotated_params(c.pyroi_roi_align_rotated_params *params,
                                       int64_t pooled_height, int64_t pooled_width,
                                       double spatial_scale_h, double spatial_scale_w,
                                       int64_t sampling_ratio, bint aligned, bint clockwise,
                                       bint angle_in_degrees, int num_threads) except -1:
    c.pyroi_roi_align_rotated_params_init(params)
    params.pooled_height = pooled_height
    params.pooled_width = pooled_width
    params.spatial_scale_h = spatial_scale_h
    params.spatial_scale_w = spatial_scale_w
    params.sampling_ratio = sampling_ratio
    params.aligned = aligned
    params.clockwise = clockwise
    params.angle_in_degrees = angle_in_degrees
    params.num_threads = num_threads
    params.cancel = signal_watch()
    return 0


def roi_align_rotated_forward(const real[:, :, :, :] input, const real[:, :] boxes,
                              const int64_t[::1] batch_indices, real[:, :, :, :] output,
                              int64_t pooled_height, int64_t pooled_width,
                              double spatial_scale_h, double spatial_scale_w,
                              int64_t sampling_ratio, bint aligned, bint clockwise,
                              bint angle_in_degrees, int num_threads):
    """Rotated RoIAlign forward into output (K, C, pooled_height, pooled_width); boxes are
    (K, 5) rows (cx, cy, w, h, angle)."""
    cdef c.pyroi_roi_align_rotated_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    if boxes.shape[1] != 5:
        raise ShapeError("pyroi: rotated boxes must have 5 coordinates")
    marshal(&a, input.shape, input.strides, output.strides, sizeof(real), boxes.strides,
            sizeof(real))
    fill_roi_align_rotated_params(&params, pooled_height, pooled_width, spatial_scale_h,
                                  spatial_scale_w, sampling_ratio, aligned, clockwise,
                                  angle_in_degrees, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_rotated_forward_f32(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
        else:
            status = c.pyroi_roi_align_rotated_forward_f64(
                &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides,
                &params)
    if is_roi_status(status):
        check_status(status, first_invalid_rotated_roi(boxes, batch_indices, &a, &params), "rois")
    check_status(status)


def roi_align_rotated_backward(const real[:, :, :, :] grad_output, const real[:, :] boxes,
                               const int64_t[::1] batch_indices, real[:, :, :, :] grad_input,
                               double spatial_scale_h, double spatial_scale_w,
                               int64_t sampling_ratio, bint aligned, bint clockwise,
                               bint angle_in_degrees, int num_threads):
    """Rotated RoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef c.pyroi_roi_align_rotated_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois or grad_output.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes, batch_indices and grad_output differ in length")
    if boxes.shape[1] != 5:
        raise ShapeError("pyroi: rotated boxes must have 5 coordinates")
    if grad_output.shape[1] != grad_input.shape[1]:
        raise ShapeError("pyroi: grad_output and grad_input differ in channels")
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(real),
            boxes.strides, sizeof(real))
    fill_roi_align_rotated_params(&params, grad_output.shape[2], grad_output.shape[3],
                                  spatial_scale_h, spatial_scale_w, sampling_ratio, aligned,
                                  clockwise, angle_in_degrees, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_rotated_backward_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
        else:
            status = c.pyroi_roi_align_rotated_backward_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params)
    if is_roi_status(status):
        check_status(status, first_invalid_rotated_roi(boxes, batch_indices, &a, &params), "rois")
    check_status(status)


# ------------------------------------------------------------------------------------------
# compatibility front-ends

def roi_align_backward_workspace_size(const real[:, :] boxes, const int64_t[::1] batch_indices,
                                      grad_input_shape, int64_t pooled_height,
                                      int64_t pooled_width, double spatial_scale_h,
                                      double spatial_scale_w, int64_t sampling_ratio,
                                      bint aligned, int num_threads):
    """Bytes of workspace roi_align_backward_with_workspace uses (the aclnn-style query)."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a  # only its map shape and box row stride
    cdef size_t size = 0
    cdef c.pyroi_status status
    cdef int i
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    for i in range(4):
        a.map_shape[i] = grad_input_shape[i]
    a.box_row_stride = box_rows_stride(boxes.strides, sizeof(real))
    fill_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_backward_workspace_size_f32(
                &boxes[0, 0], num_rois, a.box_row_stride, &batch_indices[0], a.map_shape,
                &params, &size)
        else:
            status = c.pyroi_roi_align_backward_workspace_size_f64(
                &boxes[0, 0], num_rois, a.box_row_stride, &batch_indices[0], a.map_shape,
                &params, &size)
    if is_roi_status(status):
        check_status(status, first_invalid_roi(boxes, batch_indices, &a, &params))
    check_status(status)
    return size


def roi_align_backward_with_workspace(const real[:, :, :, :] grad_output,
                                      const real[:, :] boxes,
                                      const int64_t[::1] batch_indices,
                                      real[:, :, :, :] grad_input, double spatial_scale_h,
                                      double spatial_scale_w, int64_t sampling_ratio,
                                      bint aligned, int num_threads,
                                      unsigned char[::1] workspace):
    """RoIAlign backward with every scratch byte taken from workspace (uint8, any size)."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef void *workspace_data = NULL
    cdef size_t workspace_size = workspace.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois or grad_output.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes, batch_indices and grad_output differ in length")
    if grad_output.shape[1] != grad_input.shape[1]:
        raise ShapeError("pyroi: grad_output and grad_input differ in channels")
    if workspace_size > 0:
        workspace_data = &workspace[0]
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(real),
            boxes.strides, sizeof(real))
    fill_roi_align_params(&params, grad_output.shape[2], grad_output.shape[3], spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_backward_with_workspace_f32(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params, workspace_data, workspace_size)
        else:
            status = c.pyroi_roi_align_backward_with_workspace_f64(
                &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
                a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
                a.map_strides, &params, workspace_data, workspace_size)
    if is_roi_status(status):
        check_status(status, first_invalid_roi(boxes, batch_indices, &a, &params))
    check_status(status)


def roi_align_forward_f16(const uint16_t[:, :, :, :] input, const float[:, :] boxes,
                          const int64_t[::1] batch_indices, uint16_t[:, :, :, :] output,
                          int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                          double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                          int num_threads):
    """RoIAlign forward on float16 bit patterns (uint16 views) with float32 boxes."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes and batch_indices differ in length")
    marshal(&a, input.shape, input.strides, output.strides, sizeof(uint16_t), boxes.strides,
            sizeof(float))
    fill_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        status = c.pyroi_roi_align_forward_f16(
            &input[0, 0, 0, 0], a.map_shape, a.map_strides, &boxes[0, 0], num_rois,
            a.box_row_stride, &batch_indices[0], &output[0, 0, 0, 0], a.pooled_strides, &params)
    check_status(status)


def roi_align_backward_f16(const uint16_t[:, :, :, :] grad_output, const float[:, :] boxes,
                           const int64_t[::1] batch_indices, uint16_t[:, :, :, :] grad_input,
                           double spatial_scale_h, double spatial_scale_w,
                           int64_t sampling_ratio, bint aligned, int num_threads):
    """RoIAlign backward on float16 bit patterns (uint16 views) with float32 boxes."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t num_rois = boxes.shape[0]
    cdef Arrays a
    cdef c.pyroi_status status
    if batch_indices.shape[0] != num_rois or grad_output.shape[0] != num_rois:
        raise ShapeError("pyroi: boxes, batch_indices and grad_output differ in length")
    marshal(&a, grad_input.shape, grad_input.strides, grad_output.strides, sizeof(uint16_t),
            boxes.strides, sizeof(float))
    fill_roi_align_params(&params, grad_output.shape[2], grad_output.shape[3], spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, num_threads)
    with nogil:
        status = c.pyroi_roi_align_backward_f16(
            &grad_output[0, 0, 0, 0], a.pooled_strides, &boxes[0, 0], num_rois,
            a.box_row_stride, &batch_indices[0], &grad_input[0, 0, 0, 0], a.map_shape,
            a.map_strides, &params)
    check_status(status)


def scale_f32_to_f16(const float[::1] source, float scale, uint16_t[::1] target):
    """target = scale * source, the product in float32 rounded once to float16 (bit patterns
    in a uint16 view)."""
    cdef int64_t count = source.shape[0]
    cdef c.pyroi_status status
    if target.shape[0] != count:
        raise ShapeError("pyroi: source and target differ in length")
    if count == 0:
        return
    with nogil:
        status = c.pyroi_scale_f32_to_f16(&source[0], count, scale, &target[0])
    check_status(status)


# Largest fixed sampling_ratio the C core accepts (_validate.MAX_SAMPLING_RATIO mirrors it).
MAX_SAMPLING_RATIO = c.PYROI_MAX_SAMPLING_RATIO


# ---- Explaining one RoI (pyroi.viz): the geometry the operators use ----------------------

def roi_align_sample_grid(const real[::1] box, int64_t height, int64_t width,
                          int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                          double spatial_scale_w, int64_t sampling_ratio, bint aligned):
    """(grid_h, grid_w): the samples per bin of one box's RoIAlign grid."""
    cdef c.pyroi_roi_align_params params
    cdef int64_t grid[2]
    cdef c.pyroi_status status
    if box.shape[0] != 4:
        raise ShapeError("pyroi: a box has 4 coordinates")
    fill_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, 1)
    with nogil:
        if real is float:
            status = c.pyroi_roi_align_sample_grid_f32(&box[0], height, width, &params, grid)
        else:
            status = c.pyroi_roi_align_sample_grid_f64(&box[0], height, width, &params, grid)
    check_status(status)
    return grid[0], grid[1]


def roi_align_sample_axes(const real[::1] box, int64_t height, int64_t width,
                          int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                          double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                          real[::1] row_coords, int64_t[:, ::1] row_taps,
                          real[:, ::1] row_weights, int8_t[::1] row_in_map,
                          real[::1] row_edges, real[::1] col_coords,
                          int64_t[:, ::1] col_taps, real[:, ::1] col_weights,
                          int8_t[::1] col_in_map, real[::1] col_edges):
    """Fill the per-axis sample arrays of one box (sized from roi_align_sample_grid)."""
    cdef c.pyroi_roi_align_params params
    cdef c.pyroi_roi_align_axis_samples_f32 rows32, cols32
    cdef c.pyroi_roi_align_axis_samples_f64 rows64, cols64
    cdef c.pyroi_status status
    if box.shape[0] != 4:
        raise ShapeError("pyroi: a box has 4 coordinates")
    if not (row_coords.shape[0] == row_taps.shape[0] == row_weights.shape[0]
            == row_in_map.shape[0]) or row_taps.shape[1] != 2 or row_weights.shape[1] != 2:
        raise ShapeError("pyroi: the row sample arrays differ in length")
    if not (col_coords.shape[0] == col_taps.shape[0] == col_weights.shape[0]
            == col_in_map.shape[0]) or col_taps.shape[1] != 2 or col_weights.shape[1] != 2:
        raise ShapeError("pyroi: the column sample arrays differ in length")
    if row_edges.shape[0] != pooled_height + 1 or col_edges.shape[0] != pooled_width + 1:
        raise ShapeError("pyroi: bin edges need pooled size + 1 entries")
    fill_roi_align_params(&params, pooled_height, pooled_width, spatial_scale_h,
                          spatial_scale_w, sampling_ratio, aligned, 1)
    if real is float:
        rows32.capacity = row_coords.shape[0]
        rows32.coords = &row_coords[0]
        rows32.taps = &row_taps[0, 0]
        rows32.weights = &row_weights[0, 0]
        rows32.in_map = &row_in_map[0]
        rows32.edges = &row_edges[0]
        cols32.capacity = col_coords.shape[0]
        cols32.coords = &col_coords[0]
        cols32.taps = &col_taps[0, 0]
        cols32.weights = &col_weights[0, 0]
        cols32.in_map = &col_in_map[0]
        cols32.edges = &col_edges[0]
        with nogil:
            status = c.pyroi_roi_align_sample_axes_f32(&box[0], height, width, &params,
                                                       &rows32, &cols32)
    else:
        rows64.capacity = row_coords.shape[0]
        rows64.coords = &row_coords[0]
        rows64.taps = &row_taps[0, 0]
        rows64.weights = &row_weights[0, 0]
        rows64.in_map = &row_in_map[0]
        rows64.edges = &row_edges[0]
        cols64.capacity = col_coords.shape[0]
        cols64.coords = &col_coords[0]
        cols64.taps = &col_taps[0, 0]
        cols64.weights = &col_weights[0, 0]
        cols64.in_map = &col_in_map[0]
        cols64.edges = &col_edges[0]
        with nogil:
            status = c.pyroi_roi_align_sample_axes_f64(&box[0], height, width, &params,
                                                       &rows64, &cols64)
    check_status(status)


def roi_pool_bin_edges(const real[::1] box, int64_t height, int64_t width,
                       double spatial_scale_h, double spatial_scale_w,
                       int64_t[::1] roi_pixels, int64_t[:, ::1] row_edges,
                       int64_t[:, ::1] col_edges):
    """Fill RoIPool's quantised RoI (4,) and bin ranges (ph, 2), (pw, 2) of one box."""
    cdef c.pyroi_roi_pool_params params
    cdef c.pyroi_status status
    if box.shape[0] != 4 or roi_pixels.shape[0] != 4:
        raise ShapeError("pyroi: a box has 4 coordinates")
    if row_edges.shape[1] != 2 or col_edges.shape[1] != 2:
        raise ShapeError("pyroi: bin edges are (begin, end) pairs")
    fill_roi_pool_params(&params, row_edges.shape[0], col_edges.shape[0], spatial_scale_h,
                         spatial_scale_w, 1)
    with nogil:
        if real is float:
            status = c.pyroi_roi_pool_bin_edges_f32(&box[0], height, width, &params,
                                                    &roi_pixels[0], &row_edges[0, 0],
                                                    &col_edges[0, 0])
        else:
            status = c.pyroi_roi_pool_bin_edges_f64(&box[0], height, width, &params,
                                                    &roi_pixels[0], &row_edges[0, 0],
                                                    &col_edges[0, 0])
    check_status(status)


# ---- result buffers -------------------------------------------------------------------
# Large results live in buffers allocated here (see pyroi/_results.py for the policy): when
# one is freed it is kept, up to a byte limit, and handed to the next result of exactly the
# same size, so a loop of same-shaped calls does not ask the OS for fresh pages on every call
# (the OS zeroes each fresh page first). Only the GIL guards the cache: buffers are made and
# freed by Python code. The buffers come from the C core's allocator: 64-byte aligned (one
# cache line: streamed stores start on whole lines), and pages of their own for blocks of
# 1 MiB and more, which go back to the OS when evicted (malloc would keep many of them).
cdef extern from "common.h" nogil:
    void *pyroi_aligned_malloc(size_t bytes)
    void pyroi_aligned_free(void *pointer)

cdef enum:
    _CACHE_SLOTS = 8

cdef void *_cached_data[_CACHE_SLOTS]
cdef size_t _cached_size[_CACHE_SLOTS]
cdef int _cached_count = 0
cdef size_t _cached_bytes = 0
cdef size_t _cache_limit = 0


cdef void *_cache_take(size_t size) noexcept:
    global _cached_count, _cached_bytes
    cdef int i
    cdef void *raw
    for i in range(_cached_count - 1, -1, -1):  # the most recently freed first
        if _cached_size[i] == size:
            raw = _cached_data[i]
            _cached_count -= 1
            _cached_bytes -= size
            _cached_data[i] = _cached_data[_cached_count]
            _cached_size[i] = _cached_size[_cached_count]
            return raw
    return NULL


cdef void _cache_evict_oldest() noexcept:
    global _cached_count, _cached_bytes
    cdef int i
    pyroi_aligned_free(_cached_data[0])
    _cached_bytes -= _cached_size[0]
    _cached_count -= 1
    for i in range(_cached_count):
        _cached_data[i] = _cached_data[i + 1]
        _cached_size[i] = _cached_size[i + 1]


cdef void _cache_give(void *raw, size_t size) noexcept:
    global _cached_count, _cached_bytes
    if size > _cache_limit:
        pyroi_aligned_free(raw)
        return
    while _cached_count == _CACHE_SLOTS or _cached_bytes + size > _cache_limit:
        _cache_evict_oldest()
    _cached_data[_cached_count] = raw
    _cached_size[_cached_count] = size
    _cached_count += 1
    _cached_bytes += size


def set_result_cache_limit(size_t limit):
    """Sets the bytes of freed result buffers kept for reuse; returns the previous limit."""
    global _cache_limit
    cdef size_t previous = _cache_limit
    _cache_limit = limit
    while _cached_count > 0 and _cached_bytes > _cache_limit:
        _cache_evict_oldest()
    return previous


def result_cache_limit():
    """Bytes of freed result buffers kept at most."""
    return _cache_limit


def result_cache_bytes():
    """Bytes currently kept in freed result buffers."""
    return _cached_bytes


cdef class ResultBuffer:
    """size writable bytes, 64-byte aligned, exposed through the buffer protocol (NumPy
    arrays made with np.frombuffer keep it alive); returned to the cache when freed."""
    cdef void *data
    cdef size_t size
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __cinit__(self, size_t size):
        self.data = _cache_take(size)
        if self.data == NULL:
            self.data = pyroi_aligned_malloc(size)
            if self.data == NULL:
                raise MemoryError()
        self.size = size
        self.shape[0] = <Py_ssize_t>size
        self.strides[0] = 1

    def __getbuffer__(self, Py_buffer *view, int flags):
        view.buf = self.data
        view.obj = self
        view.len = <Py_ssize_t>self.size
        view.readonly = 0
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass

    def __dealloc__(self):
        if self.data != NULL:
            _cache_give(self.data, self.size)
