/* The backward is the adjoint of the forward: <roi_align(x), g> == <x, roi_align_backward(g)>
 * in float64, over random boxes (inside, partly outside, tiny, inverted) and settings, with
 * torchvision's arithmetic and with merged samples (merge_samples). */
#include "pyroi.h"
#include "check.h"

#include <stdlib.h>

enum { N = 2, C = 3, H = 9, W = 11, K = 24, PH = 3, PW = 2 };

static double random_coordinate(unsigned long long *seed, double extent)
{
    return -0.3 * extent + 1.6 * extent * check_random(seed);
}

int main(void)
{
    static double x[N * C * H * W], gx[N * C * H * W];
    static double y[K * C * PH * PW], gy[K * C * PH * PW];
    double boxes[K * 4];
    int64_t batch[K];
    const int64_t shape[4] = {N, C, H, W};
    const int64_t strides[4] = {C * H * W, H * W, W, 1};
    const int64_t out_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    static const int ratios[] = {-1, 0, 1, 2, 3};
    unsigned long long seed = 12345;
    pyroi_roi_align_params p;
    size_t r;
    int setting, k;

    check_random_fill(x, N * C * H * W, -0.5, 0.5, &seed);
    check_random_fill(gy, K * C * PH * PW, -0.5, 0.5, &seed);
    for (setting = 0; setting < 4; ++setting) { /* aligned or not, merged samples or not */
        for (r = 0; r < sizeof(ratios) / sizeof(ratios[0]); ++r) {
            for (k = 0; k < K; ++k) {
                batch[k] = k % N;
                boxes[4 * k + 0] = random_coordinate(&seed, W / 0.7);
                boxes[4 * k + 1] = random_coordinate(&seed, H / 0.7);
                boxes[4 * k + 2] = random_coordinate(&seed, W / 0.7);
                boxes[4 * k + 3] = random_coordinate(&seed, H / 0.7);
                if (k % 5 == 0) { /* tiny box */
                    boxes[4 * k + 2] = boxes[4 * k + 0] + 0.01;
                }
            }
            pyroi_roi_align_params_init(&p);
            p.pooled_height = PH;
            p.pooled_width = PW;
            p.spatial_scale_h = p.spatial_scale_w = 0.7;
            p.sampling_ratio = ratios[r];
            p.aligned = setting % 2;
            p.merge_samples = setting / 2;
            CHECK_STATUS(pyroi_roi_align_forward_f64(x, shape, strides, boxes, K, 4, batch, y,
                                                     out_strides, &p), PYROI_OK);
            CHECK_STATUS(pyroi_roi_align_backward_f64(gy, out_strides, boxes, K, 4, batch, gx,
                                                      shape, strides, &p), PYROI_OK);
            CHECK_ADJOINT(y, gy, K * C * PH * PW, x, gx, N * C * H * W);
        }
    }
    return check_report("test_adjoint");
}
