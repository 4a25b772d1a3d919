"""Offline preprocessor: a high-poly mesh becomes a cluster-LOD DAG with an 8-ary BVH, packed into
fixed-size streaming pages in a `.tess` file. CPU only: numpy, numba, pymetis, trimesh."""

from preprocess.config import BuildConfig

__all__ = ["BuildConfig"]
