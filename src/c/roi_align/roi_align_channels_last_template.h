/* roi_align_channels_last_template.h - RoIAlign's avg forward (and mmcv max mode's without
 * argmax) on channels-last features read in place: the caller's pixels already hold the channels side by side, so the lane-major kernel
 * (roi_align_forward_roi, one channel per lane) samples them where they are, with no gather
 * into a block (the scratch is one RoI's bin tiles). The bits are the lane-major kernel's,
 * hence torchvision's.
 * Included by roi_align.c once per dtype with T and PYROI_TYPED(name) defined. */

/* Whether the features can be sampled in place: channels packed (stride 1) and every pixel and
 * row a whole number of lane groups apart, so that a lane group of any pixel is one vector
 * load. Channel counts that are not a multiple of PYROI_LANES take the gathering orders. */
static int PYROI_TYPED(roi_align_channels_last_fits)(const int64_t shape[4],
                                                      const int64_t strides[4])
{
    return shape[1] > 0 && shape[1] % PYROI_LANES == 0 && strides[1] == 1 &&
           strides[3] > 0 && strides[3] % PYROI_LANES == 0 && strides[2] > 0 &&
           strides[2] % strides[3] == 0;
}

/* L1 data cache assumed where the CPU does not say (cpu.h): the common size. */
#define PYROI_DEFAULT_L1D_BYTES 32768

/* Largest per-worker scratch (a RoI's bin tiles for every channel) of the in-place order;
 * larger RoI outputs take the gathering orders. */
#define PYROI_CHANNELS_LAST_TILE_BYTES ((double)(16 << 20))

/* Whether the avg (or value-only max) forward samples the features in place: they fit (above), and a bin's taps,
 * whole pixels, fit in the L1 data cache. Work item = RoI: each bin reads its taps' pixels
 * whole, a pair of lane groups (128 bytes) after the other (roi_align_forward_roi's chunks),
 * so every line of a tap pixel is used while the pixel is in L1 -- a pixel's next pair is a
 * whole pixel pitch away in the other orders (a power of two for the usual channel counts:
 * those lines share a sixteenth of the cache sets). A bin's samples tap at most 4 pixels each;
 * with many samples per bin (adaptive sampling of large RoIs) the later chunks find its taps
 * evicted, and gathering each (image, channel block) into a block, which keeps a pixel's lanes
 * in one line, is faster. Measured on a 32 KB L1d, 1 thread, against gathering: box head (4
 * samples per bin) 2.2x faster, mask head 2.0x, adaptive sampling (16 and more) 1.5-2.9x
 * slower; VGG conv5 (4 samples per bin, 512 channels: 32 KB of taps) the same. */
static int PYROI_TYPED(roi_align_channels_last_in_place)(const PYROI_TYPED(roi_align_job) *job)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t l1d = pyroi_cpu_l1d_bytes() > 0 ? pyroi_cpu_l1d_bytes()
                                                  : PYROI_DEFAULT_L1D_BYTES;
    const double pixel_bytes = (double)job->map_shape[1] * (double)sizeof(T);
    double samples = 0.0;
    int64_t k;
    if (plan->num_rois == 0 ||
        !PYROI_TYPED(roi_align_channels_last_fits)(job->map_shape, job->features_strides) ||
        (double)job->params->pooled_height * (double)job->params->pooled_width * pixel_bytes >
            PYROI_CHANNELS_LAST_TILE_BYTES) {
        return 0;
    }
    for (k = 0; k < plan->num_rois; ++k) {
        samples += (double)plan->samples[k];
    }
    /* the mean bin's taps: 4 pixels a sample */
    return 4.0 * samples / (double)plan->num_rois * pixel_bytes <= (double)l1d;
}

/* Scratch elements per worker: the bin tiles of every channel of a RoI and the staging of
 * their streamed write-out. */
static int64_t PYROI_TYPED(roi_align_channels_last_scratch)(int64_t channels,
                                                            int64_t tile_pixels)
{
    return channels / PYROI_LANES * tile_pixels * PYROI_LANES +
           PYROI_TYPED(roi_align_staging_pixels)(tile_pixels) * PYROI_LANES;
}

/* mmcv max of RoI k in place (roi_align_max_template.h, where the max job is defined). */
struct PYROI_TYPED(roi_align_max_job);
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_roi_in_place)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, const T *image,
    int64_t channel_groups, int64_t groups, int64_t row_pixels, T *tile,
    int64_t tile_elements, PYROI_TYPED(roi_prefetch) *prefetch);

/* Forward, work item = RoI (in the plan's order, so that consecutive RoIs read nearby pixels,
 * which then come from the cache): every channel of the RoI from the caller's pixels, bin by
 * bin, pairs of lane groups one after the other (the last single group on its own), into the
 * worker's tiles, then written out. The reduction is avg (max_job NULL) or mmcv's max without
 * argmax (max_job its job), a constant of each task. Both prefetch the next bin row's pixels
 * while they compute one, where those come from memory (roi_align_prefetch_template.h). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_channels_last_items)(
    const PYROI_TYPED(roi_align_job) *job, const struct PYROI_TYPED(roi_align_max_job) *max_job,
    int64_t begin, int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *in_strides = job->features_strides, *out_strides = job->result_strides;
    const int64_t groups = in_strides[3] / PYROI_LANES; /* a pixel's pitch, in lane groups */
    const int64_t row_pixels = in_strides[2] / in_strides[3];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    const int64_t channel_groups = job->map_shape[1] / PYROI_LANES;
    T *tile = job->scratch + worker * job->scratch_stride;
    T *staging = job->stream_result ? tile + channel_groups * tile_elements : NULL;
    PYROI_TYPED(roi_prefetch) walk;
    PYROI_TYPED(roi_prefetch) *prefetch =
        PYROI_TYPED(roi_prefetch_worth)(in_strides[0] * (int64_t)sizeof(T)) ? &walk : NULL;
    int64_t i, b;

    PYROI_TYPED(roi_prefetch_init)(&walk, plan, in_strides[2] * (int64_t)sizeof(T),
                                   in_strides[3] * (int64_t)sizeof(T),
                                   job->map_shape[1] * (int64_t)sizeof(T));

    for (i = begin; i < end; ++i) {
        const int64_t k = plan->rois.order[i];
        const T *image = job->features + job->batch_indices[k] * in_strides[0];
        T *out = job->result + PYROI_TYPED(roi_align_row)(job, k) * out_strides[0];
        if ((i - begin) % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break;
        }
        /* the next RoI past the chunk's end too: a serial call's next chunk starts there (a
         * cancellable call's chunks are as small as one RoI) */
        if (i + 1 < plan->num_rois) {
            const int64_t next = plan->rois.order[i + 1];
            const T *next_image = job->features + job->batch_indices[next] * in_strides[0];
            PYROI_TYPED(roi_prefetch_rois)(&walk, k, image, next, next_image);
        } else {
            PYROI_TYPED(roi_prefetch_rois)(&walk, k, image, -1, NULL);
        }
        if (max_job != NULL) {
            PYROI_TYPED(roi_align_max_roi_in_place)(max_job, k, image, channel_groups, groups,
                                                    row_pixels, tile, tile_elements, prefetch);
        } else {
            if (channel_groups >= 2) { /* the lane group counts are constants of each copy */
                PYROI_TYPED(roi_align_forward_roi)(plan, k, image, 2, channel_groups / 2,
                                                   groups, row_pixels, pooled_height,
                                                   pooled_width, tile, tile_elements, prefetch);
            }
            if (channel_groups % 2 != 0) {
                PYROI_TYPED(roi_align_forward_roi)(
                    plan, k, image + (channel_groups - 1) * PYROI_LANES, 1, 1, groups,
                    row_pixels, pooled_height, pooled_width,
                    tile + (channel_groups - 1) * tile_elements, tile_elements,
                    channel_groups == 1 ? prefetch : NULL);
            }
        }
        for (b = 0; b < channel_groups; ++b) {
            PYROI_TYPED(roi_align_tile_to_bins)(tile + b * tile_elements, PYROI_LANES,
                                                pooled_height, pooled_width,
                                                out + b * PYROI_LANES * out_strides[1],
                                                out_strides, staging);
        }
    }
    pyroi_stream_fence(); /* the streamed outputs are visible to the caller */
}

/* The avg forward on channels-last features read in place, work item = RoI. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_forward_channels_last_task))
{
    PYROI_TYPED(roi_align_forward_channels_last_items)(
        (const PYROI_TYPED(roi_align_job) *)context, NULL, begin, end, worker);
}
