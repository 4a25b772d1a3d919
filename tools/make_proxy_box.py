"""Build `renderer/proxy_box.tess`: the unit cube [0, 1]^3 that aggregate proxies draw
(`renderer/aggregates.py`), 24 vertices (a face's own normal and uvs 0..1) and 12 triangles in
one cluster, which is also its root. Run again after a change of the file format:
`python tools/make_proxy_box.py` (tests/renderer/test_aggregates.py checks the file opens)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from preprocess.build import build_file
from preprocess.config import BuildConfig
from preprocess.load import mesh_from_arrays

OUT = Path(__file__).resolve().parents[1] / "renderer" / "proxy_box.tess"


def box_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(24, 3) positions, (12, 3) faces (counter-clockwise seen from outside), (24, 3) normals,
    (24, 2) uvs of the unit cube."""
    pos, nrm, uv, faces = [], [], [], []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for side in (0.0, 1.0):
            n = np.zeros(3)
            n[axis] = 1 if side else -1
            base = len(pos)
            for a, b in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = np.zeros(3)
                p[axis], p[u], p[v] = side, a, b
                pos.append(p)
                nrm.append(n)
                uv.append((a, b))
            # (u, v) is counter-clockwise seen from +axis: keep it for the high side
            quad = [(0, 1, 2), (0, 2, 3)] if side else [(0, 2, 1), (0, 3, 2)]
            faces += [[base + i for i in t] for t in quad]
    return (np.array(pos), np.array(faces), np.array(nrm), np.array(uv, float))


def main() -> None:
    pos, faces, nrm, uv = box_arrays()
    mesh = mesh_from_arrays(pos, faces, nrm, uv, name="proxy_box")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    build_file(mesh, OUT, BuildConfig(min_root_triangles=12, shading_weight=0.0), verify=True)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
