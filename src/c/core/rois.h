/* rois.h - a call's own copy of the caller's RoIs (internal, not installed).
 *
 * The caller may write its boxes, batch indices or argmax while a call runs (another thread
 * of the process), and the C API promises that this can change results but never make a call
 * read or write outside its buffers. So every value that decides a size, an index or an
 * address is read from caller memory exactly once: each entry point copies the box rows and
 * the batch indices here, checks the batch indices in the copy, and every later step (box
 * validation, plan sizing and filling, the kernels) reads only the copy. (Argmax values are
 * checked where they are used, see the backward kernels.)
 *
 * The copy also groups the RoIs by image, by a stable sort of their batch indices, so that
 * time and memory follow the number of RoIs, not the batch size (a broadcast batch may have
 * 2^40 images). */
#ifndef PYROI_ROIS_H
#define PYROI_ROIS_H

#include "core/common.h"
#include "core/parallel.h"

typedef struct pyroi_rois {
    int64_t num_rois;
    int64_t coords;                /* values per box; row k at boxes + k * coords */
    const void *boxes;             /* packed rows of the caller's dtype */
    const int64_t *batch_indices;  /* each in [0, num_images) */
    /* after pyroi_rois_group_by_image: */
    int64_t *order; /* RoI indices sorted by batch index, stable (a call may reorder a group) */
    int64_t num_groups;            /* images with at least one RoI */
    const int64_t *group_image;    /* per group: its image, increasing */
    const int64_t *group_start;    /* group g: order[group_start[g] .. group_start[g + 1]) */
    /* the call's token and the clock of its polls: the copy travels with the call, so every
     * later single-threaded stage (grouping, box scans, tables) polls through it */
    pyroi_call_cancel cancel;
    void *allocation;
    int owned;                     /* allocation is freed by pyroi_rois_free */
} pyroi_rois;

/* Bytes the copy of num_rois RoIs of coords values of value_bytes each needs (for a caller's
 * workspace); 0 when that does not fit in a size_t. */
size_t pyroi_rois_bytes(int64_t num_rois, int64_t coords, size_t value_bytes);

/* Copies num_rois rows of coords values (value_bytes each; row k at byte offset
 * k * box_row_stride * value_bytes of boxes) and their batch indices, each read once, into
 * memory (pyroi_rois_bytes of it; NULL: malloc), and checks the copied indices lie in
 * [0, num_images). The rows' pointers and offsets must have been checked
 * (pyroi_check_roi_rows). On failure nothing is left to free: PYROI_E_NO_MEMORY or
 * PYROI_E_INVALID_BATCH_INDEX, or PYROI_E_CANCELLED
 * (cancel: the call's token, kept in rois->cancel with the clock of its polls, and checked as
 * the copy goes, see pyroi_cancel_check). */
pyroi_status pyroi_rois_copy(pyroi_rois *rois, const void *boxes, size_t value_bytes,
                             int64_t num_rois, int64_t box_row_stride, int64_t coords,
                             const int64_t *batch_indices, int64_t num_images, void *memory,
                             pyroi_cancel *cancel);

/* Fills order and the groups of a copy (O(num_rois log num_rois), no memory). PYROI_OK, or
 * PYROI_E_CANCELLED by the call's token (rois->cancel) during the sort. */
pyroi_status pyroi_rois_group_by_image(pyroi_rois *rois);

/* Sorts each group's RoIs by key[k] (per RoI), stably: equal keys keep RoI order. PYROI_OK,
 * or PYROI_E_CANCELLED by the call's token (order then unspecified). */
pyroi_status pyroi_rois_sort_groups(pyroi_rois *rois, const int64_t *key);

/* The group of image n: its RoIs are order[*begin .. *end) (empty when n has none). */
void pyroi_rois_of_image(const pyroi_rois *rois, int64_t n, int64_t *begin, int64_t *end);

void pyroi_rois_free(pyroi_rois *rois);

#endif /* PYROI_ROIS_H */
