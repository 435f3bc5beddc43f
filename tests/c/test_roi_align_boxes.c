/* test_roi_align_boxes.c - RoIAlign's box gradient (pyroi_roi_align_backward_boxes_*): a known
 * answer on a ramp, central finite differences of the forward in float64, the legacy size
 * clamp, the halo, bit-identity over thread counts, statuses naming each bad argument with
 * nothing written, and cancellation. */
#include "check.h"

#include <math.h>
#include <string.h>

/* A smooth, non-linear map: its samples' slopes differ from cell to cell. */
static double map_value(int64_t c, int64_t i, int64_t j)
{
    return sin(0.7 * (double)i + 0.3 * (double)c) + cos(1.1 * (double)j - 0.2 * (double)i);
}

/* The sum of grad * forward(box) over the pooled tensor, in float64. */
static double pooled_loss(const double *x, const int64_t shape[4], const int64_t strides[4],
                          const double *box, const double *grad, double *out,
                          const int64_t out_strides[4], const pyroi_roi_align_params *params)
{
    const int64_t zero = 0;
    const int64_t n = shape[1] * params->pooled_height * params->pooled_width;
    double loss = 0.0;
    int64_t i;
    CHECK_STATUS(pyroi_roi_align_forward_f64(x, shape, strides, box, 1, 4, &zero, out,
                                             out_strides, params),
                 PYROI_OK);
    for (i = 0; i < n; ++i) {
        loss += grad[i] * out[i];
    }
    return loss;
}

int main(void)
{
    enum { C = 2, H = 9, W = 11, PH = 2, PW = 3 };
    static double x[C * H * W];
    const int64_t shape[4] = {1, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t out_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    double grad[C * PH * PW], out[C * PH * PW], gb[4];
    pyroi_roi_align_params params;
    int64_t c, i, j;

    for (c = 0; c < C; ++c) {
        for (i = 0; i < H; ++i) {
            for (j = 0; j < W; ++j) {
                x[(c * H + i) * W + j] = map_value(c, i, j);
            }
        }
    }
    for (i = 0; i < C * PH * PW; ++i) {
        grad[i] = 0.25 + 0.1 * (double)i;
    }
    pyroi_roi_align_params_init(&params);

    { /* a ramp rising along x, one sample at the box centre: d/dx1 = d/dx2 = 1/2 */
        float ramp[16], one = 1.0f, g[4];
        const float box[4] = {1, 1, 2, 2};
        const int64_t rshape[4] = {1, 1, 4, 4}, rstrides[4] = {16, 16, 4, 1};
        const int64_t gstrides[4] = {1, 1, 1, 1};
        const int64_t zero = 0;
        pyroi_roi_align_params p;
        pyroi_roi_align_params_init(&p);
        p.sampling_ratio = 1;
        for (i = 0; i < 16; ++i) {
            ramp[i] = (float)(i % 4);
        }
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f32(&one, gstrides, ramp, rshape, rstrides,
                                                        box, 1, 4, &zero, g, 4, &p),
                     PYROI_OK);
        CHECK(g[0] == 0.5f && g[1] == 0.0f && g[2] == 0.5f && g[3] == 0.0f);
    }

    { /* central differences, aligned and legacy, fixed and adaptive grids */
        const double boxes[3][4] = {{1.23, 0.87, 7.61, 6.29}, {2.05, 1.4, 9.3, 7.7},
                                    {0.33, 2.11, 5.19, 4.72}};
        const int64_t ratios[2] = {2, 0};
        int b, r, aligned, coord;
        for (b = 0; b < 3; ++b) {
            for (r = 0; r < 2; ++r) {
                for (aligned = 0; aligned < 2; ++aligned) {
                    const int64_t zero = 0;
                    params.pooled_height = PH;
                    params.pooled_width = PW;
                    params.sampling_ratio = ratios[r];
                    params.aligned = aligned;
                    params.spatial_scale_h = params.spatial_scale_w = 0.9;
                    CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(
                                     grad, out_strides, x, shape, strides, boxes[b], 1, 4,
                                     &zero, gb, 4, &params),
                                 PYROI_OK);
                    for (coord = 0; coord < 4; ++coord) {
                        const double h = 1e-6;
                        double plus[4], minus[4], fd;
                        memcpy(plus, boxes[b], sizeof plus);
                        memcpy(minus, boxes[b], sizeof minus);
                        plus[coord] += h;
                        minus[coord] -= h;
                        fd = (pooled_loss(x, shape, strides, plus, grad, out, out_strides,
                                          &params) -
                              pooled_loss(x, shape, strides, minus, grad, out, out_strides,
                                          &params)) /
                             (2.0 * h);
                        CHECK_CLOSE(gb[coord], fd, 1e-6);
                    }
                }
            }
        }
    }

    { /* legacy: a box thinner than one pixel; its far edge moves nothing. Off the map
       * (beyond the halo): all zero. */
        const double thin[4] = {1.3, 2.2, 5.4, 2.6}, off[4] = {40, 40, 60, 60};
        const int64_t zero = 0;
        params.aligned = 0;
        params.sampling_ratio = 2;
        params.spatial_scale_h = params.spatial_scale_w = 1.0;
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        thin, 1, 4, &zero, gb, 4, &params),
                     PYROI_OK);
        CHECK(gb[3] == 0.0 && gb[1] != 0.0 && gb[0] != 0.0 && gb[2] != 0.0);
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        off, 1, 4, &zero, gb, 4, &params),
                     PYROI_OK);
        CHECK(gb[0] == 0.0 && gb[1] == 0.0 && gb[2] == 0.0 && gb[3] == 0.0);
    }

    { /* every thread count writes the same bits */
        enum { K = 7 };
        double boxes[K * 4], g1[K * 4], gk[K * 4], many_grad[K * C * PH * PW];
        int64_t batch[K], many_strides[4] = {C * PH * PW, PH * PW, PW, 1};
        int threads, k;
        for (k = 0; k < K; ++k) {
            boxes[4 * k] = 0.3 * k;
            boxes[4 * k + 1] = 0.2 * k - 0.5;
            boxes[4 * k + 2] = 4.0 + 0.9 * k;
            boxes[4 * k + 3] = 3.0 + 0.7 * k;
            batch[k] = 0;
        }
        for (i = 0; i < K * C * PH * PW; ++i) {
            many_grad[i] = cos((double)i);
        }
        params.sampling_ratio = -1;
        params.aligned = 1;
        params.num_threads = 1;
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(many_grad, many_strides, x, shape,
                                                        strides, boxes, K, 4, batch, g1, 4,
                                                        &params),
                     PYROI_OK);
        for (threads = 2; threads <= 3; ++threads) {
            params.num_threads = threads;
            CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(many_grad, many_strides, x, shape,
                                                            strides, boxes, K, 4, batch, gk,
                                                            4, &params),
                         PYROI_OK);
            CHECK(memcmp(g1, gk, sizeof g1) == 0);
        }
        params.num_threads = 0;
    }

    { /* statuses; nothing written on failure */
        const double box[8] = {1, 1, 5, 5, 2, 2, 6, 6}, bad_box[4] = {1, NAN, 5, 5};
        const int64_t zero = 0, one = 1, zeros[2] = {0, 0};
        double rows[8];
        pyroi_cancel token;
        memset(gb, 0x5a, sizeof gb);
        memcpy(rows, gb, sizeof gb);
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 1, 4, &zero, gb, 4, NULL),
                     PYROI_E_NULL_POINTER);
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 1, 4, &zero, NULL, 4, &params),
                     PYROI_E_NULL_POINTER);
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 2, 4, zeros, rows, 2, &params),
                     PYROI_E_INVALID_STRIDES);
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 1, 4, &one, gb, 4, &params),
                     PYROI_E_INVALID_BATCH_INDEX);
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        bad_box, 1, 4, &zero, gb, 4, &params),
                     PYROI_E_INVALID_BOX);
        params.sampling_ratio = PYROI_MAX_SAMPLING_RATIO + 1;
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 1, 4, &zero, gb, 4, &params),
                     PYROI_E_INVALID_SAMPLING_RATIO);
        params.sampling_ratio = 2;
        params.pooled_height = 0;
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 1, 4, &zero, gb, 4, &params),
                     PYROI_E_INVALID_OUTPUT_SIZE);
        params.pooled_height = PH;
        CHECK(memcmp(rows, gb, sizeof gb) == 0);
        pyroi_cancel_init(&token);
        token.requested = 1;
        params.cancel = &token;
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        box, 1, 4, &zero, gb, 4, &params),
                     PYROI_E_CANCELLED);
        params.cancel = NULL;
        /* no RoIs: nothing to write, not even a pointer */
        CHECK_STATUS(pyroi_roi_align_backward_boxes_f64(grad, out_strides, x, shape, strides,
                                                        NULL, 0, 4, NULL, NULL, 4, &params),
                     PYROI_OK);
    }
    return check_report("roi_align_boxes");
}
