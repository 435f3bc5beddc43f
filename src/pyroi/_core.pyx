# cython: language_level=3
"""Typed bindings over the pyroi C core.

May import: _errors (and cimport _cpyroi, the part of pyroi.h it names, and _bindings, the
C half of the bindings).

Each function marshals already-validated NumPy arrays into pointers, shapes and element
strides, calls C without the GIL and turns a non-OK status into its exception class; every
operator does it through one function, run(). No arithmetic on data happens here; argument
checking with good messages is in _validate.py.
"""
from libc.stdint cimport int32_t, int64_t, uint16_t
from libc.stdint cimport int8_t
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from cpython.ref cimport PyObject

from pyroi cimport _bindings as b
from pyroi cimport _cpyroi as c

from pyroi._errors import (BatchIndexError, BoxError, DTypeError, InvalidArgumentError,
                           PyroiError, PyroiMemoryError, ShapeError)

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
    c.PYROI_E_INVALID_METHOD: InvalidArgumentError,
    c.PYROI_E_INVALID_OFFSET: InvalidArgumentError,
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


def version_string():
    """The C library's version string."""
    return c.pyroi_version_string().decode("ascii")


def vector_isa():
    """The instruction set the C core's vector loops run on this CPU ("x86-64-v4", "avx2",
    "baseline", "baseline-only build")."""
    return c.pyroi_vector_isa().decode("ascii")


def cache_bytes(int level):
    """One core's level-1 data (``level`` 1) or level-2 (2) cache size in bytes, or the size of
    the level-3 cache it shares (3), as the CPU reports it: the sizes the C core's kernels
    choose by; 0 where unknown."""
    return c.pyroi_cache_bytes(level)


def set_scratch_cache_limit(size_t limit):
    """Sets the bytes of the C core's spare scratch block kept between calls (pyroi.h:
    pyroi_set_scratch_cache_limit); returns the previous limit."""
    return c.pyroi_set_scratch_cache_limit(limit)


def scratch_cache_limit():
    """Bytes of the spare scratch block the C core keeps at most."""
    return c.pyroi_scratch_cache_limit()


def scratch_cache_bytes():
    """Bytes of the spare scratch block the C core keeps now (0: none)."""
    return c.pyroi_scratch_cache_bytes()


def version_number():
    """The C library's version as MAJOR * 10000 + MINOR * 100 + PATCH."""
    return c.pyroi_version_number()


def header_version_number():
    """PYROI_VERSION_NUMBER of the header this extension was compiled against."""
    return c.PYROI_VERSION_NUMBER


# Largest fixed sampling_ratio the C core accepts (_validate.MAX_SAMPLING_RATIO mirrors it).
MAX_SAMPLING_RATIO = c.PYROI_MAX_SAMPLING_RATIO


cdef int element_strides(const Py_ssize_t *byte_strides, Py_ssize_t itemsize, int ndim,
                         int64_t *out) except -1:
    cdef int i
    for i in range(ndim):
        if byte_strides[i] % itemsize != 0:
            raise ShapeError("pyroi: array strides must be multiples of the item size")
        out[i] = byte_strides[i] // itemsize
    return 0


cdef int64_t box_rows_stride(const Py_ssize_t *byte_strides, Py_ssize_t itemsize) except? -1:
    # The C API takes the coordinates of a box as consecutive elements.
    if byte_strides[1] != itemsize or byte_strides[0] % itemsize != 0:
        raise ShapeError("pyroi: box coordinates must be consecutive elements")
    return byte_strides[0] // itemsize


# ---- the one path of every operator call ---------------------------------------------------
# An operator's def below names its entry (a row of BINDING_ENTRIES in _bindings.h: which C
# function, which arrays, which params) and its numbers; run() marshals the arrays, checks
# that they fit each other, and calls C without the GIL.

ctypedef fused element:  # a call's tensors: float32, float64 or float16 bit patterns
    float
    double
    uint16_t

ctypedef fused coordinate:  # its boxes: float32 (also for float16 tensors) or float64
    float
    double


cdef b.Call numbers(int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                    double spatial_scale_w, int num_threads, int64_t sampling_ratio=0,
                    bint aligned=False, bint clockwise=False, bint angle_in_degrees=False,
                    bint merge_samples=False):
    """A call with the numbers of its params struct (a backward's pooled size is its
    grad_output's: pass 0)."""
    cdef b.Call call
    call.pooled_height = pooled_height
    call.pooled_width = pooled_width
    call.spatial_scale_h = spatial_scale_h
    call.spatial_scale_w = spatial_scale_w
    call.sampling_ratio = sampling_ratio
    call.aligned = aligned
    call.clockwise = clockwise
    call.angle_in_degrees = angle_in_degrees
    call.num_threads = num_threads
    call.merge_samples = merge_samples
    call.cancel = signal_watch()
    return call


cdef object run(const b.Entry *entry, b.Call *call, map, boxes, batch_indices, pooled,
                argmax=None, workspace=None, features=None, grad_boxes=None, bins=None):
    """Runs entry on the arrays: map (N, C, H, W) is the input of a forward and the
    grad_input of a backward (a query's is the shape tuple; a box backward's, the forward's
    input, also given as features), pooled (K, C', PH, PW) the output or grad_output,
    features (the map's shape) the forward's input that a backward from the input reads,
    grad_boxes (K, box_size) the box backward's result, bins deformable pooling's per-bin
    arrays (offset, mask, grad_offset, grad_mask), each (K, planes, PH, PW) or None; returns
    the workspace size a query answers."""
    cdef Py_ssize_t itemsize = (boxes if pooled is None else pooled).itemsize
    if itemsize == sizeof(uint16_t) and entry.float16:  # float16 tensors travel as their bits
        set_bins(<float>0, call, None)
        return run_typed(<uint16_t>0, <float>0, entry, call, map.view("u2"), boxes,
                         batch_indices, pooled.view("u2"), argmax, workspace,
                         None if features is None else features.view("u2"), grad_boxes)
    if itemsize == sizeof(double):
        set_bins(<double>0, call, bins)
        return run_typed(<double>0, <double>0, entry, call, map, boxes, batch_indices, pooled,
                         argmax, workspace, features, grad_boxes)
    set_bins(<float>0, call, bins)
    return run_typed(<float>0, <float>0, entry, call, map, boxes, batch_indices, pooled,
                     argmax, workspace, features, grad_boxes)


cdef int set_bins(real tensor_type, b.Call *call, bins) except -1:
    """Deformable pooling's per-bin arrays into the call (NULL where absent, and for every
    other operator): offset and mask read, grad_offset and grad_mask written."""
    cdef const real[:, :, :, :] read
    cdef real[:, :, :, :] written
    call.offset = call.mask = call.grad_offset = call.grad_mask = NULL
    offset, mask, grad_offset, grad_mask = (None,) * 4 if bins is None else bins
    if offset is not None:
        read = offset
        call.offset = <void *>&read[0, 0, 0, 0]
        element_strides(read.strides, sizeof(real), 4, call.offset_strides)
    if mask is not None:
        read = mask
        call.mask = <void *>&read[0, 0, 0, 0]
        element_strides(read.strides, sizeof(real), 4, call.mask_strides)
    if grad_offset is not None:
        written = grad_offset
        call.grad_offset = &written[0, 0, 0, 0]
        element_strides(written.strides, sizeof(real), 4, call.grad_offset_strides)
    if grad_mask is not None:
        written = grad_mask
        call.grad_mask = &written[0, 0, 0, 0]
        element_strides(written.strides, sizeof(real), 4, call.grad_mask_strides)
    return 0


cdef object run_typed(element tensor_type, coordinate box_type, const b.Entry *entry,
                      b.Call *call, map, boxes, batch_indices, pooled, argmax, workspace,
                      features, grad_boxes):
    cdef const element[:, :, :, :] features_view
    cdef const element[:, :, :, :] source  # the tensor the call reads
    cdef element[:, :, :, :] target  # the tensor it writes
    cdef const coordinate[:, :] box_view
    cdef coordinate[:, :] grad_box_view
    cdef const int64_t[::1] batch = batch_indices
    cdef const int64_t[:, :, :, :] argmax_in
    cdef int64_t[:, :, :, :] argmax_out
    cdef const int32_t[:, :, :, :] argmax_in32
    cdef int32_t[:, :, :, :] argmax_out32
    cdef unsigned char[::1] scratch
    cdef const Py_ssize_t *map_shape
    cdef const Py_ssize_t *pooled_shape = NULL
    cdef const Py_ssize_t *argmax_shape = NULL
    cdef const Py_ssize_t *argmax_strides = NULL
    cdef int i
    cdef c.pyroi_status status
    call.f64 = element is double
    call.f16 = element is uint16_t
    if entry.layout == b.FORWARD:
        source = map
        target = pooled
        call.map = <void *>&source[0, 0, 0, 0]
        call.pooled = &target[0, 0, 0, 0]
        element_strides(source.strides, sizeof(element), 4, call.map_strides)
        element_strides(target.strides, sizeof(element), 4, call.pooled_strides)
        map_shape = source.shape
        pooled_shape = target.shape
    elif entry.layout == b.BACKWARD:
        source = pooled
        target = map
        call.map = &target[0, 0, 0, 0]
        call.pooled = <void *>&source[0, 0, 0, 0]
        element_strides(target.strides, sizeof(element), 4, call.map_strides)
        element_strides(source.strides, sizeof(element), 4, call.pooled_strides)
        map_shape = target.shape
        pooled_shape = source.shape
        call.pooled_height = pooled_shape[2]
        call.pooled_width = pooled_shape[3]
    elif entry.layout == b.BOX_BACKWARD:  # map: the forward's input, read (as features)
        source = pooled
        features_view = map
        call.map = NULL
        call.pooled = <void *>&source[0, 0, 0, 0]
        element_strides(source.strides, sizeof(element), 4, call.pooled_strides)
        map_shape = features_view.shape
        pooled_shape = source.shape
        call.pooled_height = pooled_shape[2]
        call.pooled_width = pooled_shape[3]
    for i in range(4):
        call.map_shape[i] = map[i] if entry.layout == b.QUERY else map_shape[i]
    call.features = NULL
    for i in range(4):
        call.features_strides[i] = 0
    if features is not None:
        features_view = features
        for i in range(4):
            if features_view.shape[i] != map_shape[i]:
                raise ShapeError("pyroi: input and grad_input differ in shape")
        call.features = <void *>&features_view[0, 0, 0, 0]
        element_strides(features_view.strides, sizeof(element), 4, call.features_strides)
    if entry.box_size:
        box_view = boxes
        if box_view.shape[1] != entry.box_size:
            raise ShapeError(f"pyroi: boxes must have {entry.box_size} coordinates")
        call.boxes = <void *>&box_view[0, 0]
        call.box_row_stride = box_rows_stride(box_view.strides, sizeof(coordinate))
        call.num_rois = box_view.shape[0]
    else:
        call.num_rois = pooled_shape[0]
    call.batch_indices = <int64_t *>&batch[0]
    call.grad_boxes = NULL
    call.grad_box_row_stride = 0
    if grad_boxes is not None:
        grad_box_view = grad_boxes
        if (grad_box_view.shape[0] != call.num_rois
                or grad_box_view.shape[1] != entry.box_size):
            raise ShapeError(f"pyroi: grad_boxes must be ({call.num_rois}, {entry.box_size})")
        call.grad_boxes = &grad_box_view[0, 0]
        call.grad_box_row_stride = box_rows_stride(grad_box_view.strides, sizeof(coordinate))
    call.argmax = NULL
    # an argmax of the entry's width: read by a backward, written by a forward (when given)
    if entry.argmax_bytes == sizeof(int32_t) and entry.layout == b.BACKWARD:
        argmax_in32 = argmax
        call.argmax = <void *>&argmax_in32[0, 0, 0, 0]
        argmax_shape = argmax_in32.shape
        argmax_strides = argmax_in32.strides
    elif entry.argmax_bytes == sizeof(int32_t) and argmax is not None:
        argmax_out32 = argmax
        call.argmax = &argmax_out32[0, 0, 0, 0]
        argmax_shape = argmax_out32.shape
        argmax_strides = argmax_out32.strides
    elif entry.argmax_bytes and entry.layout == b.BACKWARD:
        argmax_in = argmax
        call.argmax = <void *>&argmax_in[0, 0, 0, 0]
        argmax_shape = argmax_in.shape
        argmax_strides = argmax_in.strides
    elif entry.argmax_bytes and argmax is not None:
        argmax_out = argmax
        call.argmax = &argmax_out[0, 0, 0, 0]
        argmax_shape = argmax_out.shape
        argmax_strides = argmax_out.strides
    for i in range(4):
        call.argmax_strides[i] = 0
    if argmax_strides != NULL:
        element_strides(argmax_strides, entry.argmax_bytes, 4, call.argmax_strides)
    call.workspace = NULL
    call.workspace_size = 0
    if workspace is not None:
        scratch = workspace
        call.workspace_size = scratch.shape[0]
        if call.workspace_size > 0:
            call.workspace = &scratch[0]
    check_shapes(entry, call, batch.shape[0], pooled_shape, argmax_shape)
    entry.fill_params(call)
    with nogil:
        status = entry.run(call)
    if is_roi_status(status) and entry.find_invalid_roi != NULL:
        call.failed_roi = -1
        entry.find_invalid_roi(call)
        check_status(status, call.failed_roi, entry.boxes_name.decode("ascii"))
    check_status(status)
    return call.workspace_size


cdef int check_shapes(const b.Entry *entry, const b.Call *call, Py_ssize_t batch_length,
                      const Py_ssize_t *pooled_shape, const Py_ssize_t *argmax_shape) except -1:
    """The C API derives the pooled tensor's shape (K, C', PH, PW) from its arguments (C' = C,
    or C / (PH * PW) for the position-sensitive ops): the arrays must have exactly that."""
    cdef int i
    cdef bint fits
    if batch_length != call.num_rois:
        raise ShapeError(f"pyroi: {call.num_rois} RoIs but {batch_length} batch indices")
    if pooled_shape == NULL:  # a query
        return 0
    fits = (pooled_shape[0] == call.num_rois and pooled_shape[2] == call.pooled_height
            and pooled_shape[3] == call.pooled_width)
    if entry.position_sensitive:  # in Python ints: no overflow
        fits = fits and (pooled_shape[1] * <object>call.pooled_height * call.pooled_width
                         == call.map_shape[1])
    else:
        fits = fits and pooled_shape[1] == call.map_shape[1]
    name = "output" if entry.layout == b.FORWARD else "grad_output"
    shape = tuple(pooled_shape[i] for i in range(4)) if not fits else None
    if not fits:
        raise ShapeError(
            f"pyroi: {name} shape {shape} does not match {call.num_rois} RoIs, "
            f"{call.map_shape[1]} channels and output size "
            f"({call.pooled_height}, {call.pooled_width})")
    for i in range(4 if argmax_shape != NULL else 0):
        if argmax_shape[i] != pooled_shape[i]:
            raise ShapeError(f"pyroi: argmax and {name} differ in shape")
    return 0


cdef bint is_roi_status(c.pyroi_status status) noexcept:
    return status == c.PYROI_E_INVALID_BOX or status == c.PYROI_E_INVALID_BATCH_INDEX


# ---- the operators: their entry, arrays and numbers ------------------------------------------

def roi_align_forward(input, boxes, batch_indices, output, int64_t pooled_height,
                      int64_t pooled_width, double spatial_scale_h, double spatial_scale_w,
                      int64_t sampling_ratio, bint aligned, int num_threads,
                      bint merge_samples=False):
    """RoIAlign forward into output (K, C, pooled_height, pooled_width); float16 tensors (or
    uint16 views of their bits) take float32 boxes, in every operator with a C _f16 entry.
    merge_samples: pyroi_roi_align_params.merge_samples (not bit-exact)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads, sampling_ratio, aligned,
                               False, False, merge_samples)
    run(&b.roi_align_forward, &call, input, boxes, batch_indices, output)


def roi_align_backward(grad_output, boxes, batch_indices, grad_input, double spatial_scale_h,
                       double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                       int num_threads, bint merge_samples=False):
    """RoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient (float16:
    as the forward; merge_samples: as the forward)."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads,
                               sampling_ratio, aligned, False, False,
                               merge_samples)
    run(&b.roi_align_backward, &call, grad_input, boxes, batch_indices, grad_output)


def roi_align_backward_boxes(grad_output, input, boxes, batch_indices, grad_boxes,
                             double spatial_scale_h, double spatial_scale_w,
                             int64_t sampling_ratio, bint aligned, int num_threads):
    """RoIAlign (avg) box backward: write grad_boxes (K, 4), the gradient of each box's x1,
    y1, x2, y2, from grad_output and the forward's input (float32 or float64)."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads,
                               sampling_ratio, aligned)
    run(&b.roi_align_backward_boxes, &call, input, boxes, batch_indices, grad_output, None,
        None, input, grad_boxes)


def roi_align_max_forward(input, boxes, batch_indices, output, argmax, int64_t pooled_height,
                          int64_t pooled_width, double spatial_scale_h, double spatial_scale_w,
                          int64_t sampling_ratio, bint aligned, int num_threads,
                          bint onnx=False):
    """RoIAlign max mode into output; argmax is an int64 array of the output's shape or None.
    onnx: ONNX's max over weighted taps (argmax: winner codes 4 * sample + tap), else mmcv's."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads, sampling_ratio, aligned)
    run(&b.roi_align_onnx_max_forward if onnx else &b.roi_align_max_forward, &call, input,
        boxes, batch_indices, output, argmax)


def roi_align_max_backward(grad_output, argmax, boxes, batch_indices, grad_input,
                           double spatial_scale_h, double spatial_scale_w,
                           int64_t sampling_ratio, bint aligned, int num_threads,
                           bint onnx=False):
    """RoIAlign max-mode backward: overwrite grad_input with the input gradient (onnx: of
    ONNX's max, from its winner codes; else of mmcv's)."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads,
                               sampling_ratio, aligned)
    run(&b.roi_align_onnx_max_backward if onnx else &b.roi_align_max_backward, &call,
        grad_input, boxes, batch_indices, grad_output, argmax)


def roi_pool_forward(input, boxes, batch_indices, output, argmax, int64_t pooled_height,
                     int64_t pooled_width, double spatial_scale_h, double spatial_scale_w,
                     int num_threads):
    """RoIPool forward into output (K, C, pooled_height, pooled_width) and, unless it is
    None, argmax (same shape, int64 or int32)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads)
    run(&b.roi_pool_forward_i32 if is_int32(argmax) else &b.roi_pool_forward, &call, input,
        boxes, batch_indices, output, argmax)


def roi_pool_backward(grad_output, argmax, batch_indices, grad_input, double spatial_scale_h,
                      double spatial_scale_w, int num_threads):
    """RoIPool backward: overwrite grad_input (N, C, H, W) with the input gradient, from an
    int64 or int32 argmax."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads)
    run(&b.roi_pool_backward_i32 if is_int32(argmax) else &b.roi_pool_backward, &call,
        grad_input, None, batch_indices, grad_output, argmax)


def roi_pool_backward_from_input(grad_output, input, boxes, batch_indices, grad_input,
                                 double spatial_scale_h, double spatial_scale_w,
                                 int num_threads):
    """RoIPool backward from the forward's input (N, C, H, W) and boxes instead of its argmax:
    overwrite grad_input (input's shape) with the same input gradient."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads)
    run(&b.roi_pool_backward_from_input, &call, grad_input, boxes, batch_indices, grad_output,
        None, None, input)


cdef bint is_int32(argmax):
    """Whether an argmax array has int32 entries (else int64, or it is None)."""
    return argmax is not None and argmax.itemsize == sizeof(int32_t)


def ps_roi_align_forward(input, boxes, batch_indices, output, int64_t pooled_height,
                         int64_t pooled_width, double spatial_scale_h,
                         double spatial_scale_w, int64_t sampling_ratio, int num_threads):
    """PSRoIAlign forward into output (K, C / (PH * PW), PH, PW)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads, sampling_ratio)
    run(&b.ps_roi_align_forward, &call, input, boxes, batch_indices, output)


def ps_roi_align_backward(grad_output, boxes, batch_indices, grad_input,
                          double spatial_scale_h, double spatial_scale_w,
                          int64_t sampling_ratio, int num_threads):
    """PSRoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads,
                               sampling_ratio)
    run(&b.ps_roi_align_backward, &call, grad_input, boxes, batch_indices, grad_output)


def ps_roi_pool_forward(input, boxes, batch_indices, output, int64_t pooled_height,
                        int64_t pooled_width, double spatial_scale_h, double spatial_scale_w,
                        int num_threads):
    """PSRoIPool forward into output (K, C / (PH * PW), PH, PW)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads)
    run(&b.ps_roi_pool_forward, &call, input, boxes, batch_indices, output)


def ps_roi_pool_backward(grad_output, boxes, batch_indices, grad_input, double spatial_scale_h,
                         double spatial_scale_w, int num_threads):
    """PSRoIPool backward: overwrite grad_input (N, C, H, W) with torchvision's gradient."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads)
    run(&b.ps_roi_pool_backward, &call, grad_input, boxes, batch_indices, grad_output)


def roi_align_rotated_forward(input, boxes, batch_indices, output, int64_t pooled_height,
                              int64_t pooled_width, double spatial_scale_h,
                              double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                              bint clockwise, bint angle_in_degrees, int num_threads):
    """Rotated RoIAlign forward into output (K, C, pooled_height, pooled_width); boxes are
    (K, 5) rows (cx, cy, w, h, angle)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads, sampling_ratio, aligned, clockwise,
                               angle_in_degrees)
    run(&b.roi_align_rotated_forward, &call, input, boxes, batch_indices, output)


def roi_align_rotated_backward(grad_output, boxes, batch_indices, grad_input,
                               double spatial_scale_h, double spatial_scale_w,
                               int64_t sampling_ratio, bint aligned, bint clockwise,
                               bint angle_in_degrees, int num_threads):
    """Rotated RoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads,
                               sampling_ratio, aligned, clockwise, angle_in_degrees)
    run(&b.roi_align_rotated_backward, &call, grad_input, boxes, batch_indices, grad_output)



def prroi_pool_forward(input, boxes, batch_indices, output, int64_t pooled_height,
                       int64_t pooled_width, double spatial_scale_h, double spatial_scale_w,
                       int num_threads):
    """PrRoIPool forward into output (K, C, PH, PW)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads)
    run(&b.prroi_pool_forward, &call, input, boxes, batch_indices, output)


def prroi_pool_backward(grad_output, boxes, batch_indices, grad_input, double spatial_scale_h,
                        double spatial_scale_w, int num_threads):
    """PrRoIPool backward: overwrite grad_input (N, C, H, W) with the input gradient."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads)
    run(&b.prroi_pool_backward, &call, grad_input, boxes, batch_indices, grad_output)


def prroi_pool_backward_boxes(grad_output, input, boxes, batch_indices, grad_boxes,
                              double spatial_scale_h, double spatial_scale_w, int num_threads):
    """PrRoIPool box backward: write grad_boxes (K, 4), the gradient of each box's x1, y1,
    x2, y2, from grad_output and the forward's input (float32 or float64)."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads)
    run(&b.prroi_pool_backward_boxes, &call, input, boxes, batch_indices, grad_output, None,
        None, input, grad_boxes)


# ---- deformable RoI pooling (docs/semantics.md §14): offset (K, 2, PH, PW), mask (K, 1, PH,
# PW), each None when absent ----
cdef b.Call deform_numbers(int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                           double spatial_scale_w, int64_t sampling_ratio, double gamma,
                           int num_threads):
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads, sampling_ratio)
    call.gamma = gamma
    return call


def deform_roi_pool_forward(input, boxes, batch_indices, offset, mask, output,
                            int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                            double spatial_scale_w, int64_t sampling_ratio, double gamma,
                            int num_threads):
    """Deformable RoI pooling forward into output (K, C, PH, PW) (float32 or float64)."""
    cdef b.Call call = deform_numbers(pooled_height, pooled_width, spatial_scale_h,
                                      spatial_scale_w, sampling_ratio, gamma, num_threads)
    run(&b.deform_roi_pool_forward, &call, input, boxes, batch_indices, output, None, None,
        None, None, (offset, mask, None, None))


def deform_roi_pool_backward(grad_output, boxes, batch_indices, offset, mask, grad_input,
                             double spatial_scale_h, double spatial_scale_w,
                             int64_t sampling_ratio, double gamma, int num_threads):
    """Deformable RoI pooling backward: overwrite grad_input (N, C, H, W)."""
    cdef b.Call call = deform_numbers(0, 0, spatial_scale_h, spatial_scale_w, sampling_ratio,
                                      gamma, num_threads)
    run(&b.deform_roi_pool_backward, &call, grad_input, boxes, batch_indices, grad_output,
        None, None, None, None, (offset, mask, None, None))


def deform_roi_pool_backward_offset(grad_output, input, boxes, batch_indices, offset, mask,
                                    grad_offset, grad_mask, double spatial_scale_h,
                                    double spatial_scale_w, int64_t sampling_ratio,
                                    double gamma, int num_threads):
    """Deformable RoI pooling's offset (K, 2, PH, PW) and mask (K, 1, PH, PW) gradients, each
    written when given (None: not computed), from grad_output and the forward's input."""
    cdef b.Call call = deform_numbers(0, 0, spatial_scale_h, spatial_scale_w, sampling_ratio,
                                      gamma, num_threads)
    run(&b.deform_roi_pool_backward_offset, &call, input, boxes, batch_indices, grad_output,
        None, None, input, None, (offset, mask, grad_offset, grad_mask))


# compatibility front-ends

# ---- crop_and_resize (docs/semantics.md §13): (N, C, H, W) and (K, C, ch, cw) as strides ----
cdef b.Call crop_numbers(int64_t crop_height, int64_t crop_width, int method, int placement,
                         double extrapolation_value, int num_threads):
    cdef b.Call call = numbers(crop_height, crop_width, 1.0, 1.0, num_threads)
    call.method = method
    call.placement = placement
    call.extrapolation_value = extrapolation_value
    return call


def crop_and_resize_forward(image, boxes, box_indices, crops, int64_t crop_height,
                            int64_t crop_width, int method, int placement,
                            double extrapolation_value, int num_threads):
    """crop_and_resize into crops (K, C, crop_height, crop_width) from image (N, C, H, W),
    any strides; method 0 bilinear, 1 nearest; placement 0 TensorFlow's, 1 exact ends."""
    cdef b.Call call = crop_numbers(crop_height, crop_width, method, placement,
                                    extrapolation_value, num_threads)
    run(&b.crop_and_resize_forward, &call, image, boxes, box_indices, crops)


def crop_and_resize_backward_image(grads, boxes, box_indices, grad_image, int method,
                                   int placement, int num_threads):
    """crop_and_resize's image gradient: overwrite grad_image (N, C, H, W) from grads
    (K, C, ch, cw)."""
    cdef b.Call call = crop_numbers(0, 0, method, placement, 0.0, num_threads)
    run(&b.crop_and_resize_backward_image, &call, grad_image, boxes, box_indices, grads)


def crop_and_resize_backward_boxes(grads, image, boxes, box_indices, grad_boxes, int method,
                                   int placement, int num_threads):
    """crop_and_resize's box gradient (bilinear): write grad_boxes (K, 4) from grads
    (K, C, ch, cw) and image (N, C, H, W)."""
    cdef b.Call call = crop_numbers(0, 0, method, placement, 0.0, num_threads)
    run(&b.crop_and_resize_backward_boxes, &call, image, boxes, box_indices, grads,
        None, None, image, grad_boxes)


def roi_align_backward_workspace_size(boxes, batch_indices, grad_input_shape,
                                      int64_t pooled_height, int64_t pooled_width,
                                      double spatial_scale_h, double spatial_scale_w,
                                      int64_t sampling_ratio, bint aligned, int num_threads):
    """Bytes of workspace roi_align_backward_with_workspace uses (the aclnn-style query)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               num_threads, sampling_ratio, aligned)
    return run(&b.roi_align_backward_workspace_size, &call, grad_input_shape, boxes,
               batch_indices, None)


def roi_align_backward_with_workspace(grad_output, boxes, batch_indices, grad_input,
                                      double spatial_scale_h, double spatial_scale_w,
                                      int64_t sampling_ratio, bint aligned, int num_threads,
                                      workspace):
    """RoIAlign backward with every scratch byte taken from workspace (uint8, any size)."""
    cdef b.Call call = numbers(0, 0, spatial_scale_h, spatial_scale_w, num_threads,
                               sampling_ratio, aligned)
    run(&b.roi_align_backward_with_workspace, &call, grad_input, boxes, batch_indices,
        grad_output, None, workspace)


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


# ---- calls of other shapes: the dtype's C function is picked in _bindings.h -------------------

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
        status = b.roi_rows_batch_indices(real is double, &rows[0, 0], num_rois, row_stride,
                                          rows.shape[1] - 1, num_images, &batch_indices[0],
                                          &failed_roi)
    if status == c.PYROI_E_INVALID_BATCH_INDEX:
        return 1, failed_roi
    if status == c.PYROI_E_INVALID_BOX:
        return 2, failed_roi
    check_status(status)
    return 0, -1


# ---- multi-scale (FPN) level assignment ------------------------------------------------------

cdef int fill_fpn_params(c.pyroi_fpn_level_params *params, int64_t min_level,
                         int64_t max_level, double canonical_scale, double canonical_level,
                         double eps) except -1:
    c.pyroi_fpn_level_params_init(params)
    params.min_level = min_level
    params.max_level = max_level
    params.canonical_scale = canonical_scale
    params.canonical_level = canonical_level
    params.eps = eps
    return 0


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
    fill_fpn_params(&params, min_level, max_level, canonical_scale, canonical_level, eps)
    with nogil:
        status = b.fpn_levels(real is double, &boxes[0, 0], num_rois, box_row_stride, &params,
                              &levels[0])
    check_status(status)


# ---- multi-scale RoIAlign: every level of a pyramid in one call -------------------------------

MAX_FPN_LEVELS = c.PYROI_MAX_FPN_LEVELS


cdef int marshal_pyramid(b.Pyramid *p, list maps, list scales, bint writes,
                         element dtype_tag, int64_t min_level, int64_t max_level,
                         double canonical_scale, double canonical_level,
                         double eps) except -1:
    """Fill p from the (N, C, H, W) arrays maps of dtype element (a forward's inputs, or the
    grad_inputs a backward writes; float16 ones as uint16 views) and the level assignment's
    numbers."""
    cdef const element[:, :, :, :] view
    cdef element[:, :, :, :] target
    cdef int l, i
    if len(maps) != len(scales) or not 0 < len(maps) <= c.PYROI_MAX_FPN_LEVELS:
        raise ShapeError(f"pyroi: a pyramid has 1 to {c.PYROI_MAX_FPN_LEVELS} maps, one scale "
                         f"each; got {len(maps)} maps and {len(scales)} scales")
    p.num_levels = len(maps)
    for l in range(p.num_levels):
        if writes:
            target = maps[l]
            view = target
        else:
            view = maps[l]
        p.maps[l] = <void *>&view[0, 0, 0, 0] if view.size > 0 else NULL
        for i in range(4):
            p.shapes[4 * l + i] = view.shape[i]
        element_strides(view.strides, sizeof(element), 4, &p.strides[4 * l])
        p.scales[l] = scales[l]
    fill_fpn_params(&p.levels, min_level, max_level, canonical_scale, canonical_level, eps)
    return 0


cdef int marshal_level_rois(b.Call *call, const b.Pyramid *p, const coordinate[:, :] boxes,
                            const int64_t[::1] batch_indices,
                            const element[:, :, :, :] pooled) except -1:
    """The RoIs and the pooled tensor (K, C, PH, PW) of a multi-scale call."""
    cdef int64_t num_rois = boxes.shape[0]
    if batch_indices.shape[0] != num_rois or pooled.shape[0] != num_rois:
        raise ShapeError(f"pyroi: {num_rois} RoIs but {batch_indices.shape[0]} batch indices "
                         f"and {pooled.shape[0]} pooled rows")
    if pooled.shape[1] != p.shapes[1]:
        raise ShapeError(f"pyroi: the pooled tensor has {pooled.shape[1]} channels, the "
                         f"pyramid {p.shapes[1]}")
    if element is double:
        if coordinate is float:
            raise DTypeError("pyroi: float64 tensors take float64 boxes")
    elif coordinate is double:
        raise DTypeError("pyroi: float64 boxes go with float64 tensors only")
    call.f64 = element is double
    call.f16 = element is uint16_t
    call.boxes = <void *>&boxes[0, 0] if num_rois > 0 else NULL
    call.num_rois = num_rois
    call.box_row_stride = box_rows_stride(boxes.strides, sizeof(coordinate))
    call.batch_indices = <int64_t *>&batch_indices[0] if num_rois > 0 else NULL
    call.pooled = <void *>&pooled[0, 0, 0, 0] if pooled.size > 0 else NULL
    element_strides(pooled.strides, sizeof(element), 4, call.pooled_strides)
    return 0


cdef levels_run(bint backward, list maps, list scales, const coordinate[:, :] boxes,
                const int64_t[::1] batch_indices, const element[:, :, :, :] pooled,
                int64_t sampling_ratio, bint aligned, int64_t min_level, int64_t max_level,
                double canonical_scale, double canonical_level, double eps, int num_threads):
    """A multi-scale call, forward (maps the inputs, pooled the output it writes) or backward
    (maps the grad_inputs it writes, pooled the grad_output)."""
    cdef b.Pyramid p
    cdef b.Call call = numbers(pooled.shape[2], pooled.shape[3], 1.0, 1.0, num_threads,
                               sampling_ratio, aligned)
    cdef c.pyroi_status status
    marshal_pyramid(&p, maps, scales, backward, <element>0, min_level, max_level,
                    canonical_scale, canonical_level, eps)
    marshal_level_rois(&call, &p, boxes, batch_indices, pooled)
    with nogil:
        if backward:
            status = b.roi_align_levels_backward(&call, &p)
        else:
            status = b.roi_align_levels_forward(&call, &p)
    check_status(status)


def roi_align_levels_forward(list inputs, list scales, const coordinate[:, :] boxes,
                             const int64_t[::1] batch_indices, element[:, :, :, :] output,
                             int64_t sampling_ratio, bint aligned, int64_t min_level,
                             int64_t max_level, double canonical_scale, double canonical_level,
                             double eps, int num_threads):
    """Multi-scale RoIAlign forward: each RoI pooled from its pyramid level into its row of
    output (K, C, PH, PW) (float16 tensors as uint16 views, with float32 boxes)."""
    levels_run(False, inputs, scales, boxes, batch_indices, output, sampling_ratio, aligned,
               min_level, max_level, canonical_scale, canonical_level, eps, num_threads)


def roi_align_levels_backward(const element[:, :, :, :] grad_output,
                              const coordinate[:, :] boxes,
                              const int64_t[::1] batch_indices, list grad_inputs, list scales,
                              int64_t sampling_ratio, bint aligned, int64_t min_level,
                              int64_t max_level, double canonical_scale, double canonical_level,
                              double eps, int num_threads):
    """Multi-scale RoIAlign backward: overwrite each level's grad_input (N, C, H_l, W_l)."""
    levels_run(True, grad_inputs, scales, boxes, batch_indices, grad_output, sampling_ratio,
               aligned, min_level, max_level, canonical_scale, canonical_level, eps,
               num_threads)


# Explaining one RoI (pyroi.viz): the geometry the operators use

cdef b.Call explained_box(const real[::1] box, int64_t pooled_height, int64_t pooled_width,
                          double spatial_scale_h, double spatial_scale_w,
                          int64_t sampling_ratio=0, bint aligned=False) except *:
    """The call of an explaining function (one thread) on box."""
    cdef b.Call call = numbers(pooled_height, pooled_width, spatial_scale_h, spatial_scale_w,
                               1, sampling_ratio, aligned)
    if box.shape[0] != 4:
        raise ShapeError("pyroi: a box has 4 coordinates")
    call.f64 = real is double
    return call


def roi_align_sample_grid(const real[::1] box, int64_t height, int64_t width,
                          int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                          double spatial_scale_w, int64_t sampling_ratio, bint aligned):
    """(grid_h, grid_w): the samples per bin of one box's RoIAlign grid."""
    cdef b.Call call = explained_box(box, pooled_height, pooled_width, spatial_scale_h,
                                     spatial_scale_w, sampling_ratio, aligned)
    cdef int64_t grid[2]
    cdef c.pyroi_status status
    with nogil:
        status = b.roi_align_sample_grid(&call, &box[0], height, width, grid)
    check_status(status)
    return grid[0], grid[1]


cdef b.AxisSamples axis_samples(real[::1] coords, int64_t[:, ::1] taps, real[:, ::1] weights,
                                int8_t[::1] in_map, real[::1] edges, int64_t bins,
                                str axis) except *:
    """One axis's sample arrays, checked to agree in length."""
    cdef b.AxisSamples samples
    if not (coords.shape[0] == taps.shape[0] == weights.shape[0] == in_map.shape[0]) or (
            taps.shape[1] != 2 or weights.shape[1] != 2):
        raise ShapeError(f"pyroi: the {axis} sample arrays differ in length")
    if edges.shape[0] != bins + 1:
        raise ShapeError("pyroi: bin edges need pooled size + 1 entries")
    samples.capacity = coords.shape[0]
    samples.coords = &coords[0]
    samples.taps = &taps[0, 0]
    samples.weights = &weights[0, 0]
    samples.in_map = &in_map[0]
    samples.edges = &edges[0]
    return samples


def roi_align_sample_axes(const real[::1] box, int64_t height, int64_t width,
                          int64_t pooled_height, int64_t pooled_width, double spatial_scale_h,
                          double spatial_scale_w, int64_t sampling_ratio, bint aligned,
                          real[::1] row_coords, int64_t[:, ::1] row_taps,
                          real[:, ::1] row_weights, int8_t[::1] row_in_map,
                          real[::1] row_edges, real[::1] col_coords,
                          int64_t[:, ::1] col_taps, real[:, ::1] col_weights,
                          int8_t[::1] col_in_map, real[::1] col_edges):
    """Fill the per-axis sample arrays of one box (sized from roi_align_sample_grid)."""
    cdef b.Call call = explained_box(box, pooled_height, pooled_width, spatial_scale_h,
                                     spatial_scale_w, sampling_ratio, aligned)
    cdef b.AxisSamples rows = axis_samples(row_coords, row_taps, row_weights, row_in_map,
                                           row_edges, pooled_height, "row")
    cdef b.AxisSamples cols = axis_samples(col_coords, col_taps, col_weights, col_in_map,
                                           col_edges, pooled_width, "column")
    cdef c.pyroi_status status
    with nogil:
        status = b.roi_align_sample_axes(&call, &box[0], height, width, &rows, &cols)
    check_status(status)


def roi_pool_bin_edges(const real[::1] box, int64_t height, int64_t width,
                       double spatial_scale_h, double spatial_scale_w,
                       int64_t[::1] roi_pixels, int64_t[:, ::1] row_edges,
                       int64_t[:, ::1] col_edges):
    """Fill RoIPool's quantised RoI (4,) and bin ranges (ph, 2), (pw, 2) of one box."""
    cdef b.Call call = explained_box(box, row_edges.shape[0], col_edges.shape[0],
                                     spatial_scale_h, spatial_scale_w)
    cdef c.pyroi_status status
    if roi_pixels.shape[0] != 4:
        raise ShapeError("pyroi: a box has 4 coordinates")
    if row_edges.shape[1] != 2 or col_edges.shape[1] != 2:
        raise ShapeError("pyroi: bin edges are (begin, end) pairs")
    with nogil:
        status = b.roi_pool_bin_edges(&call, &box[0], height, width, &roi_pixels[0],
                                      &row_edges[0, 0], &col_edges[0, 0])
    check_status(status)


def roi_pool_backward_from_input_pays(input_shape, int64_t num_rois, int64_t pooled_height,
                                      int64_t pooled_width):
    """Whether a RoIPool training layer should keep its input rather than an argmax: the C
    core's rule for this CPU (pyroi_roi_pool_backward_from_input_pays)."""
    cdef b.Call call = numbers(pooled_height, pooled_width, 1.0, 1.0, 1)
    cdef int64_t shape[4]
    cdef int pays = 0
    cdef c.pyroi_status status
    if len(input_shape) != 4:
        raise ShapeError("pyroi: an input shape has 4 entries")
    for i in range(4):
        shape[i] = input_shape[i]
    with nogil:
        status = b.roi_pool_backward_from_input_pays(&call, shape, num_rois, &pays)
    check_status(status)
    return pays != 0


# ---- result buffers -------------------------------------------------------------------
# Large results live in buffers allocated here (see pyroi/_results.py for the policy): when
# one is freed it is kept, up to a byte limit, and handed to the next result of the same size
# or, failing that, to one needing at least half of it (the smallest such buffer), so a loop
# of same-shaped calls, or one alternating between shapes (a detector's eval forward and train
# step), does not ask the OS for fresh pages on every call (the OS zeroes each fresh page
# first). Only the GIL guards the cache: buffers are made and
# freed by Python code. The buffers come from the C core's allocator: 64-byte aligned (one
# cache line: streamed stores start on whole lines), and pages of their own for blocks of
# 1 MiB and more, which go back to the OS when evicted (malloc would keep many of them).
cdef extern from "core/common.h" nogil:
    void *pyroi_aligned_malloc(size_t bytes)
    void pyroi_aligned_free(void *pointer)

cdef enum:
    _CACHE_SLOTS = 16

cdef void *_cached_data[_CACHE_SLOTS]
cdef size_t _cached_size[_CACHE_SLOTS]
cdef int _cached_count = 0
cdef size_t _cached_bytes = 0
cdef size_t _cache_limit = 0


cdef void *_cache_take(size_t size, size_t *capacity) noexcept:
    """A kept buffer for size bytes (its own size in *capacity): the most recently freed of
    exactly size bytes, else the smallest of at most 2 * size bytes; NULL if none."""
    global _cached_count, _cached_bytes
    cdef int i, best = -1
    cdef void *raw
    for i in range(_cached_count - 1, -1, -1):  # the most recently freed first
        if _cached_size[i] == size:
            best = i
            break
        if (_cached_size[i] > size and _cached_size[i] // 2 <= size and
                (best < 0 or _cached_size[i] < _cached_size[best])):
            best = i
    if best < 0:
        return NULL
    raw = _cached_data[best]
    capacity[0] = _cached_size[best]
    _cached_count -= 1
    _cached_bytes -= capacity[0]
    _cached_data[best] = _cached_data[_cached_count]
    _cached_size[best] = _cached_size[_cached_count]
    return raw


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
    cdef size_t capacity  # of the allocation: size, or more for a kept buffer reused
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __cinit__(self, size_t size):
        self.data = _cache_take(size, &self.capacity)
        if self.data == NULL:
            self.data = pyroi_aligned_malloc(size)
            if self.data == NULL:
                raise MemoryError()
            self.capacity = size
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
            _cache_give(self.data, self.capacity)
