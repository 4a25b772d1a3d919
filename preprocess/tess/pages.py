"""Reading pages: the cluster records of a page and the decoding of one cluster's vertex streams
(the layout is in `preprocess.tess.records`). numpy only, so that tools and tests can look inside
a `.tess` without the builder's libraries."""

from __future__ import annotations

import numpy as np

from preprocess.tess.records import (
    CLUSTER_DTYPE,
    MATERIAL_BYTE_DOUBLE_SIDED,
    MODE_DOUBLE_SIDED,
    MODE_HAS_COLOR,
    MODE_HAS_MATERIAL,
    MODE_HAS_UV,
    MODE_MATERIAL_SHIFT,
    MODE_UV_FLOAT,
    MODE_POSITION_MASK,
    PAGE_HEADER_DTYPE,
)


def octahedral_decode(q: np.ndarray) -> np.ndarray:
    """(k,) uint32 -> (k, 3) float32 unit normals."""
    x = ((q & 0xFFFF).astype(np.uint16).view(np.int16) / 32767.0).astype(np.float32)
    y = ((q >> 16).astype(np.uint16).view(np.int16) / 32767.0).astype(np.float32)
    z = 1 - np.abs(x) - np.abs(y)
    t = np.maximum(-z, 0)
    x = x - np.where(x >= 0, t, -t)
    y = y - np.where(y >= 0, t, -t)
    n = np.stack([x, y, z], axis=1)
    return (n / np.linalg.norm(n, axis=1, keepdims=True)).astype(np.float32)



def page_clusters(page: np.ndarray) -> np.ndarray:
    """(page_size,) uint8 -> the page's cluster records, CLUSTER_DTYPE (n,)."""
    n = int(page[:16].view(PAGE_HEADER_DTYPE)[0]["cluster_count"])
    start = PAGE_HEADER_DTYPE.itemsize
    return page[start : start + n * CLUSTER_DTYPE.itemsize].view(CLUSTER_DTYPE)


def decode_cluster(page: np.ndarray, rec: np.void, step: float, uv_range=None
                   ) -> dict[str, np.ndarray]:
    """Decode one cluster record of a page: positions (v, 3) float32 (dequantized), normals
    (v, 3) float32, uvs (v, 2) float32 or None, colors (v, 4) uint8 RGBA8 (RGB sRGB-encoded) or
    None, triangles (t, 3) uint8 local indices, materials (t,) int64 (the asset's material of
    each triangle), double_sided (t,) bool."""
    nv = int(rec["vertex_count"])
    nt = int(rec["triangle_count"])
    po = int(rec["position_offset"])
    if int(rec["mode"]) & MODE_POSITION_MASK == 0:
        off = page[po : po + 6 * nv].view("<u2").reshape(nv, 3).astype(np.int64)
    else:
        off = page[po : po + 12 * nv].view("<u4").reshape(nv, 3).astype(np.int64)
    grid = off + rec["pos_min"].astype(np.int64)
    pos = (grid.astype(np.float64) * step).astype(np.float32)
    no = int(rec["normal_offset"])
    normals = octahedral_decode(page[no : no + 4 * nv].view("<u4"))
    uvs = None
    if int(rec["mode"]) & MODE_UV_FLOAT:
        uo = int(rec["uv_offset"])
        uvs = page[uo : uo + 8 * nv].view("<f4").reshape(nv, 2).astype(np.float32)
    elif int(rec["mode"]) & MODE_HAS_UV and uv_range is not None:
        uo = int(rec["uv_offset"])
        q = page[uo : uo + 4 * nv].view("<u4")
        lo, hi = np.asarray(uv_range[0]), np.asarray(uv_range[1])
        uv = np.stack([q & 0xFFFF, q >> 16], axis=1) / 65535.0
        uvs = (lo + uv * (hi - lo)).astype(np.float32)
    mode = int(rec["mode"])
    colors = None
    if mode & MODE_HAS_COLOR:  # after the uvs (or the normals)
        uv_words = (2 if mode & MODE_UV_FLOAT else 1) if mode & MODE_HAS_UV else 0
        co = no + 4 * nv * (1 + uv_words)
        colors = page[co : co + 4 * nv].reshape(nv, 4).copy()
    io = int(rec["index_offset"])
    tris = page[io : io + 3 * nt].reshape(nt, 3)
    if mode & MODE_HAS_MATERIAL:  # a byte per triangle after the indices
        mo = io + (3 * nt + 3) // 4 * 4
        byte = page[mo : mo + nt].astype(np.int64)
        materials = byte & ~MATERIAL_BYTE_DOUBLE_SIDED
        double = (byte & MATERIAL_BYTE_DOUBLE_SIDED) != 0
    else:
        materials = np.full(nt, (mode >> MODE_MATERIAL_SHIFT) & 0xFF, np.int64)
        double = np.full(nt, bool(mode & MODE_DOUBLE_SIDED))
    return {"positions": pos, "normals": normals, "uvs": uvs, "colors": colors,
            "triangles": tris, "materials": materials, "double_sided": double}
