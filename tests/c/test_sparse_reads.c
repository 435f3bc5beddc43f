/* The forward's image order reads only the pixels its RoIs' samples tap: a map whose other
 * pages cannot be read at all (PROT_NONE) must pool without a fault, and give the bytes that
 * RoI-by-RoI calls give. Several RoIs that together sample more than a quarter of a plane make
 * the call take the image order, which once gathered whole images (POSIX mmap/mprotect). */
#define _DEFAULT_SOURCE
#include "pyroi.h"
#include "check.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { CHANNELS = 32, HEIGHT = 64, ROIS = 4, POOLED = 7 };

/* Rows [FIRST_ROW, LAST_ROW] and the first page of each row are what the boxes' taps read. */
enum { FIRST_ROW = 8, LAST_ROW = 42 };

static void pool_on_guarded_map(int max_mode)
{
    const long page = sysconf(_SC_PAGESIZE);
    /* a row is two pages: the boxes read the first of them, never the second */
    const int64_t width = 2 * (int64_t)page / (int64_t)sizeof(float);
    const int64_t shape[4] = {1, CHANNELS, HEIGHT, width};
    const int64_t strides[4] = {CHANNELS * HEIGHT * width, HEIGHT * width, width, 1};
    const int64_t out_strides[4] = {CHANNELS * POOLED * POOLED, POOLED * POOLED, POOLED, 1};
    const size_t bytes = (size_t)(CHANNELS * HEIGHT * width) * sizeof(float);
    /* x1, y1, x2, y2 in pixels: taps in rows 9..40, columns 99..900 */
    const float boxes[ROIS * 4] = {100, 10, 900, 40, 120, 12, 880, 38,
                                   300, 10, 700, 40, 100, 20, 900, 30};
    const int64_t batch[ROIS] = {0, 0, 0, 0};
    static float together[ROIS * CHANNELS * POOLED * POOLED];
    static float alone[ROIS * CHANNELS * POOLED * POOLED];
    pyroi_roi_align_params p;
    float *map;
    int64_t c, h, i, k;

    map = (float *)mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    if (map == MAP_FAILED) {
        return;
    }
    for (i = 0; i < CHANNELS * HEIGHT * width; ++i) {
        map[i] = (float)((i * 7919) % 1009) / 64.0f;
    }
    for (c = 0; c < CHANNELS; ++c) {
        for (h = 0; h < HEIGHT; ++h) {
            float *row = map + c * strides[1] + h * width;
            const int unread = h < FIRST_ROW || h > LAST_ROW;
            CHECK(mprotect(unread ? (void *)row : (void *)(row + width / 2),
                           (size_t)(unread ? 2 : 1) * (size_t)page, PROT_NONE) == 0);
        }
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = POOLED;
    p.sampling_ratio = 2;
    p.aligned = 1;
    p.num_threads = 1;
    memset(together, 0, sizeof(together));
    memset(alone, 0xff, sizeof(alone));
    if (max_mode) {
        CHECK_STATUS(pyroi_roi_align_max_forward_f32(map, shape, strides, boxes, ROIS, 4, batch,
                                                     together, out_strides, NULL, NULL, &p),
                     PYROI_OK);
    } else {
        CHECK_STATUS(pyroi_roi_align_forward_f32(map, shape, strides, boxes, ROIS, 4, batch,
                                                 together, out_strides, &p),
                     PYROI_OK);
    }
    for (k = 0; k < ROIS; ++k) { /* one RoI: the RoI-region order */
        float *out = alone + k * out_strides[0];
        if (max_mode) {
            CHECK_STATUS(pyroi_roi_align_max_forward_f32(map, shape, strides, boxes + 4 * k, 1,
                                                         4, batch, out, out_strides, NULL,
                                                         NULL, &p),
                         PYROI_OK);
        } else {
            CHECK_STATUS(pyroi_roi_align_forward_f32(map, shape, strides, boxes + 4 * k, 1, 4,
                                                     batch, out, out_strides, &p),
                         PYROI_OK);
        }
    }
    CHECK(memcmp(together, alone, sizeof(together)) == 0);
    CHECK(munmap(map, bytes) == 0);
}

int main(void)
{
    pool_on_guarded_map(0);
    pool_on_guarded_map(1);
    return check_report("test_sparse_reads");
}
