"""``python -m pyroi``: RoIAlign on a small embedded example.

The example is a 1 x 2 x 8 x 10 feature map whose channel 0 is ``10 * row + column`` and
channel 1 its negative, and four boxes (inside, straddling the border, tiny, inverted).
It prints the pooled 2 x 2 bins of channel 0 for both coordinate conventions and the input
gradient of a unit loss, so the numbers can be checked by hand.
"""

from __future__ import annotations

import sys

import numpy as np

import pyroi


def sample_features() -> np.ndarray:
    rows, cols = np.mgrid[0:8, 0:10].astype(np.float32)
    plane = 10 * rows + cols
    return np.stack([plane, -plane])[None]


SAMPLE_BOXES = np.array(
    [
        [0, 1.0, 1.0, 5.0, 4.0],  # inside the map
        [0, 7.0, 5.0, 12.0, 10.0],  # straddles the bottom-right border
        [0, 3.2, 2.2, 3.4, 2.4],  # smaller than a pixel
        [0, 6.0, 6.0, 2.0, 2.0],  # inverted corners
    ],
    dtype=np.float32,
)


def main(argv: list[str] | None = None) -> int:
    features = sample_features()
    print(f"pyroi {pyroi.__version__}: RoIAlign on the embedded sample")
    print(f"features {features.shape} float32: channel 0 = 10*row + col, channel 1 = -channel 0")
    for aligned in (False, True):
        pooled = pyroi.roi_align(features, SAMPLE_BOXES, 2, sampling_ratio=2, aligned=aligned)
        print(f"\naligned={aligned}  output {pooled.shape}")
        for box, bins in zip(SAMPLE_BOXES, pooled[:, 0]):
            corners = ", ".join(f"{v:g}" for v in box[1:])
            values = "  ".join(f"{v:8.4f}" for v in bins.ravel())
            print(f"  box [{corners:>18}] -> bins {values}")
    grad = pyroi.roi_align_backward(
        np.ones((len(SAMPLE_BOXES), 2, 2, 2), np.float32), SAMPLE_BOXES, features.shape,
        sampling_ratio=2, aligned=True,
    )
    # Each in-map sample spreads weight 1/count over its taps, so a box wholly inside the
    # map contributes exactly its 4 bins; weight that falls outside the map is lost.
    print(f"\ninput gradient of sum(channel 0 output), aligned=True: total "
          f"{grad[0, 0].sum():.4f} of at most {4 * len(SAMPLE_BOXES)} (4 bins x 4 boxes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
