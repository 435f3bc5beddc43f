/* rois.c - a call's own copy of the caller's RoIs, grouped by image (see rois.h). */
#include "core/rois.h"

#include "core/parallel.h"

#include <stdlib.h>
#include <string.h>

/* int64 words per RoI: batch index, order, group image, group start, merge scratch. */
#define ROIS_WORDS_PER_ROI 5

size_t pyroi_rois_bytes(int64_t num_rois, int64_t coords, size_t value_bytes)
{
    const uint64_t per_roi = ROIS_WORDS_PER_ROI * sizeof(int64_t) + (uint64_t)coords * value_bytes;
    if (num_rois < 0 || coords < 0 || (uint64_t)coords > (uint64_t)(SIZE_MAX / 64) / value_bytes ||
        (uint64_t)num_rois >= (uint64_t)(SIZE_MAX / 4) / per_roi) {
        return 0;
    }
    return (size_t)((uint64_t)num_rois * per_roi + sizeof(int64_t)); /* + the last group end */
}

pyroi_status pyroi_rois_copy(pyroi_rois *rois, const void *boxes, size_t value_bytes,
                             int64_t num_rois, int64_t box_row_stride, int64_t coords,
                             const int64_t *batch_indices, int64_t num_images, void *memory,
                             pyroi_cancel *cancel)
{
    const size_t bytes = pyroi_rois_bytes(num_rois, coords, value_bytes);
    const size_t row_bytes = (size_t)coords * value_bytes;
    int64_t *words;
    unsigned char *rows;
    int64_t k, bad = -1;
    memset(rois, 0, sizeof(*rois));
    rois->cancel = pyroi_call_cancel_of(cancel);
    if (bytes == 0) {
        return PYROI_E_NO_MEMORY;
    }
    rois->owned = memory == NULL;
    rois->allocation = memory != NULL ? memory : malloc(bytes);
    if (rois->allocation == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    words = (int64_t *)rois->allocation;
    rows = (unsigned char *)(words + ROIS_WORDS_PER_ROI * num_rois + 1);
    for (k = 0; k < num_rois; ++k) {
        const int64_t n = pyroi_read_once_i64(batch_indices + k); /* checked, then kept */
        if (pyroi_cancel_at(&rois->cancel, k)) {
            pyroi_rois_free(rois);
            return PYROI_E_CANCELLED;
        }
        words[k] = n;
        if (bad < 0 && (n < 0 || n >= num_images)) {
            bad = k;
        }
        if (row_bytes > 0) { /* without coordinates boxes may be NULL */
            memcpy(rows + (size_t)k * row_bytes,
                   (const unsigned char *)boxes + k * box_row_stride * (int64_t)value_bytes,
                   row_bytes);
        }
    }
    if (bad >= 0) {
        pyroi_rois_free(rois);
        return PYROI_E_INVALID_BATCH_INDEX;
    }
    rois->num_rois = num_rois;
    rois->coords = coords;
    rois->boxes = rows;
    rois->batch_indices = words;
    return PYROI_OK;
}

/* Elements merged between two cancellation checks of the sort (well under a millisecond). */
#define ROIS_SORT_CHECK 65536

/* Stable bottom-up merge sort of order[0 .. count) by key[order[i]], scratch of count words.
 * Returns 0 when cancelled (order then unspecified). */
static int rois_sort(int64_t *order, int64_t count, const int64_t *key, int64_t *scratch,
                     pyroi_call_cancel *cancel)
{
    int64_t width, i, merged = 0, *from = order, *to = scratch;
    for (width = 1; width < count; width *= 2) {
        for (i = 0; i < count; i += 2 * width) {
            const int64_t mid = count - i < width ? count : i + width;
            const int64_t end = count - i < 2 * width ? count : i + 2 * width;
            int64_t a = i, b = mid, out = i;
            while (a < mid && b < end) {
                to[out++] = key[from[b]] < key[from[a]] ? from[b++] : from[a++];
            }
            while (a < mid) {
                to[out++] = from[a++];
            }
            while (b < end) {
                to[out++] = from[b++];
            }
            merged += end - i;
            if (merged >= ROIS_SORT_CHECK) {
                merged = 0;
                if (pyroi_cancel_check(cancel)) {
                    return 0;
                }
            }
        }
        {
            int64_t *swap = from;
            from = to;
            to = swap;
        }
    }
    if (from != order) {
        memcpy(order, from, (size_t)count * sizeof(int64_t));
    }
    return 1;
}

pyroi_status pyroi_rois_group_by_image(pyroi_rois *rois)
{
    const int64_t num_rois = rois->num_rois;
    const int64_t *images = rois->batch_indices;
    int64_t *order = (int64_t *)rois->allocation + num_rois;
    int64_t *group_image = order + num_rois;
    int64_t *group_start = group_image + num_rois;
    int64_t *scratch = group_start + num_rois + 1;
    int64_t k, sorted = 1;
    for (k = 0; k < num_rois; ++k) {
        order[k] = k;
        sorted &= k == 0 || images[k - 1] <= images[k];
    }
    /* detectors usually pass their RoIs image by image: no sort then */
    if (!sorted && !rois_sort(order, num_rois, images, scratch, &rois->cancel)) {
        return PYROI_E_CANCELLED;
    }
    rois->num_groups = 0;
    for (k = 0; k < num_rois; ++k) {
        if (k == 0 || images[order[k]] != images[order[k - 1]]) {
            group_image[rois->num_groups] = images[order[k]];
            group_start[rois->num_groups] = k;
            rois->num_groups += 1;
        }
    }
    group_start[rois->num_groups] = num_rois;
    rois->order = order;
    rois->group_image = group_image;
    rois->group_start = group_start;
    return PYROI_OK;
}

pyroi_status pyroi_rois_sort_groups(pyroi_rois *rois, const int64_t *key)
{
    int64_t *scratch = (int64_t *)rois->allocation + 4 * rois->num_rois + 1; /* as grouped */
    int64_t g;
    for (g = 0; g < rois->num_groups; ++g) {
        const int64_t begin = rois->group_start[g], end = rois->group_start[g + 1];
        if (pyroi_cancel_at(&rois->cancel, g) ||
            !rois_sort(rois->order + begin, end - begin, key, scratch, &rois->cancel)) {
            return PYROI_E_CANCELLED;
        }
    }
    return PYROI_OK;
}

void pyroi_rois_of_image(const pyroi_rois *rois, int64_t n, int64_t *begin, int64_t *end)
{
    int64_t lo = 0, hi = rois->num_groups;
    while (lo < hi) { /* the first group whose image is >= n */
        const int64_t mid = lo + (hi - lo) / 2;
        if (rois->group_image[mid] < n) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < rois->num_groups && rois->group_image[lo] == n) {
        *begin = rois->group_start[lo];
        *end = rois->group_start[lo + 1];
    } else {
        *begin = *end = 0;
    }
}

void pyroi_rois_free(pyroi_rois *rois)
{
    if (rois->owned) {
        free(rois->allocation);
    }
    rois->allocation = NULL;
}
