"""Side-by-side benchmark of pyroi and the installed peers: a thin wrapper over
:mod:`pyroi.bench` (the one place for the benchmark code; also ``pyroi bench``).

    python bench/bench.py                  # every workload, 1 and 2 threads
    python bench/bench.py --quick          # fewer repeats
    python bench/bench.py -w box_head -t 1 # one workload, one thread count
"""

import sys

from pyroi.bench import main

if __name__ == "__main__":
    sys.exit(main())
