"""Opening a Tessera asset: the container's checks first (`container.TessFile`: the bytes and
their checksums), then every value the GPU follows (`preprocess.tess.checks`): the meta, the
sections and every page's header and cluster records when the file is opened, and a page's
streams when it is first read (`page`, `verify_all`), which is before the renderer hands it to
the GPU. `verify` (`read_tess(verify_pages=True)`, `tessera info --verify`) adds what culling
trusts without following it: the LOD bounds nested, every page's positions decoded, inside their
clusters' bounds and their BVH leaves' boxes. Any problem raises TessFormatError, one line
naming the file, the section or page, the record and the field.

    from preprocess.tess import read_tess
    with read_tess("rock.tess") as f:
        f.meta["name"], f.sections["groups"], f.page(0)
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from preprocess.tess.checks import (
    PageContext,
    RecordError,
    check_asset,
    check_nesting,
    check_page,
    check_positions,
    read_page_records,
)
from preprocess.tess.container import TessFile, TessFormatError
from preprocess.tess.limits import TEXTURE_SET_KIND

__all__ = ["AssetFile", "read_tess"]


class AssetFile(TessFile):
    """A `.tess` asset, open and checked (see the module docstring); otherwise a `TessFile`."""

    _context: PageContext | None = None  # what the page checks need, once the records passed

    def check_contents(self) -> None:
        if self.meta.get("kind") == TEXTURE_SET_KIND:
            self._fail("a scene's textures file, not an asset: open the scene's .json, or one "
                       "of its meshes' .tess beside it")
        self._attach_texture_set()
        try:
            self._context = check_asset(self.meta, self.sections, self.pages_array(),
                                        self.page_flags)
        except RecordError as e:
            # the records were read before their pages' checksums: a page whose checksum
            # fails is the cause, and is named as such
            self.verify_all()
            self._fail(str(e))

    def _attach_texture_set(self) -> None:
        """A scene's mesh whose textures are the scene's (`meta["texture_file"]`, a file beside
        it, `preprocess.scene_import.build_scene`): that file's `textures` and `texels` read
        (its checksums) and taken as this asset's, where its digest is the one this file
        names; then checked with the materials as a file's own."""
        name = self.meta.get("texture_file")
        if name is None:
            return
        if (not isinstance(name, str) or not name.endswith(".tess")
                or Path(name).name != name):
            self._fail(f"meta texture_file {name!r}: not a file name beside it")
        if "textures" in self.sections or "texels" in self.sections:
            self._fail(f"textures of its own and in {name}: one or the other")
        path = self.path.parent / name
        try:
            st = path.stat()
            kind, digest, sections = _texture_set(str(path.resolve()), st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            self._fail(f"its textures file {name} is missing (written beside the scene's "
                       "meshes: build the scene again)")
        except TessFormatError as e:
            self._fail(f"its textures file: {e}")
        if kind != TEXTURE_SET_KIND or digest != self.meta.get("texture_set"):
            self._fail(f"{name} is not the textures file it was built with (another build of "
                       "the scene: build it again)")
        if set(sections) != {"textures", "texels"}:
            self._fail(f"{name}: sections {sorted(sections)}, not textures and texels")
        self.sections = {**self.sections, **sections}

    def page_contents_problem(self, page: np.ndarray) -> str | None:
        if self._context is None:  # the records failed: the checksums are checked alone
            return None
        try:
            check_page(page, self._context)
        except RecordError as e:
            return str(e)
        return None


    def verify(self) -> None:
        """Everything: every page's checksum and streams (`verify_all`), the LOD bounds' nesting
        (`preprocess.tess.checks.check_nesting`), every page's positions decoded
        (`check_positions`). Raises TessFormatError naming the first problem."""
        self.verify_all()
        assert self._context is not None  # set by the open, or it failed
        records = read_page_records(self.pages_array(), self.page_flags)
        try:
            check_nesting(self.sections["bvh_nodes"], self.sections["groups"], records,
                          self._context.leaf_node)
        except RecordError as e:
            self._fail(str(e))
        for i in range(self.page_count):  # a loop over pages, each checked whole
            try:
                check_positions(self.page(i), self._context)
            except RecordError as e:
                self._fail(f"page {i} {e}")


@functools.lru_cache(maxsize=4)
def _texture_set(path: str, mtime_ns: int, size: int) -> tuple[object, object, dict]:
    """A scene's textures file read (its checksums) and inflated once for all its meshes,
    while it is unchanged (path, time and size: the cache's key): (kind, digest, sections,
    read-only copies that outlive the file's mapping)."""
    with TessFile(path) as t:
        sections = {}
        for name, a in t.sections.items():
            a = np.array(a)
            a.flags.writeable = False
            sections[name] = a
        return t.meta.get("kind"), t.meta.get("texture_set"), sections


def read_tess(path: str | os.PathLike, *, verify_pages: bool = False) -> AssetFile:
    """Open a Tessera asset and check it (see `AssetFile`); `verify_pages=True` checks all of
    it now (`AssetFile.verify`), not each page as it is first read."""
    f = AssetFile(path)
    if verify_pages:
        try:
            f.verify()
        except BaseException:
            f.close()
            raise
    return f
