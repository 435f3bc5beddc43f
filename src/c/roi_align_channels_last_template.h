/* roi_align_channels_last_template.h - RoIAlign avg forward on channels-last features read in
 * place: the caller's pixels already hold the channels side by side, so the lane-major kernel
 * (roi_align_forward_roi, one channel per lane) samples them where they are, with no gather
 * into a block and no block scratch. The bits are the lane-major kernel's, hence torchvision's.
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

/* Whether the avg forward samples the features in place: they fit (above), and the RoIs take
 * fewer samples than the images with RoIs have pixels. Each sample reads four pixels a lane
 * group at a time; gathering an image copies each of its pixels once into a block whose lane
 * groups are neighbours, where a pixel's next lane group in place is a whole pixel pitch away
 * (a power of two for the usual channel counts: those lines share few cache sets). Measured,
 * 1 thread, against gathering: the small call (0.12 samples per pixel) 6x faster, the mask
 * head (0.7) 1.6x faster, the box head (1.75) 1.4x slower, adaptive sampling (88) 1.9x
 * slower. */
static int PYROI_TYPED(roi_align_channels_last_in_place)(const PYROI_TYPED(roi_align_job) *job)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    return plan->num_rois > 0 &&
           PYROI_TYPED(roi_align_channels_last_fits)(job->map_shape, job->features_strides) &&
           plan->sampled_taps < (double)plan->rois.num_groups * (double)job->map_shape[2] *
                                    (double)job->map_shape[3];
}

/* Scratch elements per worker: two bin tiles and the staging of their streamed write-out. */
static int64_t PYROI_TYPED(roi_align_channels_last_scratch)(int64_t tile_pixels)
{
    return (2 * tile_pixels + PYROI_TYPED(roi_align_staging_pixels)(tile_pixels)) * PYROI_LANES;
}

/* Forward, work item = (image, pair of lane groups), like the image-block order but with the
 * caller's pixels in place of the block: the image's RoIs (by first sampled row, so that
 * consecutive RoIs read nearby pixels, which then come from the cache) on two lane groups at a
 * time (the pair shares each sample's taps and weights), or the last single group. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_forward_channels_last_task))
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *in_strides = job->features_strides, *out_strides = job->result_strides;
    const int64_t groups = in_strides[3] / PYROI_LANES; /* a pixel's pitch, in lane groups */
    const int64_t row_pixels = in_strides[2] / in_strides[3];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    T *tile = job->scratch + worker * job->scratch_stride;
    T *staging = job->stream_result ? tile + 2 * tile_elements : NULL;
    int64_t item, i, b;

    for (item = begin; item < end; ++item) {
        int64_t c0, channels;
        const int64_t group = PYROI_TYPED(lane_block_item)(item, job->map_shape[1],
                                                           2 * PYROI_LANES, &c0, &channels);
        const T *image =
            job->features + plan->rois.group_image[group] * in_strides[0] + c0;
        for (i = plan->rois.group_start[group]; i < plan->rois.group_start[group + 1]; ++i) {
            const int64_t k = plan->rois.order[i];
            T *out = job->result + PYROI_TYPED(roi_align_row)(job, k) * out_strides[0] +
                     c0 * out_strides[1];
            if ((i - plan->rois.group_start[group]) % 8 == 0 &&
                pyroi_cancel_requested(job->params->cancel)) {
                pyroi_stream_fence();
                return; /* an item holds every RoI of its image */
            }
            if (channels > PYROI_LANES) { /* the lane group counts are constants of each copy */
                PYROI_TYPED(roi_align_forward_roi)(plan, k, image, 2, groups, row_pixels,
                                                   pooled_height, pooled_width, tile,
                                                   tile_elements);
            } else {
                PYROI_TYPED(roi_align_forward_roi)(plan, k, image, 1, groups, row_pixels,
                                                   pooled_height, pooled_width, tile,
                                                   tile_elements);
            }
            for (b = 0; b * PYROI_LANES < channels; ++b) {
                PYROI_TYPED(roi_align_tile_to_bins)(tile + b * tile_elements, PYROI_LANES,
                                                    pooled_height, pooled_width,
                                                    out + b * PYROI_LANES * out_strides[1],
                                                    out_strides, staging);
            }
        }
    }
    pyroi_stream_fence(); /* the streamed outputs are visible to the caller */
}
