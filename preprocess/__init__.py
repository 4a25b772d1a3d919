"""Offline preprocessor: a high-poly mesh becomes a cluster-LOD DAG with an 8-ary BVH, packed into
fixed-size streaming pages in a `.tess` file. CPU only: numpy, numba, pymetis, trimesh (the file
format itself, `preprocess.tess`, needs numpy alone).

Pipeline: `load` (mesh files) -> `cluster`, `dag`, `simplify` (the LOD DAG, `lod`) -> `bvh` ->
`pack` (pages) -> `tess` (the file); `build` runs the stages, `verify` checks the invariants."""

from __future__ import annotations

from typing import Any

__all__ = ["BuildConfig"]


def __getattr__(name: str) -> Any:
    if name == "BuildConfig":  # lazily, so that importing preprocess.tess imports nothing more
        from preprocess.config import BuildConfig

        return BuildConfig
    raise AttributeError(f"module 'preprocess' has no attribute {name!r}")
