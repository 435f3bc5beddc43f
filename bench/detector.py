"""torchvision's Mask R-CNN / Faster R-CNN with and without pyroi.torch.convert: RoI pooling
time (hooks), whole eval forward and train step (pyroi.detector_bench, also run by
``pyroi bench --model maskrcnn``).

    python bench/detector.py --model maskrcnn --size 512 --batch 2 --threads 1 2 --repeat 5
"""

import sys

from pyroi.detector_bench import main

if __name__ == "__main__":
    sys.exit(main())
