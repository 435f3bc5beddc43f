/* roi_align_bench.c - times the C core alone on the Mask R-CNN box-head workload, for
 * profiling (perf record, valgrind --tool=callgrind) without Python in the picture.
 *   cc -O3 -std=c99 -Isrc/c/include bench/roi_align_bench.c build/libpyroi.a -lm -lpthread
 *   ./a.out [fwd|bwd|max|max_argmax|onnx_max] [threads] [repeats] [nchw|nhwc] [rois] [size]
 * Each call prints its wall time and the process's CPU time (all threads).
 * (max: mmcv's max mode without argmax, max_argmax: with it, onnx_max: ONNX's without it;
 * nhwc: features, and the forward's output, stored channels-last and read in place; rois and
 * size: the RoI count, 1000, and the output size, 7 -- the mask head is 100 14)
 */
#define _POSIX_C_SOURCE 200809L
#include "pyroi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double uniform(unsigned long long *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv)
{
    enum { N = 2, C = 256, H = 200, W = 272 };
    const char *mode = argc > 1 ? argv[1] : "fwd";
    const int backward = strcmp(mode, "bwd") == 0;
    const int threads = argc > 2 ? atoi(argv[2]) : 1;
    const int repeats = argc > 3 ? atoi(argv[3]) : 5;
    const int nhwc = argc > 4 && strcmp(argv[4], "nhwc") == 0;
    const int64_t K = argc > 5 ? atoi(argv[5]) : 1000;
    const int64_t P = argc > 6 ? atoi(argv[6]) : 7;
    const int64_t shape[4] = {N, C, H, W};
    const int64_t nchw_strides[4] = {C * H * W, H * W, W, 1};
    const int64_t nhwc_strides[4] = {C * H * W, 1, W * C, C};
    const int64_t *strides = nhwc ? nhwc_strides : nchw_strides;
    const int64_t nchw_out[4] = {C * P * P, P * P, P, 1}, nhwc_out[4] = {C * P * P, 1, P * C, C};
    const int64_t *out_strides = nhwc && !backward ? nhwc_out : nchw_out;
    float *x = malloc(sizeof(float) * N * C * H * W);
    float *y = malloc(sizeof(float) * K * C * P * P);
    float *boxes = malloc(sizeof(float) * K * 4);
    int64_t *batch = malloc(sizeof(int64_t) * K);
    int64_t *argmax = strcmp(mode, "max_argmax") == 0 ? malloc(sizeof(int64_t) * K * C * P * P)
                                                      : NULL;
    unsigned long long seed = 1;
    pyroi_roi_align_params p;
    int64_t i;
    int r;

    for (i = 0; i < (int64_t)N * C * H * W; ++i) {
        x[i] = (float)uniform(&seed);
    }
    for (i = 0; i < (int64_t)K * C * P * P; ++i) {
        y[i] = 1.0f;
    }
    for (i = 0; i < K; ++i) {
        double side_w = exp(log(16) + uniform(&seed) * (log(256) - log(16)));
        double side_h = exp(log(16) + uniform(&seed) * (log(256) - log(16)));
        double cx = uniform(&seed) * 1088, cy = uniform(&seed) * 800;
        boxes[4 * i] = (float)(cx - side_w / 2);
        boxes[4 * i + 1] = (float)(cy - side_h / 2);
        boxes[4 * i + 2] = (float)(cx + side_w / 2);
        boxes[4 * i + 3] = (float)(cy + side_h / 2);
        batch[i] = i % N;
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = P;
    p.spatial_scale_h = p.spatial_scale_w = 0.25;
    p.sampling_ratio = 2;
    p.aligned = 1;
    p.num_threads = threads;
    for (r = 0; r < repeats; ++r) {
        /* CPU time too: on a shared machine it leaves out the time other processes ran */
        double t = clock_ms(CLOCK_MONOTONIC), cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        pyroi_status s;
        if (backward) {
            s = pyroi_roi_align_backward_f32(y, out_strides, boxes, K, 4, batch, x, shape,
                                             strides, &p);
        } else if (strncmp(mode, "max", 3) == 0) {
            s = pyroi_roi_align_max_forward_f32(x, shape, strides, boxes, K, 4, batch, y,
                                                out_strides, argmax, out_strides, &p);
        } else if (strcmp(mode, "onnx_max") == 0) {
            s = pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, boxes, K, 4, batch, y,
                                                     out_strides, &p);
        } else {
            s = pyroi_roi_align_forward_f32(x, shape, strides, boxes, K, 4, batch, y,
                                            out_strides, &p);
        }
        printf("%s %.2f ms, %.2f ms CPU (%s)\n", mode, clock_ms(CLOCK_MONOTONIC) - t,
               clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu, pyroi_status_string(s));
    }
    free(x);
    free(y);
    free(boxes);
    free(batch);
    free(argmax);
    return 0;
}
