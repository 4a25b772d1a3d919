"""The `.tess` file format on its own: the hard limits (`limits`), the records and page layout
(`records`), the container that reads and writes files (`container`; written whole through
`atomic`), page decoding (`pages`), and opening an asset with every value the GPU follows
checked (`reader`, with `checks`). It imports numpy and the standard library only: opening a
`.tess` needs none of the builder's libraries (numba, trimesh, pymetis). The builder writes
through it (`preprocess.pack`, `preprocess.build`); the renderer reads through it.

    from preprocess.tess import read_tess
    with read_tess("rock.tess") as f:
        f.meta["name"], f.sections["groups"], f.page(0)
"""

from __future__ import annotations

from preprocess.tess.container import TessFile, TessFormatError, write_tess
from preprocess.tess.reader import AssetFile, read_tess

__all__ = ["AssetFile", "TessFile", "TessFormatError", "read_tess", "write_tess"]
