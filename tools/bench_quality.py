"""The quality benchmark of issue 15 (`renderer.bench.quality_suite`; also `tessera bench
--scenario quality`): per model and view, triangles per covered pixel, normals more than 30 degrees
off full detail, PSNR against a 4x4 supersampled full-detail frame, coverage difference, pinholes.

    python tools/bench_quality.py --help
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one

from renderer.bench.quality_suite import main

if __name__ == "__main__":
    sys.exit(main())
