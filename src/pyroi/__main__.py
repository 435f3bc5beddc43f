"""``python -m pyroi``: the ``pyroi`` command line (:mod:`pyroi.cli`).

Without arguments it runs ``pyroi align`` on the embedded sample (``pyroi/data/sample.npz``:
a 1 x 8 x 8 x 10 feature map whose channel 0 is ``10 * row + column`` and four boxes: inside,
straddling the border, smaller than a pixel, inverted) and prints the pooled bins, so the
numbers can be checked by hand.
"""

# May import: cli.

import sys

from pyroi.cli import main

if __name__ == "__main__":
    sys.exit(main())
