/* roi_align.c - RoIAlign with the pyroi C library, a complete program to copy.
 *
 * A 1 x 1 x 4 x 5 feature map whose pixel (y, x) holds 10 * y + x, and two boxes pooled to
 * 2 x 2 bins with torchvision's aligned=True convention. Inside the map bilinear
 * interpolation of this map is exact, so the first box's bins are just 10 * y + x at the
 * bin centres: 11 12 / 21 22. Then the input gradient of the sum of all bins.
 *
 * Build against an installed pyroi (prefix /usr/local or on PKG_CONFIG_PATH):
 *     cc -std=c99 roi_align.c $(pkg-config --cflags --libs pyroi) -o roi_align
 * or with CMake: find_package(pyroi REQUIRED) and target_link_libraries(... pyroi::pyroi).
 */
#include <pyroi.h>

#include <stdio.h>
#include <stdlib.h>

#define N 1
#define C 1
#define H 4
#define W 5
#define K 2
#define PH 2
#define PW 2

/* Every pyroi call returns a status: stop with its message on anything but PYROI_OK. */
static void check(pyroi_status status, const char *what)
{
    if (status != PYROI_OK) {
        fprintf(stderr, "%s failed: %s (status %d)\n", what, pyroi_status_string(status),
                (int)status);
        exit(EXIT_FAILURE);
    }
}

int main(void)
{
    /* Tensors are a pointer, a shape and strides counted in elements (here NCHW contiguous). */
    float features[N * C * H * W];
    const int64_t shape[4] = {N, C, H, W};
    const int64_t strides[4] = {C * H * W, H * W, W, 1};
    /* One row of (x1, y1, x2, y2) per RoI, in input-image pixels, and its image index. */
    const float boxes[K * 4] = {
        1.0f, 1.0f, 3.0f, 3.0f,  /* inside the map */
        3.0f, 2.0f, 6.0f, 5.0f,  /* crosses the bottom-right border */
    };
    const int64_t batch_indices[K] = {0, 0};
    float pooled[K * C * PH * PW], ones[K * C * PH * PW], grad[N * C * H * W];
    const int64_t pooled_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    pyroi_roi_align_params params;
    int y, x, k;

    if (pyroi_version_number() != PYROI_VERSION_NUMBER) {
        fprintf(stderr, "pyroi.h is %s but the library is %s\n", PYROI_VERSION_STRING,
                pyroi_version_string());
        return EXIT_FAILURE;
    }
    for (y = 0; y < H; ++y) {
        for (x = 0; x < W; ++x) {
            features[y * W + x] = (float)(10 * y + x);
        }
    }

    pyroi_roi_align_params_init(&params);  /* defaults first, then what differs */
    params.pooled_height = PH;
    params.pooled_width = PW;
    params.spatial_scale_h = params.spatial_scale_w = 1.0;  /* boxes are in map pixels */
    params.sampling_ratio = 2;                              /* 2 x 2 samples per bin */
    params.aligned = 1;                                     /* pixel centres at +0.5 */

    check(pyroi_roi_align_forward_f32(features, shape, strides, boxes, K, 4, batch_indices,
                                      pooled, pooled_strides, &params),
          "pyroi_roi_align_forward_f32");
    printf("pyroi %s, RoIAlign 2x2, aligned, sampling_ratio 2\n", pyroi_version_string());
    for (k = 0; k < K; ++k) {
        const float *bins = pooled + k * C * PH * PW;
        printf("box %d (%g, %g, %g, %g): %g %g / %g %g\n", k, boxes[4 * k], boxes[4 * k + 1],
               boxes[4 * k + 2], boxes[4 * k + 3], bins[0], bins[1], bins[2], bins[3]);
    }

    for (k = 0; k < K * C * PH * PW; ++k) {
        ones[k] = 1.0f;
    }
    check(pyroi_roi_align_backward_f32(ones, pooled_strides, boxes, K, 4, batch_indices, grad,
                                       shape, strides, &params),
          "pyroi_roi_align_backward_f32");
    printf("gradient of the sum of all bins:\n");
    for (y = 0; y < H; ++y) {
        for (x = 0; x < W; ++x) {
            printf(" %7.4f", grad[y * W + x]);
        }
        printf("\n");
    }
    return EXIT_SUCCESS;
}
