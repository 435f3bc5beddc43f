/* Rotated RoIAlign: known answers (detectron2 tests, docs/semantics.md §7.1 / §11.4), agreement
 * with pyroi_roi_align at angle 0, degrees / radians / clockwise equivalences, the adjoint
 * identity, thread-count independence, huge boxes, and every reachable status code. */
#include "pyroi.h"
#include "check.h"

#include <float.h>
#include <string.h>

static const double detectron2_expected[16] = {4.5, 5,    5.5, 6,  7,  7.5,  8,  8.5,
                                               9.5, 10, 10.5, 11, 12, 12.5, 13, 13.5};
static const int64_t strides_4x4[4] = {16, 16, 4, 1};

static void rotated_params(pyroi_roi_align_rotated_params *p, int64_t pooled)
{
    pyroi_roi_align_rotated_params_init(p);
    p->pooled_height = p->pooled_width = pooled;
}

static void test_defaults(void)
{
    pyroi_roi_align_rotated_params p;
    CHECK_PARAMS_INIT(pyroi_roi_align_rotated_params_init, p);
    CHECK(p.sampling_ratio == 0);
    CHECK(p.aligned == 1 && p.clockwise == 0 && p.angle_in_degrees == 1);
}

/* detectron2 test_forward_output_0_90_180_270: arange(25) as 5x5, box (2, 2, 2, 2, 90 i),
 * 4x4 output, adaptive sampling: the 0-degree answer turned by -90 i degrees. */
static void test_detectron2_rotations(void)
{
    const int64_t shape[4] = {1, 1, 5, 5}, strides[4] = {25, 25, 5, 1};
    const int64_t batch[1] = {0};
    float x[25], y[16];
    pyroi_roi_align_rotated_params p;
    int i, r, c;

    check_ramp_f32(x, 25);
    rotated_params(&p, 4);
    for (i = 0; i < 4; ++i) {
        const float box[5] = {2, 2, 2, 2, (float)(90 * i)};
        CHECK_STATUS(pyroi_roi_align_rotated_forward_f32(x, shape, strides, box, 1, 5, batch, y,
                                                         strides_4x4, &p), PYROI_OK);
        for (r = 0; r < 4; ++r) {
            for (c = 0; c < 4; ++c) {
                /* turning the answer clockwise i times: out[r][c] = E[rr][cc] */
                int rr = r, cc = c, t;
                for (t = 0; t < i; ++t) {
                    const int nr = 3 - cc, nc = rr; /* inverse of one clockwise turn */
                    rr = nr;
                    cc = nc;
                }
                if (i == 0) {
                    CHECK(y[4 * r + c] == (float)detectron2_expected[4 * rr + cc]);
                } else {
                    CHECK_CLOSE(y[4 * r + c], detectron2_expected[4 * rr + cc], 1e-6);
                }
            }
        }
    }
}

/* detectron2 test_empty_box: box (2, 3, 0, 0, 0), 7x7 output: zeros, zero gradient. */
static void test_zero_size_box(void)
{
    const int64_t shape[4] = {1, 1, 5, 5}, strides[4] = {25, 25, 5, 1};
    const int64_t out_strides[4] = {49, 49, 7, 1};
    const int64_t batch[1] = {0};
    const double box[5] = {2, 3, 0, 0, 0};
    double x[25], y[49], g[49], gx[25];
    unsigned long long seed = 3;
    pyroi_roi_align_rotated_params p;
    int i;

    for (i = 0; i < 25; ++i) {
        x[i] = check_random(&seed);
        gx[i] = -1;
    }
    for (i = 0; i < 49; ++i) {
        y[i] = -1;
        g[i] = 1;
    }
    rotated_params(&p, 7);
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x, shape, strides, box, 1, 5, batch, y,
                                                     out_strides, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_rotated_backward_f64(g, out_strides, box, 1, 5, batch, gx, shape,
                                                      strides, &p), PYROI_OK);
    for (i = 0; i < 49; ++i) {
        CHECK(y[i] == 0.0);
    }
    for (i = 0; i < 25; ++i) {
        CHECK(gx[i] == 0.0);
    }
}

/* With angle 0 and exact (dyadic) coordinates, rotated RoIAlign equals pyroi_roi_align on the
 * box (cx - w/2, cy - h/2, cx + w/2, cy + h/2), forward and backward, bit for bit. The 64x64
 * box with one output bin has 4096 samples in one bin: more than one flush buffer. */
static void test_angle_zero_equals_roi_align(void)
{
    enum { N = 2, C = 2, H = 64, W = 64, K = 6, P = 2 };
    static double x[N * C * H * W], gx_a[N * C * H * W], gx_b[N * C * H * W];
    const int64_t shape[4] = {N, C, H, W};
    const int64_t strides[4] = {C * H * W, H * W, W, 1};
    const int64_t out_strides[4] = {C * P * P, P * P, P, 1};
    const int64_t out_strides_1[4] = {C, 1, 1, 1};
    /* cx, cy, w, h (angle 0) */
    /* every bin size and grid keeps the sample offsets exact binary fractions; the last box is
     * inverted in x */
    static const double rotated[K][4] = {{32, 32, 64, 64}, {10, 20, 8, 12},  {3.5, 60, 16, 4},
                                         {-2, 5, 8, 12},   {62, 63, 12, 40}, {40, 33, -8, 6}};
    const int64_t batch[K] = {0, 1, 0, 1, 0, 1};
    double rot_boxes[K * 5], boxes[K * 4];
    double y_a[K * C * P * P], y_b[K * C * P * P], g[K * C * P * P];
    unsigned long long seed = 11;
    static const int ratios[] = {0, 2, 4};
    int i, k, aligned, pooled;
    size_t r;

    for (i = 0; i < N * C * H * W; ++i) {
        x[i] = check_random(&seed) - 0.5;
    }
    for (i = 0; i < K * C * P * P; ++i) {
        g[i] = check_random(&seed) - 0.5;
    }
    for (k = 0; k < K; ++k) {
        rot_boxes[5 * k + 0] = rotated[k][0];
        rot_boxes[5 * k + 1] = rotated[k][1];
        rot_boxes[5 * k + 2] = rotated[k][2];
        rot_boxes[5 * k + 3] = rotated[k][3];
        rot_boxes[5 * k + 4] = 0.0;
        boxes[4 * k + 0] = rotated[k][0] - rotated[k][2] / 2;
        boxes[4 * k + 1] = rotated[k][1] - rotated[k][3] / 2;
        boxes[4 * k + 2] = rotated[k][0] + rotated[k][2] / 2;
        boxes[4 * k + 3] = rotated[k][1] + rotated[k][3] / 2;
    }
    for (pooled = 1; pooled <= P; ++pooled) {
        const int64_t *os = pooled == 1 ? out_strides_1 : out_strides;
        for (aligned = 0; aligned <= 1; ++aligned) {
            for (r = 0; r < sizeof(ratios) / sizeof(ratios[0]); ++r) {
                pyroi_roi_align_rotated_params rp;
                pyroi_roi_align_params ap;
                /* legacy mode widens sizes below 1 about the centre here, about the first
                 * corner in roi_align: leave the inverted box out there */
                const int64_t num = aligned ? K : K - 1;
                rotated_params(&rp, pooled);
                rp.sampling_ratio = ratios[r];
                rp.aligned = aligned;
                rp.spatial_scale_h = rp.spatial_scale_w = 0.5;
                pyroi_roi_align_params_init(&ap);
                ap.pooled_height = ap.pooled_width = pooled;
                ap.sampling_ratio = ratios[r];
                ap.aligned = aligned;
                ap.spatial_scale_h = ap.spatial_scale_w = 0.5;
                CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x, shape, strides, rot_boxes, num,
                                                                 5, batch, y_a, os, &rp), PYROI_OK);
                CHECK_STATUS(pyroi_roi_align_forward_f64(x, shape, strides, boxes, num, 4, batch,
                                                         y_b, os, &ap), PYROI_OK);
                for (i = 0; i < num * C * pooled * pooled; ++i) {
                    CHECK(y_a[i] == y_b[i]);
                }
                CHECK_STATUS(pyroi_roi_align_rotated_backward_f64(g, os, rot_boxes, num, 5, batch,
                                                                  gx_a, shape, strides, &rp),
                             PYROI_OK);
                CHECK_STATUS(pyroi_roi_align_backward_f64(g, os, boxes, num, 4, batch, gx_b, shape,
                                                          strides, &ap), PYROI_OK);
                for (i = 0; i < N * C * H * W; ++i) {
                    CHECK(gx_a[i] == gx_b[i]);
                }
            }
        }
    }
}

/* Degrees, radians and clockwise agree exactly when the angles convert exactly. */
static void test_angle_conventions(void)
{
    enum { H = 9, W = 11, K = 3, P = 3 };
    const int64_t shape[4] = {1, 1, H, W}, strides[4] = {H * W, H * W, W, 1};
    const int64_t out_strides[4] = {P * P, P * P, P, 1};
    const int64_t batch[K] = {0, 0, 0};
    const float degrees[K] = {30.0f, -117.5f, 400.0f};
    float box_deg[K * 5], box_deg_cw[K * 5], box_rad_cw[K * 5];
    float x[H * W], y_a[K * P * P], y_b[K * P * P], y_c[K * P * P];
    unsigned long long seed = 5;
    pyroi_roi_align_rotated_params p;
    int i, k;

    for (i = 0; i < H * W; ++i) {
        x[i] = (float)check_random(&seed);
    }
    for (k = 0; k < K; ++k) {
        float *a = &box_deg[5 * k], *b = &box_deg_cw[5 * k], *c = &box_rad_cw[5 * k];
        a[0] = b[0] = c[0] = 4.25f + (float)k;
        a[1] = b[1] = c[1] = 5.5f - (float)k;
        a[2] = b[2] = c[2] = 6.0f;
        a[3] = b[3] = c[3] = 3.5f;
        a[4] = degrees[k];
        b[4] = -degrees[k];
        /* the radians the degrees convert to, negated for clockwise */
        c[4] = -(float)((double)degrees[k] * 3.14159265358979323846 / 180.0);
    }
    rotated_params(&p, P);
    p.sampling_ratio = 2;
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f32(x, shape, strides, box_deg, K, 5, batch, y_a,
                                                     out_strides, &p), PYROI_OK);
    p.clockwise = 1;
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f32(x, shape, strides, box_deg_cw, K, 5, batch,
                                                     y_b, out_strides, &p), PYROI_OK);
    p.angle_in_degrees = 0;
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f32(x, shape, strides, box_rad_cw, K, 5, batch,
                                                     y_c, out_strides, &p), PYROI_OK);
    for (i = 0; i < K * P * P; ++i) {
        CHECK(y_a[i] == y_b[i]);
        CHECK(y_a[i] == y_c[i]);
    }
}

/* <fwd(x), g> == <x, bwd(g)> in float64 over random rotated boxes, and the thread count does
 * not change a single bit. */
static void test_adjoint_and_threads(void)
{
    enum { N = 2, C = 5, H = 13, W = 10, K = 40, PH = 3, PW = 2 };
    static double x[N * C * H * W], gx[N * C * H * W], gx3[N * C * H * W];
    static double y[K * C * PH * PW], y3[K * C * PH * PW], gy[K * C * PH * PW];
    const int64_t shape[4] = {N, C, H, W};
    const int64_t strides[4] = {C * H * W, H * W, W, 1};
    const int64_t out_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    double boxes[K * 5];
    int64_t batch[K];
    unsigned long long seed = 99;
    pyroi_roi_align_rotated_params p;
    int aligned, ratio, k;

    check_random_fill(x, N * C * H * W, -0.5, 0.5, &seed);
    check_random_fill(gy, K * C * PH * PW, -0.5, 0.5, &seed);
    for (k = 0; k < K; ++k) {
        batch[k] = k % N;
        boxes[5 * k + 0] = -5 + (W + 10) * check_random(&seed);
        boxes[5 * k + 1] = -5 + (H + 10) * check_random(&seed);
        boxes[5 * k + 2] = 40 * check_random(&seed) - 2;
        boxes[5 * k + 3] = 40 * check_random(&seed) - 2;
        boxes[5 * k + 4] = 720 * check_random(&seed) - 360;
    }
    for (aligned = 0; aligned <= 1; ++aligned) {
        for (ratio = 0; ratio <= 3; ratio += 3) {
            rotated_params(&p, 1);
            p.pooled_height = PH;
            p.pooled_width = PW;
            p.spatial_scale_h = p.spatial_scale_w = 0.75;
            p.sampling_ratio = ratio;
            p.aligned = aligned;
            p.num_threads = 1;
            CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x, shape, strides, boxes, K, 5, batch,
                                                             y, out_strides, &p), PYROI_OK);
            CHECK_STATUS(pyroi_roi_align_rotated_backward_f64(gy, out_strides, boxes, K, 5, batch,
                                                              gx, shape, strides, &p), PYROI_OK);
            p.num_threads = 3;
            CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x, shape, strides, boxes, K, 5, batch,
                                                             y3, out_strides, &p), PYROI_OK);
            CHECK_STATUS(pyroi_roi_align_rotated_backward_f64(gy, out_strides, boxes, K, 5, batch,
                                                              gx3, shape, strides, &p), PYROI_OK);
            CHECK(memcmp(y, y3, sizeof(y)) == 0);
            CHECK(memcmp(gx, gx3, sizeof(gx)) == 0);
            CHECK_ADJOINT(y, gy, K * C * PH * PW, x, gx, N * C * H * W);
        }
    }
}

/* A box of about 10^6 x 10^6 pixels over a small map: finishes (bisection skips the 2^40
 * samples outside the map), is finite, and at angle 0 equals pyroi_roi_align exactly. */
static void test_huge_box(void)
{
    const int64_t shape[4] = {1, 1, 5, 5}, strides[4] = {25, 25, 5, 1};
    const int64_t out_strides[4] = {64, 64, 8, 1};
    const int64_t batch[1] = {0};
    const double rotated_box[5] = {2.0, 2.0, 1048576.0, 1048576.0, 0.0};
    const double box[4] = {2.0 - 524288.0, 2.0 - 524288.0, 2.0 + 524288.0, 2.0 + 524288.0};
    const double turned[5] = {2.0, 2.0, 1e6, 1e6, 33.0};
    double x[25], y_a[64], y_b[64];
    pyroi_roi_align_rotated_params rp;
    pyroi_roi_align_params ap;
    int i, nonzero = 0;

    for (i = 0; i < 25; ++i) {
        x[i] = i + 1;
    }
    rotated_params(&rp, 8);
    pyroi_roi_align_params_init(&ap);
    ap.pooled_height = ap.pooled_width = 8;
    ap.sampling_ratio = 0;
    ap.aligned = 1;
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x, shape, strides, rotated_box, 1, 5, batch,
                                                     y_a, out_strides, &rp), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_forward_f64(x, shape, strides, box, 1, 4, batch, y_b,
                                             out_strides, &ap), PYROI_OK);
    for (i = 0; i < 64; ++i) {
        CHECK(y_a[i] == y_b[i]);
        nonzero += y_a[i] != 0.0;
    }
    CHECK(nonzero == 4); /* the map straddles the four central bins */
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x, shape, strides, turned, 1, 5, batch, y_a,
                                                     out_strides, &rp), PYROI_OK);
    nonzero = 0;
    for (i = 0; i < 64; ++i) {
        CHECK(isfinite(y_a[i]) && y_a[i] >= 0.0);
        nonzero += y_a[i] != 0.0;
    }
    CHECK(nonzero >= 1 && nonzero <= 4);
}

/* ------------------------------------------------------------------------------------------
 * status codes
 * ---------------------------------------------------------------------------------------- */

enum { VH = 4, VW = 4 };
static float vx[VH * VW];
static float vy[16];
static float vgx[VH * VW];
static const int64_t v_shape[4] = {1, 1, VH, VW};
static const int64_t v_strides[4] = {VH * VW, VH * VW, VW, 1};
static const int64_t v_out_strides[4] = {4, 4, 2, 1};

static void valid_params(pyroi_roi_align_rotated_params *p)
{
    rotated_params(p, 2);
    p->sampling_ratio = 2;
}

static pyroi_status forward_box(const float box[5], int64_t batch,
                                const pyroi_roi_align_rotated_params *p)
{
    return pyroi_roi_align_rotated_forward_f32(vx, v_shape, v_strides, box, 1, 5, &batch, vy,
                                               v_out_strides, p);
}

static pyroi_status backward_box(const float box[5], int64_t batch,
                                 const pyroi_roi_align_rotated_params *p)
{
    return pyroi_roi_align_rotated_backward_f32(vy, v_out_strides, box, 1, 5, &batch, vgx,
                                                v_shape, v_strides, p);
}

static void test_params_status(void)
{
    const float box[5] = {2, 2, 2, 2, 30};
    pyroi_roi_align_rotated_params p;
    const check_params_view view = {&p.pooled_height, &p.pooled_width, &p.spatial_scale_h,
                                    &p.spatial_scale_w, &p.sampling_ratio, &p.num_threads};

    valid_params(&p);
    CHECK_STATUS(forward_box(box, 0, &p), PYROI_OK);
    CHECK_STATUS(backward_box(box, 0, &p), PYROI_OK);
    CHECK_STATUS(forward_box(box, 0, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(backward_box(box, 0, NULL), PYROI_E_NULL_POINTER);
    CHECK_PARAMS_STATUS(view, valid_params(&p), forward_box(box, 0, &p),
                        backward_box(box, 0, &p));
}

CHECK_TENSOR_CALL(rotated_call, pyroi_roi_align_rotated)

static void test_tensor_status(void)
{
    const float box[5] = {2, 2, 2, 2, 30};
    const int64_t batch = 0;
    const check_tensors valid = {vgx, v_shape, v_strides, box, 1, 5, &batch, vy, v_out_strides};
    pyroi_roi_align_rotated_params p;

    valid_params(&p);
    check_tensor_status(rotated_call, &valid, &p, "rotated");
}

static void test_box_status(void)
{
    const float inside[5] = {2, 2, 2, 2, 30};
    const float nan_centre[5] = {NAN, 2, 2, 2, 0};
    const float inf_angle[5] = {2, 2, 2, 2, INFINITY};
    const float overflowing[5] = {2, 2, FLT_MAX, 2, 0};     /* w * 2 overflows */
    const float huge[5] = {2, 2, 1e30f, 2, 0};              /* adaptive grid of 1e30 */
    const float near_max[5] = {0, 0, 3e38f, 3e38f, 0};      /* (1.5 * bin) overflows */
    const double huge_degrees[5] = {2, 2, 2, 2, 1e308};      /* angle * pi overflows */
    const double radians[5] = {2, 2, 2, 2, 1e308};
    const int64_t batch = 0;
    double x64[VH * VW], y64[16];
    pyroi_roi_align_rotated_params p;
    int i;

    valid_params(&p);
    CHECK_STATUS(forward_box(inside, -1, &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(forward_box(inside, 1, &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(backward_box(inside, 1, &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(forward_box(nan_centre, 0, &p), PYROI_E_INVALID_BOX);
    CHECK_STATUS(backward_box(inf_angle, 0, &p), PYROI_E_INVALID_BOX);
    p.spatial_scale_w = 2.0;
    CHECK_STATUS(forward_box(overflowing, 0, &p), PYROI_E_INVALID_BOX);
    valid_params(&p);
    CHECK_STATUS(forward_box(huge, 0, &p), PYROI_OK); /* a fixed ratio samples it fine */
    p.sampling_ratio = 0;
    CHECK_STATUS(forward_box(huge, 0, &p), PYROI_E_INVALID_BOX);
    valid_params(&p);
    p.pooled_height = p.pooled_width = 1;
    p.sampling_ratio = 1;
    CHECK_STATUS(forward_box(near_max, 0, &p), PYROI_OK);
    p.sampling_ratio = 2;
    CHECK_STATUS(forward_box(near_max, 0, &p), PYROI_E_INVALID_BOX);

    check_ramp_f64(x64, VH * VW);
    valid_params(&p);
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x64, v_shape, v_strides, huge_degrees, 1, 5,
                                                     &batch, y64, v_out_strides, &p),
                 PYROI_E_INVALID_BOX);
    p.angle_in_degrees = 0; /* the same number as radians is a finite angle */
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f64(x64, v_shape, v_strides, radians, 1, 5,
                                                     &batch, y64, v_out_strides, &p), PYROI_OK);

    /* a failing call writes nothing */
    for (i = 0; i < 16; ++i) {
        vy[i] = 42.0f;
    }
    for (i = 0; i < VH * VW; ++i) {
        vgx[i] = 42.0f;
    }
    valid_params(&p);
    CHECK_STATUS(forward_box(nan_centre, 0, &p), PYROI_E_INVALID_BOX);
    CHECK_STATUS(backward_box(nan_centre, 0, &p), PYROI_E_INVALID_BOX);
    for (i = 0; i < 16; ++i) {
        CHECK(vy[i] == 42.0f);
    }
    for (i = 0; i < VH * VW; ++i) {
        CHECK(vgx[i] == 42.0f);
    }
}

static void test_find_invalid_roi(void)
{
    const float boxes[3 * 5] = {2, 2, 2, 2, 0, 1, 1, 3, 3, 45, 0, 0, 1, 1, NAN};
    const int64_t good_batch[3] = {0, 0, 0};
    const int64_t bad_batch[3] = {0, 1, 0};
    pyroi_roi_align_rotated_params p;
    int64_t failed = 99;

    valid_params(&p);
    CHECK_FIRST_OFFENDER(pyroi_roi_align_rotated_find_invalid_roi, boxes, 5, good_batch,
                         bad_batch, VH, VW, &p);
    CHECK_STATUS(pyroi_roi_align_rotated_find_invalid_roi_f32(boxes, 3, 5, good_batch, 1, VH, VW,
                                                              NULL, &failed),
                 PYROI_E_NULL_POINTER);
    CHECK(failed == -1);
    CHECK_STATUS(pyroi_roi_align_rotated_find_invalid_roi_f32(boxes, 3, 5, good_batch, 1, -1, VW,
                                                              &p, &failed), PYROI_E_INVALID_SHAPE);
}

int main(void)
{
    check_ramp_f32(vx, VH * VW);
    test_defaults();
    test_detectron2_rotations();
    test_zero_size_box();
    test_angle_zero_equals_roi_align();
    test_angle_conventions();
    test_adjoint_and_threads();
    test_huge_box();
    test_params_status();
    test_tensor_status();
    test_box_status();
    test_find_invalid_roi();
    return check_report("test_rotated");
}
