/* job_tensors_template.h - the tensors and RoIs of one call as the workers of PSRoIAlign,
 * PSRoIPool and rotated RoIAlign read them: the features read, the result written and the
 * call's one copy of the RoIs (rois.h). Included by those operators' templates once per dtype
 * with T and PYROI_TYPED(name) defined. */

typedef struct PYROI_TYPED(job_tensors) {
    const T *features; /* input (forward) or grad_output (backward) */
    const int64_t *features_shape;
    const int64_t *features_strides;
    const T *boxes; /* the call's copy of the RoIs */
    int64_t num_rois;
    int64_t box_row_stride;
    const int64_t *batch_indices;
    T *result; /* output (forward) or grad_input (backward) */
    const int64_t *result_shape;
    const int64_t *result_strides;
} PYROI_TYPED(job_tensors);

/* Features are read and result written (a NULL shape: one the tasks do not need), the RoIs
 * are the call's copy. */
static void PYROI_TYPED(job_tensors_init)(PYROI_TYPED(job_tensors) *tensors, const T *features,
                                          const int64_t *features_shape,
                                          const int64_t features_strides[4],
                                          const pyroi_rois *rois, T *result,
                                          const int64_t *result_shape,
                                          const int64_t result_strides[4])
{
    tensors->features = features;
    tensors->features_shape = features_shape;
    tensors->features_strides = features_strides;
    tensors->boxes = (const T *)rois->boxes;
    tensors->num_rois = rois->num_rois;
    tensors->box_row_stride = rois->coords;
    tensors->batch_indices = rois->batch_indices;
    tensors->result = result;
    tensors->result_shape = result_shape;
    tensors->result_strides = result_strides;
}
