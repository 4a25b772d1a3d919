"""The `.tess` file format on its own: the hard limits (`limits`), the records and page layout
(`records`), the container that reads and writes files (`container`; written whole through
`atomic`) and page decoding (`pages`). It imports numpy and the standard library only: opening
a `.tess` needs none of the builder's libraries (numba, trimesh, pymetis). The builder writes
through it (`preprocess.pack`, `preprocess.build`); the renderer reads through it.

    from preprocess.tess import read_tess
    with read_tess("rock.tess") as f:
        f.meta["name"], f.sections["groups"], f.page(0)
"""

from __future__ import annotations

from preprocess.tess.container import TessFile, TessFormatError, read_tess, write_tess

__all__ = ["TessFile", "TessFormatError", "read_tess", "write_tess"]
