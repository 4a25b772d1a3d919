"""Texture streaming, the CPU side: a scene's textures in tiles, the GPU pool that holds the tiles
a frame samples, the tile table the shaders read through, and what to upload next. Pure numpy:
`renderer/frame.py` does the uploads and the readback.

Tiles. A texture's mips are cut into tiles of `TEXTURE_TILE_WORDS` words (16 KiB), whatever the
format (`tile_shift`: 64 x 64 RGBA8 texels, 128 x 128 texels in 16-byte blocks, 256 x 128 in
8-byte ones), blocks (or texels) row by row within a tile, a mip's edge tiles padded. The mips
from the first that fits one tile down to 1 x 1 are the texture's *tail*: stored whole, as in
the file, and always on the GPU, so that every sample has a mip to fall back on. A 2048² BC1
texture is 170 tiles above a 10.7 KiB tail.

The buffer. One storage buffer (`materials`, `renderer.layout` says the header) holds the
scene's materials, a GPU record a texture (`GPU_TEXTURE_DTYPE`), the tile table (a word a tile
above the tail: its first word in the buffer, or `TILE_MISSING`), a stamp word a tile, the
tails, then `slots` tile slots: the pool. Where every tile fits (the default, while the
textures fit one binding), every tile is loaded at once and nothing streams.

Streaming. Otherwise the BasePass (shaders/material.wgsl, `TEXTURE_FEEDBACK`) writes the frame
number into the stamp of every tile it wants: the tiles of the one or two mips its uv
derivatives pick, under the 2 x 2 texels its bilinear filter reads; where a tile is missing it
samples the finest coarser mip whose tiles are all resident (the tail at worst: never garbage,
never black). `TexturePool.serve` reads a frame's stamps back: the tiles it wanted that are
resident are stamped used; the missing ones are uploaded, coarser mips first (each finer one
falls back on them), at most `budget` a call, into free slots first, then into the slots least
recently used, never one used in the last `PROTECT_FRAMES` frames read back. When the frame wants
more than the pool holds, what is left is counted `short` and drawn from coarser mips.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from preprocess.tess.color import srgb_to_linear
from preprocess.tess.records import (
    TEXTURE_BC1,
    TEXTURE_BC3,
    TEXTURE_BC4,
    TEXTURE_BC5_GB,
    TEXTURE_BC5_NORMAL,
    TEXTURE_FORMATS,
    TEXTURE_RGBA8,
    mip_words,
)
from renderer.layout import (
    GPU_TEXTURE_DTYPE,
    MATERIALS_COUNT,
    MATERIALS_HEADER_WORDS,
    MATERIALS_POOL,
    MATERIALS_STAMP_DELTA,
    MATERIALS_STREAMING,
    MATERIALS_TEXTURE_COUNT,
    MATERIALS_TILE_ROWS,
    MATERIALS_TEXTURES,
    SRGB_TABLE,
    SRGB_TABLE_WORDS,
)
from renderer.limits import TEXTURE_TILE_WORDS, TILE_MISSING

__all__ = ["HW_BINDINGS", "HW_FORMATS", "PROTECT_FRAMES", "TexturePool", "TexturePoolError",
           "hw_class", "tile_shift"]

PROTECT_FRAMES = 2  # a slot used by one of the last two frames read back is never evicted
_TILE_BYTES = 4 * TEXTURE_TILE_WORDS


class TexturePoolError(ValueError):
    """A texture pool that cannot hold what every frame needs (the tails and tables): one
    line."""


def tile_shift(fmt: int) -> tuple[int, int]:
    """log2 of a tile's width and height in texels for a texture of format `fmt`: a tile is
    TEXTURE_TILE_WORDS words in every format."""
    per_block = TEXTURE_FORMATS[int(fmt)][1]
    if per_block == 0:
        return 6, 6  # 64 x 64 texels, a word each
    if per_block == 4:
        return 7, 7  # 32 x 32 blocks of four words
    return 8, 7  # 64 x 32 blocks of two words


def _levels(w: int, h: int, mips: int) -> list[tuple[int, int]]:
    return [(max(1, w >> k), max(1, h >> k)) for k in range(mips)]


class _Texture:
    """One texture's tiling: its mips' sizes, the tail, the tile grid of each mip above it."""

    def __init__(self, rec: np.void, chain: np.ndarray) -> None:
        self.rec, self.chain = rec, chain
        self.fmt = int(rec["format"])
        sx, sy = tile_shift(self.fmt)
        self.levels = _levels(int(rec["width"]), int(rec["height"]), int(rec["mips"]))
        self.offsets = np.cumsum([0, *(mip_words(w, h, self.fmt) for w, h in self.levels)])
        self.tail_mip = next(k for k, (w, h) in enumerate(self.levels)
                             if w <= 1 << sx and h <= 1 << sy)
        self.grid = [(-(-w >> sx), -(-h >> sy)) for w, h in self.levels[: self.tail_mip]]
        self.tiles = sum(nx * ny for nx, ny in self.grid)
        self.tail = chain[int(self.offsets[self.tail_mip]):]

    def level_tiles(self, k: int) -> np.ndarray:
        """(tiles of mip k, TEXTURE_TILE_WORDS) uint32: mip k cut into tiles, row by row."""
        w, h = self.levels[k]
        per_block = TEXTURE_FORMATS[self.fmt][1]
        unit, per = (1, 1) if per_block == 0 else (4, per_block)  # texels or blocks
        uw, uh = -(-w // unit), -(-h // unit)
        sx, sy = tile_shift(self.fmt)
        tw, th = (1 << sx) // unit, (1 << sy) // unit
        nx, ny = self.grid[k]
        words = self.chain[int(self.offsets[k]): int(self.offsets[k + 1])].reshape(uh, uw, per)
        pad = np.zeros((ny * th, nx * tw, per), np.uint32)
        pad[:uh, :uw] = words
        return np.ascontiguousarray(pad.reshape(ny, th, nx, tw, per).transpose(0, 2, 1, 3, 4)
                                    ).reshape(nx * ny, TEXTURE_TILE_WORDS)


# Hardware sampling (`TexturePool(hardware=True)`): the tiles live in one 2D-array texture a
# texture-unit format (`HW_FORMATS`, the BC formats where the adapter has
# `texture-compression-bc`), read with textureLoad (decoded by the texture unit, filtered by
# the shader as before); the tails stay in the buffer. A layer of a pool texture is
# `LAYER_COLUMNS` tiles wide and 1 to `LAYER_COLUMNS` (a power of two, `MATERIALS_TILE_ROWS`)
# rows high; slot s of a format is layer s // (columns x rows), row and column of the rest.
HW_FORMATS = ("rgba8unorm", "bc1-rgba-unorm", "bc3-rgba-unorm", "bc4-r-unorm", "bc5-rg-unorm")
HW_BINDINGS = ("tiles_rgba8", "tiles_bc1", "tiles_bc3", "tiles_bc4", "tiles_bc5")
_HW_CLASS = {TEXTURE_RGBA8: 0, TEXTURE_BC1: 1, TEXTURE_BC3: 2, TEXTURE_BC4: 3,
             TEXTURE_BC5_NORMAL: 4, TEXTURE_BC5_GB: 4}
# a format of each pool texture, for its tile's shape and words a block
_CLASS_FORMAT = (TEXTURE_RGBA8, TEXTURE_BC1, TEXTURE_BC3, TEXTURE_BC4, TEXTURE_BC5_NORMAL)
LAYER_COLUMNS = 16


def hw_class(fmt: int) -> int:
    """The pool texture (`HW_FORMATS` index) that holds the tiles of format `fmt`."""
    return _HW_CLASS[int(fmt)]


class TexturePool:
    """The scene's `materials` buffer and its texture tiles' residency.

    `materials`: (n, MATERIAL_DTYPE) records, every asset's; `textures`: the scene's texture
    records (TEXTURE_DTYPE) with `chains`, each one's mip chain as the file stores it.
    `limit_bytes`: what the adapter binds in one buffer. `pool_bytes`: what the textures may
    take on the GPU (records, tables, tails and tile slots); None: every tile where that fits
    (the buffer within `limit_bytes`, `MAX_DEFAULT_POOL` in all: nothing streams), else as many
    as fit. `budget`: tiles uploaded per `serve` at most. `hardware`: the tiles in texture-unit
    formats (`HW_FORMATS`: a pool texture a format, `hw_layout`), their slots shared among the
    formats in proportion to their tiles; else in the buffer, after the tails. `words` is the
    buffer's first contents; while `streaming`, `serve` says which tiles to write where
    (`tile_words`, `table_words`)."""

    MAX_DEFAULT_POOL = 1 << 30

    def __init__(self, materials: np.ndarray, textures: np.ndarray,
                 chains: Sequence[np.ndarray], limit_bytes: int,
                 pool_bytes: int | None = None, budget: int = 1024, *,
                 hardware: bool = False) -> None:
        self.textures = [_Texture(r, c) for r, c in zip(textures, chains, strict=True)]
        self.hardware = bool(hardware)
        n_tex = len(self.textures)
        self.entries = sum(t.tiles for t in self.textures)
        n = self.entries
        # entry -> its texture, mip and tile within the mip, its pool (one, or a format's)
        self.entry_texture = np.zeros(n, np.int32)
        self.entry_level = np.zeros(n, np.int32)
        self.entry_tile = np.zeros(n, np.int32)
        self.entry_class = np.zeros(n, np.int32)
        first = np.zeros(n_tex, np.int64)
        at = 0
        for i, t in enumerate(self.textures):
            first[i] = at
            for k, (nx, ny) in enumerate(t.grid):
                self.entry_texture[at: at + nx * ny] = i
                self.entry_level[at: at + nx * ny] = k
                self.entry_tile[at: at + nx * ny] = np.arange(nx * ny)
                self.entry_class[at: at + nx * ny] = hw_class(t.fmt) if hardware else 0
                at += nx * ny
        mat_words = materials.view(np.uint32).reshape(-1)
        tails = [t.tail for t in self.textures]
        tail_words = sum(len(x) for x in tails)
        self.tex_at = MATERIALS_HEADER_WORDS + len(mat_words)
        self.table_at = self.tex_at + n_tex * GPU_TEXTURE_DTYPE.itemsize // 4
        self.stamp_at = self.table_at + n
        self.tail_at = self.stamp_at + n
        self.pool_at = self.tail_at + tail_words
        # the textures' share that every frame needs: records, tables and tails
        fixed_bytes = 4 * (self.pool_at - self.tex_at)
        self.fixed_bytes = fixed_bytes
        room = (limit_bytes // 4 - self.pool_at - 1) // TEXTURE_TILE_WORDS
        if room < 0:
            raise TexturePoolError(
                f"the textures' coarsest mips and tables need {fixed_bytes / 2**20:,.1f} MiB, "
                f"more than this adapter binds in one buffer ({limit_bytes / 2**20:,.0f} MiB): "
                f"use fewer or smaller textures (--max-texture-size)")
        if hardware:  # the tiles are in textures, not in the buffer
            room = n
        if pool_bytes is None:
            slots = min(n, room, max(0, (self.MAX_DEFAULT_POOL - fixed_bytes) // _TILE_BYTES))
        else:
            if pool_bytes < fixed_bytes:
                raise TexturePoolError(
                    f"a texture pool of {pool_bytes / 2**20:,.1f} MiB is smaller than the "
                    f"textures' coarsest mips and tables ({fixed_bytes / 2**20:,.1f} MiB): "
                    f"give at least that")
            slots = min(n, room, (pool_bytes - fixed_bytes) // _TILE_BYTES)
        # each pool's slots (one pool, or one a format: in proportion to its tiles)
        classes = len(HW_FORMATS) if hardware else 1
        tiles = np.bincount(self.entry_class, minlength=classes).astype(np.int64)
        share = tiles * int(slots) // max(n, 1)
        for c in np.argsort(-(tiles * int(slots) % max(n, 1)), kind="stable"):  # remainders
            if share.sum() < slots and share[c] < tiles[c]:
                share[c] += 1
        self.class_slots = share
        self.class_base = np.concatenate([[0], np.cumsum(share)[:-1]]).astype(np.int64)
        self.slots = int(share.sum())
        self.slot_class = np.repeat(np.arange(classes), share)
        self.streaming = self.slots < n
        self.budget = int(budget)
        self.uploaded = 0  # tiles uploaded by `serve`, in all
        self.slot_of = np.full(n, TILE_MISSING, np.uint32)  # entry -> slot
        self.entry_of = np.full(self.slots, -1, np.int64)  # slot -> entry
        self.last_used = np.full(self.slots, -1, np.int64)  # slot -> frame read back
        self._cache: dict[tuple[int, int], np.ndarray] = {}
        recs = np.zeros(n_tex, GPU_TEXTURE_DTYPE)
        tail = self.tail_at
        for i, t in enumerate(self.textures):
            r = t.rec
            recs[i] = (tail, r["width"], r["height"], r["mips"], r["flags"], r["format"],
                       t.tail_mip, self.table_at + first[i])
            tail += len(t.tail)
        self.records = recs
        head = np.zeros(MATERIALS_HEADER_WORDS, np.uint32)
        head[MATERIALS_TEXTURES] = self.tex_at
        head[MATERIALS_POOL] = self.pool_at
        head[MATERIALS_COUNT] = len(materials)
        head[MATERIALS_TEXTURE_COUNT] = n_tex
        head[MATERIALS_STAMP_DELTA] = n
        head[MATERIALS_STREAMING] = int(self.streaming)
        if hardware:
            head[MATERIALS_TILE_ROWS: MATERIALS_TILE_ROWS + classes] = [
                self.hw_layout(c)[0].bit_length() - 1 for c in range(classes)]
        head[SRGB_TABLE: SRGB_TABLE + SRGB_TABLE_WORDS] = srgb_to_linear(
            np.arange(SRGB_TABLE_WORDS) / 255.0).astype(np.float32).view(np.uint32)
        in_buffer = 0 if hardware else self.slots
        words = np.zeros(self.pool_at + in_buffer * TEXTURE_TILE_WORDS + 1, np.uint32)
        words[:MATERIALS_HEADER_WORDS] = head
        words[MATERIALS_HEADER_WORDS: self.tex_at] = mat_words
        words[self.tex_at: self.table_at] = recs.view(np.uint32).reshape(-1)
        if tails:
            words[self.tail_at: self.pool_at] = np.concatenate(tails)
        self.words = words
        if not self.streaming:  # every tile, each pool's in entry order
            for c in range(classes):
                mine = np.flatnonzero(self.entry_class == c)
                slots_c = self.class_base[c] + np.arange(len(mine))
                self.slot_of[mine] = slots_c
                self.entry_of[slots_c] = mine
            if not hardware:
                for i, t in enumerate(self.textures):
                    for k in range(t.tail_mip):
                        e = int(first[i]) + sum(nx * ny for nx, ny in t.grid[:k])
                        tiles_k = t.level_tiles(k)
                        lo = self.pool_at + e * TEXTURE_TILE_WORDS
                        words[lo: lo + tiles_k.size] = tiles_k.reshape(-1)
        words[self.table_at: self.stamp_at] = self.table_words()

    def hw_layout(self, c: int) -> tuple[int, int, tuple[int, int]]:
        """Pool texture c's (rows of tiles a layer, a power of two; layers; a tile's width and
        height in texels); at least two layers of one row, where it holds no slot."""
        slots = max(int(self.class_slots[c]), 1)
        rows = 1
        while rows < LAYER_COLUMNS and rows * LAYER_COLUMNS < slots:
            rows *= 2
        sx, sy = tile_shift(_CLASS_FORMAT[c])
        # OpenGL (wgpu's GLES backend) takes a texture's view dimension from its layers: 1 is
        # 2D and a multiple of 6 a cube (array); a 2D array must have neither
        layers = max(2, -(-slots // (rows * LAYER_COLUMNS)))
        return rows, layers + (layers % 6 == 0), (1 << sx, 1 << sy)

    def hw_place(self, slot: int) -> tuple[int, int, int, int]:
        """Where slot `slot` is: (its pool texture, layer, x, y of its first texel)."""
        c = int(self.slot_class[slot])
        local = int(slot - self.class_base[c])
        rows, _, (tw, th) = self.hw_layout(c)
        layer, rest = divmod(local, rows * LAYER_COLUMNS)
        return c, layer, (rest % LAYER_COLUMNS) * tw, (rest // LAYER_COLUMNS) * th

    def hw_copy(self, slot: int) -> tuple[int, tuple[int, int, int], dict, tuple[int, int, int]]:
        """A tile's copy into slot `slot` (hardware): (its pool texture, the origin (x, y,
        layer), the data layout of `write_texture`, the size)."""
        c, layer, x, y = self.hw_place(slot)
        _, _, (tw, th) = self.hw_layout(c)
        per = TEXTURE_FORMATS[_CLASS_FORMAT[c]][1]
        unit = 1 if per == 0 else 4  # a texel or a 4 x 4 block a row's unit
        return c, (x, y, layer), {"bytes_per_row": 4 * (per or 1) * (tw // unit),
                                  "rows_per_image": th // unit}, (tw, th, 1)

    @property
    def nbytes(self) -> int:
        """The buffer's size in bytes."""
        return 4 * len(self.words)

    @property
    def texture_bytes(self) -> int:
        """What the textures take on the GPU: records, tables, tails and the pool's slots."""
        return self.fixed_bytes + self.slots * _TILE_BYTES

    @property
    def resident(self) -> int:
        """Tiles in a slot."""
        return int((self.entry_of >= 0).sum())

    def table_words(self) -> np.ndarray:
        """(entries,) uint32: the tile table, each tile's first word in the buffer (or, with
        `hardware`, its slot in its format's pool texture), or TILE_MISSING."""
        missing = self.slot_of == TILE_MISSING
        s = np.where(missing, 0, self.slot_of).astype(np.int64)
        where = (s - self.class_base[self.entry_class] if self.hardware
                 else self.pool_at + s * TEXTURE_TILE_WORDS)
        return np.where(missing, TILE_MISSING, where).astype(np.uint32)

    def tile_words(self, entry: int) -> np.ndarray:
        """(TEXTURE_TILE_WORDS,) uint32: tile `entry`'s words."""
        i, k = int(self.entry_texture[entry]), int(self.entry_level[entry])
        tiles = self._cache.get((i, k))
        if tiles is None:
            tiles = self._cache[i, k] = self.textures[i].level_tiles(k)
        return tiles[int(self.entry_tile[entry])]

    def slot_word(self, slot: int) -> int:
        """The first word of pool slot `slot` in the buffer (not `hardware`)."""
        return self.pool_at + int(slot) * TEXTURE_TILE_WORDS

    def serve(self, stamps: np.ndarray, tag: int, frame: int) -> tuple[list[tuple[int, int]],
                                                                       dict]:
        """A frame's tile stamps read back (`stamps`: (entries,) uint32, `tag` what that frame
        wrote, `frame` its index): (the uploads, (slot, entry) each, to write with
        `tile_words` before the table, `table_words`), statistics."""
        used = np.flatnonzero(stamps == np.uint32(tag))
        slot = self.slot_of[used]
        have = slot != TILE_MISSING
        self.last_used[slot[have].astype(np.int64)] = frame
        want = used[~have]
        # coarser mips first: fewer tiles, and every finer one falls back on them
        want = want[np.argsort(-self.entry_level[want], kind="stable")]
        # each pool's room: free slots, then the least recently used ones not protected
        free = self.entry_of < 0
        old = ~free & (self.last_used <= frame - PROTECT_FRAMES)
        order = np.lexsort((self.last_used, ~free))  # free first, then oldest
        rooms = [list(order[(free | old)[order] & (self.slot_class[order] == c)])
                 for c in range(len(self.class_slots))]
        taken = [0] * len(rooms)
        uploads = []
        evicted = 0
        for e in want.tolist():
            if len(uploads) == self.budget:
                break
            c = int(self.entry_class[e])
            if taken[c] == len(rooms[c]):
                continue
            s = int(rooms[c][taken[c]])
            taken[c] += 1
            prev = int(self.entry_of[s])
            if prev >= 0:
                self.slot_of[prev] = TILE_MISSING
                evicted += 1
            self.entry_of[s] = e
            self.slot_of[e] = s
            self.last_used[s] = frame
            uploads.append((s, e))
        self.uploaded += len(uploads)
        stats = {"wanted": len(used), "missing": len(want), "uploaded": len(uploads),
                 "evicted": evicted, "short": len(want) - len(uploads),
                 "resident": self.resident, "slots": self.slots,
                 "pool_mb": self.texture_bytes / 2**20}
        return uploads, stats
