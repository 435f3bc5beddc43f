/* roi_align_driver_template.h - RoIAlign's schedule and driver: which loop order a call takes
 * (direct, RoI regions or image blocks; its work items, workers and scratch), running it, and
 * the public avg entry points (forward, backward, backward with a caller's workspace).
 * Included by roi_align.c once per dtype with T and PYROI_TYPED(name) defined. */

/* ---- driver ----------------------------------------------------------------------------- */


/* Largest lane-major block per worker; bigger feature maps take the direct loop order. */
#define PYROI_BLOCK_SCRATCH_BYTES ((size_t)64 << 20)

/* The avg forward's image order takes channel blocks two at a time, interleaved per pixel
 * (roi_align_forward_roi), when one block is at most this large: the pair then stays near an
 * L2 cache. Measured, 1 thread, against single blocks: adaptive sampling on a 100 x 136 map
 * (870 KB blocks) 16% faster, VGG conv5 (38 x 50) 6% faster; on the 200 x 272 maps of the box
 * and mask heads (3.5 MB blocks) pairs gained nothing or lost up to 7%. */
#define PYROI_PAIR_BLOCK_BYTES ((double)(1 << 20))


/* The forward's image order gathers only the pixels its RoIs read (a footprint, see
 * roi_align_footprint_build) when that costs less than gathering whole images. The cost of a
 * footprint is its lines per channel plane plus PYROI_RUN_LINES per run: a row segment of 16
 * planes starts 16 streams that no prefetcher has followed (measured, 1 thread, 2 x 256 x
 * 200 x 272 float maps on huge pages: 64 boxes, 1874 lines in 676 runs of the 6800 lines of
 * a plane, gathered 19-20 ms against 23-30 ms whole; 100 boxes 14 x 14, 3754 lines in 1163
 * runs, 30-43 ms against 27-38 ms whole: about 4 lines per run). */
#define PYROI_RUN_LINES 4.0

/* The footprint of a forward's image order in *footprint, when it pays: 1, the caller frees
 * it; 0: whole images. */
static int PYROI_TYPED(roi_align_sparse_footprint)(const PYROI_TYPED(roi_align_job) *job,
                                                   PYROI_TYPED(roi_align_footprint) *footprint)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const double whole_lines =
        (double)plan->rois.num_groups *
        (double)((job->map_shape[2] * job->map_shape[3] + PYROI_LANES - 1) / PYROI_LANES);
    if (!PYROI_TYPED(roi_align_footprint_build)(plan, footprint, job->params->cancel)) {
        return 0;
    }
    if (footprint->lines + PYROI_RUN_LINES * (double)footprint->count < whole_lines) {
        return 1;
    }
    PYROI_TYPED(roi_align_footprint_free)(footprint);
    return 0;
}

/* The loop order of a call: the task, its work items and workers, and the scratch elements
 * per worker (0 for the direct orders). allow_lane_major = 0 forces a direct order. Depends
 * only on the shapes, the params and the plan's num_rois, sampled_taps and region_pixels. */
typedef struct PYROI_TYPED(roi_align_schedule) {
    pyroi_range_task task;
    int64_t items;
    int workers;
    double work_per_item; /* elementary operations per item, an estimate */
    int64_t scratch_stride;
    int64_t pair; /* channel blocks per work item of the image order */
    enum roi_align_order order;
} PYROI_TYPED(roi_align_schedule);

/* allow_pair: the avg forward (the one reduction with a two-block kernel). */
static PYROI_TYPED(roi_align_schedule) PYROI_TYPED(roi_align_plan_schedule)(
    const int64_t shape[4], const pyroi_roi_align_params *params,
    const PYROI_TYPED(roi_align_plan) *plan, int backward, int allow_lane_major,
    int allow_pair)
{
    const int64_t map_pixels = shape[2] * shape[3];
    const int64_t tile_pixels = params->pooled_height * params->pooled_width;
    const int64_t blocks = (shape[1] + PYROI_LANES - 1) / PYROI_LANES;
    /* the images a whole-image order visits: the backward writes every image, the forward
     * gathers only those with RoIs (however large a broadcast batch is) */
    const int64_t images = backward ? shape[0] : plan->rois.num_groups;
    const double map_elements = (double)images * (double)shape[1] * (double)map_pixels;
    const double sampled = plan->sampled_taps * (double)shape[1];
    /* lane-major orders need a block of the whole map per worker */
    const int lane_major = allow_lane_major && map_pixels > 0 && blocks > 0 &&
                           ((double)map_pixels + (double)tile_pixels +
                            (double)PYROI_TYPED(roi_align_staging_pixels)(tile_pixels)) * 64.0 <=
                               (double)PYROI_BLOCK_SCRATCH_BYTES;
    /* gathering whole images pays once the RoIs sample about a quarter of the map's elements,
     * or, forward, once the rows their samples tap hold a quarter of the map's pixels: short
     * row runs from 16 planes gather about 4.6 times slower per pixel than whole images
     * (measured: 64 boxes of 16-256 px at 1/4 on 2 x 200 x 272 maps take 11.1 ms by region,
     * 7.7 by image; 32 boxes 5.1 and 6.7). The backward writes every pixel of grad_input
     * either way (the region order zeroes the planes first, then gathers and writes back each
     * RoI's region), so its image order pays from a 64th (measured, 1 thread, same maps and
     * boxes: 8 boxes 15.7 ms by region, 19.5 by image; 16 boxes 21.2 and 16.9; 64 boxes 28.6
     * and 17.6) */
    const int whole_images =
        sampled * (backward ? 64.0 : 4.0) >= map_elements ||
        (!backward && plan->region_pixels * 4.0 >= (double)images * (double)map_pixels);
    PYROI_TYPED(roi_align_schedule) schedule;
    double work_per_item;

    schedule.scratch_stride = 0;
    schedule.pair = 1;
    if (lane_major && whole_images) {
        if (allow_pair && blocks > 1 &&
            (backward ||
             (double)map_pixels * (double)PYROI_LANE_BYTES <= PYROI_PAIR_BLOCK_BYTES)) {
            schedule.pair = 2; /* the backward's bands are sized for the pair */
        }
        schedule.items = images * ((blocks + schedule.pair - 1) / schedule.pair);
        work_per_item = (double)PYROI_LANES * (plan->sampled_taps / (double)images +
                                               (double)map_pixels);
        schedule.task = backward ? PYROI_TYPED(roi_align_backward_image_task)
                                 : PYROI_TYPED(roi_align_forward_image_task);
        schedule.order = ROI_ALIGN_ORDER_IMAGE;
    } else if (lane_major && backward) {
        schedule.items = blocks;
        work_per_item = (double)PYROI_LANES * ((double)shape[0] * (double)map_pixels +
                                               plan->sampled_taps);
        schedule.task = PYROI_TYPED(roi_align_backward_region_task);
        schedule.order = ROI_ALIGN_ORDER_REGION;
    } else if (lane_major) {
        schedule.items = plan->num_rois;
        work_per_item = sampled / (double)(plan->num_rois > 0 ? plan->num_rois : 1);
        schedule.task = PYROI_TYPED(roi_align_forward_region_task);
        schedule.order = ROI_ALIGN_ORDER_REGION;
    } else if (backward) {
        schedule.items = shape[1];
        work_per_item = (double)shape[0] * (double)map_pixels + plan->sampled_taps;
        schedule.task = PYROI_TYPED(roi_align_backward_direct_task);
        schedule.order = ROI_ALIGN_ORDER_DIRECT;
    } else {
        schedule.items = plan->num_rois;
        work_per_item = sampled / (double)(plan->num_rois > 0 ? plan->num_rois : 1);
        schedule.task = PYROI_TYPED(roi_align_forward_direct_task);
        schedule.order = ROI_ALIGN_ORDER_DIRECT;
    }
    schedule.workers = pyroi_parallel_workers(params->num_threads, schedule.items,
                                              work_per_item);
    schedule.work_per_item = work_per_item;
    if (lane_major) {
        schedule.scratch_stride =
            (schedule.pair * (map_pixels + tile_pixels) +
             PYROI_TYPED(roi_align_staging_pixels)(tile_pixels)) *
            PYROI_LANES;
        if (backward && schedule.order == ROI_ALIGN_ORDER_IMAGE) {
            schedule.scratch_stride +=
                PYROI_TYPED(roi_align_backward_extent_elements)(plan->num_rois);
        }
    }
    return schedule;
}

/* The schedule of a call whose forward reduction has the given tasks (NULL: avg's). */
static PYROI_TYPED(roi_align_schedule) PYROI_TYPED(roi_align_tasks_schedule)(
    const PYROI_TYPED(roi_align_job) *job, int backward, int allow_lane_major,
    const roi_align_forward_tasks *tasks)
{
    PYROI_TYPED(roi_align_schedule) schedule = PYROI_TYPED(roi_align_plan_schedule)(
        job->map_shape, job->params, job->plan, backward,
        allow_lane_major && (tasks == NULL || tasks->image != NULL), tasks == NULL);
    const int in_place = (tasks == NULL || tasks->channels_last != NULL) && !backward &&
                         allow_lane_major && job->half_features == NULL &&
                         PYROI_TYPED(roi_align_channels_last_in_place)(job);
    if (in_place) {
        /* the avg forward (or the reduction's channels_last task) samples channels-last
         * features in place */
        schedule.order = ROI_ALIGN_ORDER_DIRECT;
        schedule.task = tasks == NULL ? PYROI_TYPED(roi_align_forward_channels_last_task)
                                      : tasks->channels_last;
        schedule.items = job->plan->num_rois;
        schedule.work_per_item = job->plan->sampled_taps * (double)job->map_shape[1] /
                                 (double)schedule.items;
        schedule.workers = pyroi_parallel_workers(job->params->num_threads, schedule.items,
                                                  schedule.work_per_item);
        schedule.pair = 1;
        schedule.scratch_stride = PYROI_TYPED(roi_align_channels_last_scratch)(
            job->map_shape[1], job->params->pooled_height * job->params->pooled_width);
    }
    if (tasks != NULL && !in_place) {
        schedule.task = schedule.order == ROI_ALIGN_ORDER_IMAGE    ? tasks->image
                        : schedule.order == ROI_ALIGN_ORDER_REGION ? tasks->region
                                                                   : tasks->direct;
    }
    return schedule;
}

/* Whether a float16 call (T float; roi_align_half.h) runs in place: with its tensors set on
 * job (features: the input, or the backward's grad_output; result: the output, or
 * grad_input), the order it would take gathers all it reads into lane-major blocks and rounds
 * each result once as it writes it out: the forward's image and region orders (any
 * reduction's, tasks as roi_align_tasks_schedule), the backward's image and region orders
 * (the regions summed in the block, roi_align_backward_half_regions). The direct orders read
 * the map where it lies: those calls take the chunks. */
static int PYROI_TYPED(roi_align_half_in_place)(PYROI_TYPED(roi_align_job) *job, int backward,
                                                const uint16_t *features, uint16_t *result,
                                                const roi_align_forward_tasks *tasks)
{
    enum roi_align_order order;
    job->half_features = features;
    job->half_result = result;
    order = PYROI_TYPED(roi_align_tasks_schedule)(job, backward, 1, tasks).order;
    return order != ROI_ALIGN_ORDER_DIRECT;
}

/* Runs the forward (backward = 0) or backward over the plan, choosing the loop order; a
 * forward with tasks (non-NULL) runs that reduction's task of the chosen order, with context
 * (a struct that begins with job) as its argument. With a caller's workspace (job->arena), the
 * scratch comes from what is left of it: fewer workers when it holds fewer blocks, the direct
 * order when it holds none (same results). */
static pyroi_status PYROI_TYPED(roi_align_execute_tasks)(PYROI_TYPED(roi_align_job) *job,
                                                         int backward, void *context,
                                                         const roi_align_forward_tasks *tasks)
{
    PYROI_TYPED(roi_align_schedule) schedule =
        PYROI_TYPED(roi_align_tasks_schedule)(job, backward, 1, tasks);
    PYROI_TYPED(roi_align_footprint) footprint;
    PYROI_TYPED(roi_align_tiles) tiles;
    pyroi_status status;
    int large;

    job->scratch = NULL;
    job->footprint = !backward && schedule.order == ROI_ALIGN_ORDER_IMAGE &&
                             PYROI_TYPED(roi_align_sparse_footprint)(job, &footprint)
                         ? &footprint
                         : NULL;
    job->tiles = NULL;
    if (tasks == NULL && !backward && schedule.order == ROI_ALIGN_ORDER_REGION &&
        PYROI_TYPED(roi_align_tiles_build)(job->plan, &tiles, job->poll)) {
        /* the avg forward gathers RoI tiles, not regions of an image-sized block */
        schedule.task = PYROI_TYPED(roi_align_forward_tile_task);
        schedule.pair = job->map_shape[1] > PYROI_LANES ? 2 : 1;
        schedule.scratch_stride = PYROI_TYPED(roi_align_tiles_scratch)(
            &tiles, job->params->pooled_height * job->params->pooled_width, schedule.pair);
        job->tiles = &tiles;
    }
    job->scratch_stride = schedule.scratch_stride;
    job->pair = schedule.pair;
    /* results larger than the caches are streamed out where a task writes them once (a
     * float16 one by the backward's image order; the float16 bins of a forward take plain
     * stores); a float16 output is rounded through the staging area, which the tasks then
     * hand out */
    large = (backward ? (double)job->map_shape[0] * (double)job->map_shape[2] *
                            (double)job->map_shape[3]
                      : (double)job->plan->num_rois * (double)job->params->pooled_height *
                            (double)job->params->pooled_width) *
                (double)job->map_shape[1] *
                (double)(job->half_result != NULL ? sizeof(uint16_t) : sizeof(T)) >=
            pyroi_stream_bytes();
    job->stream_result = job->half_result != NULL || large;
    job->stream_half = job->half_result != NULL && large;
    if (schedule.scratch_stride > 0 && job->arena != NULL) {
        const size_t block_bytes = (size_t)schedule.scratch_stride * sizeof(T);
        const size_t fit = roi_align_arena_available(job->arena) / block_bytes;
        if (fit == 0) {
            schedule = PYROI_TYPED(roi_align_tasks_schedule)(job, backward, 0, tasks);
            job->scratch_stride = 0;
            job->pair = schedule.pair;
        } else {
            if ((size_t)schedule.workers > fit) {
                schedule.workers = (int)fit;
            }
            job->scratch = (T *)roi_align_arena_alloc(job->arena,
                                                      (size_t)schedule.workers * block_bytes);
        }
    } else if (schedule.scratch_stride > 0) {
        job->scratch = (T *)pyroi_aligned_malloc((size_t)schedule.workers *
                                                 (size_t)schedule.scratch_stride * sizeof(T));
    }
    if (schedule.scratch_stride > 0 && job->scratch == NULL) {
        status = PYROI_E_NO_MEMORY;
    } else {
        status = pyroi_parallel_for(schedule.workers, schedule.items, schedule.work_per_item,
                                    job->params->cancel, schedule.task, context);
    }
    if (job->arena == NULL) {
        pyroi_aligned_free(job->scratch);
    }
    if (job->footprint != NULL) {
        PYROI_TYPED(roi_align_footprint_free)(&footprint);
        job->footprint = NULL;
    }
    if (job->tiles != NULL) {
        PYROI_TYPED(roi_align_tiles_free)(&tiles);
        job->tiles = NULL;
    }
    return status;
}

static pyroi_status PYROI_TYPED(roi_align_execute)(PYROI_TYPED(roi_align_job) *job, int backward)
{
    return PYROI_TYPED(roi_align_execute_tasks)(job, backward, job, NULL);
}

/* The start of every RoIAlign call (avg and both max reductions, forward and backward):
 * validation (the argmax too when with_argmax: the forward's optional output, the backward's
 * input), then the plan over the map (forward: the input, backward: grad_input) as
 * roi_align_call_plan makes it (average: an avg call's); with *planned 0 the call returns the
 * status. map and pooled hold T, or float16 for a float16 call read in place. */
static pyroi_status PYROI_TYPED(roi_align_check_and_plan)(
    PYROI_TYPED(roi_align_plan) *plan, int backward, const void *map,
    const int64_t map_shape[4], const int64_t map_strides[4], const void *pooled,
    const int64_t pooled_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4], int with_argmax, const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    const pyroi_roi_align_params *params, int average, roi_align_arena *arena, int *planned)
{
    const pyroi_tensor_role pooled_role = backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT;
    pyroi_status status = roi_align_check_call(
        map, map_shape, map_strides, backward ? PYROI_TENSOR_OUTPUT : PYROI_TENSOR_INPUT, pooled,
        pooled_strides, pooled_role, boxes, num_rois, box_row_stride, batch_indices, params);
    *planned = 0;
    if (status == PYROI_OK && with_argmax) {
        const int64_t argmax_shape[4] = {num_rois, map_shape[1], params->pooled_height,
                                         params->pooled_width};
        status = pyroi_check_tensor4(argmax, argmax_shape, argmax_strides, pooled_role);
    }
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(roi_align_call_plan)(
        plan, backward ? pyroi_shape_is_empty(map_shape) : num_rois == 0 || map_shape[1] == 0,
        boxes, num_rois, box_row_stride, batch_indices, map_shape, params, average, arena,
        planned);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    return PYROI_TYPED(pyroi_roi_align_forward_rows)(input, input_shape, input_strides, boxes,
                                                     num_rois, box_row_stride, batch_indices,
                                                     NULL, output, output_strides, params);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    return PYROI_TYPED(pyroi_roi_align_backward_rows)(
        grad_output, grad_output_strides, boxes, num_rois, box_row_stride, batch_indices, NULL,
        grad_input, grad_input_shape, grad_input_strides, params);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_forward_rows)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const int64_t *rows,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int planned;
    pyroi_status status = PYROI_TYPED(roi_align_check_and_plan)(
        &plan, 0, input, input_shape, input_strides, output, output_strides, NULL, NULL, 0,
        boxes, num_rois, box_row_stride, batch_indices, params, 1, NULL, &planned);
    if (!planned) {
        return status;
    }
    status = PYROI_TYPED(roi_align_plan_order_by_rows)(&plan);
    if (status != PYROI_OK) {
        return status;
    }
    input = (const T *)pyroi_data_or_placeholder(input); /* a map without pixels may be NULL */
    PYROI_TYPED(roi_align_job_init)(&job, input, input_strides, output, output_strides,
                                    input_shape, params, &plan, NULL);
    job.rows = rows;
    status = PYROI_TYPED(roi_align_execute)(&job, 0);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward_rows)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const int64_t *rows,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int planned;
    pyroi_status status = PYROI_TYPED(roi_align_check_and_plan)(
        &plan, 1, grad_input, grad_input_shape, grad_input_strides, grad_output,
        grad_output_strides, NULL, NULL, 0, boxes, num_rois, box_row_stride, batch_indices,
        params, 1, NULL, &planned);
    if (!planned) {
        return status;
    }
    PYROI_TYPED(roi_align_job_init)(&job, grad_output, grad_output_strides, grad_input,
                                    grad_input_strides, grad_input_shape, params, &plan, NULL);
    job.rows = rows;
    status = PYROI_TYPED(roi_align_execute)(&job, 1);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

/* ---- backward with a caller's workspace (aclnn two-phase shape) ------------------------- */

pyroi_status PYROI_TYPED(pyroi_roi_align_backward_workspace_size)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const int64_t grad_input_shape[4],
    const pyroi_roi_align_params *params, size_t *workspace_size)
{
    static const int64_t broadcast[4] = {0, 0, 0, 0};
    static const unsigned char dummy = 0;
    PYROI_TYPED(roi_align_plan) counts; /* only num_rois, sampled_taps, region_pixels */
    PYROI_TYPED(roi_align_schedule) schedule;
    int64_t k, total_taps = 0, per_roi_words, words;
    size_t total = 0;
    pyroi_status status;
    if (workspace_size == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    *workspace_size = 0;
    status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois < 0 || grad_input_shape == NULL) {
        return num_rois < 0 ? PYROI_E_INVALID_SHAPE : PYROI_E_NULL_POINTER;
    }
    /* the shape alone (no data yet): element count within int64 */
    status = pyroi_check_tensor4(&dummy, grad_input_shape, broadcast, PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_rois(boxes, num_rois, box_row_stride, 4, batch_indices,
                              grad_input_shape[0]);
    if (status != PYROI_OK) {
        return status;
    }
    counts.num_rois = num_rois;
    counts.sampled_taps = 0;
    counts.region_pixels = 0; /* the forward's criterion; this is a backward */
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        int64_t row_taps, col_taps;
        status = PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params,
                                             grad_input_shape[2], grad_input_shape[3], &rows,
                                             &cols);
        if (status != PYROI_OK) {
            return status;
        }
        row_taps = PYROI_TYPED(pyroi_axis_tap_count)(&rows);
        col_taps = PYROI_TYPED(pyroi_axis_tap_count)(&cols);
        if (!pyroi_add_nonneg(total_taps, row_taps, &total_taps) ||
            !pyroi_add_nonneg(total_taps, col_taps, &total_taps)) {
            return PYROI_E_NO_MEMORY;
        }
        counts.sampled_taps += (double)row_taps * (double)col_taps;
    }
    if (grad_input_shape[0] == 0 || grad_input_shape[1] == 0 || grad_input_shape[2] == 0 ||
        grad_input_shape[3] == 0) {
        return PYROI_OK; /* the call writes nothing and needs no memory */
    }
    /* the copy of the RoIs and the plan, exactly as roi_align_call_plan sizes them */
    per_roi_words = ROI_ALIGN_PLAN_WORDS + (int64_t)(sizeof(pyroi_tap_range) / sizeof(int64_t)) *
                                               (params->pooled_height + params->pooled_width);
    if ((uint64_t)num_rois > (uint64_t)(SIZE_MAX / 16) / (uint64_t)per_roi_words ||
        (uint64_t)total_taps > (uint64_t)SIZE_MAX / sizeof(PYROI_TYPED(axis_tap)) ||
        pyroi_rois_bytes(num_rois, 4, sizeof(T)) == 0) {
        return PYROI_E_NO_MEMORY;
    }
    words = num_rois * per_roi_words + 1;
    if (!roi_align_workspace_add(&total, pyroi_rois_bytes(num_rois, 4, sizeof(T))) ||
        !roi_align_workspace_add(&total, (size_t)words * sizeof(int64_t)) ||
        !roi_align_workspace_add(&total, (size_t)(total_taps > 0 ? total_taps : 1) *
                                             sizeof(PYROI_TYPED(axis_tap)))) {
        return PYROI_E_NO_MEMORY;
    }
    /* the scratch blocks of the loop order the call will choose */
    schedule = PYROI_TYPED(roi_align_plan_schedule)(grad_input_shape, params, &counts, 1, 1, 1);
    if (schedule.scratch_stride > 0) {
        const size_t block_bytes = (size_t)schedule.scratch_stride * sizeof(T);
        if ((size_t)schedule.workers > SIZE_MAX / 4 / block_bytes ||
            !roi_align_workspace_add(&total, (size_t)schedule.workers * block_bytes)) {
            return PYROI_E_NO_MEMORY;
        }
    }
    *workspace_size = total;
    return PYROI_OK;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward_with_workspace)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params, void *workspace, size_t workspace_size)
{
    PYROI_TYPED(roi_align_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    roi_align_arena arena;
    int planned;
    pyroi_status status;
    if (workspace == NULL && workspace_size > 0) {
        return PYROI_E_NULL_POINTER;
    }
    arena.base = (unsigned char *)workspace;
    arena.size = workspace == NULL ? 0 : workspace_size;
    arena.used = 0;
    status = PYROI_TYPED(roi_align_check_and_plan)(
        &plan, 1, grad_input, grad_input_shape, grad_input_strides, grad_output,
        grad_output_strides, NULL, NULL, 0, boxes, num_rois, box_row_stride, batch_indices,
        params, 1, &arena, &planned);
    if (!planned) {
        return status;
    }
    PYROI_TYPED(roi_align_job_init)(&job, grad_output, grad_output_strides, grad_input,
                                    grad_input_strides, grad_input_shape, params, &plan, &arena);
    status = PYROI_TYPED(roi_align_execute)(&job, 1);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}
