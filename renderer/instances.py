"""Instances as arrays: the CPU's store (`InstanceStore`: an asset index and a 3 x 4 affine
transform per instance, grown by doubling, checked and moved in bulk) and their GPU layout
(`GpuInstances`: 48 bytes an instance).

The GPU holds an instance as its three transform rows and nothing else (issue 34's budget of 48
bytes): instances are laid out in *slots* sorted by asset, each asset's run padded to a whole
`BLOCK` of slots, so that one u32 per block names the asset (`shaders/instance.wgsl`). The
largest axis scale is computed where it is needed. Padding slots hold a zero transform, which no
instance can have (it is singular), and are skipped. Slot order is the renderer's business: every
index the GPU writes (the instance image, `read_visible`) goes back to the caller's instance
index through `GpuInstances.user`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from preprocess.tess.scene_file import SINGULAR_DET
from renderer.limits import INSTANCE_BLOCK as BLOCK
from renderer.limits import MOVED_VEC4S


class InstanceError(ValueError):
    """A transform or instance index the renderer cannot take (one line)."""


CHUNK = 1 << 16  # rows checked or measured at a time (bounds the temporaries)
LEAF = 8  # slots of a k-d leaf (a block holds BLOCK // LEAF): the aggregate proxies' cells


def _determinants(m: np.ndarray) -> np.ndarray:
    """Determinants of the (k, 3, 3) blocks `m` in their dtype (the cofactor expansion:
    `np.linalg.det` factors every matrix and costs ten times as much)."""
    return (m[:, 0, 0] * (m[:, 1, 1] * m[:, 2, 2] - m[:, 1, 2] * m[:, 2, 1])
            - m[:, 0, 1] * (m[:, 1, 0] * m[:, 2, 2] - m[:, 1, 2] * m[:, 2, 0])
            + m[:, 0, 2] * (m[:, 1, 0] * m[:, 2, 1] - m[:, 1, 1] * m[:, 2, 0]))


def _first_bad(c: np.ndarray) -> tuple[int, str] | None:
    """The first transform of the chunk `c` ((k, 3 or 4, 4) floats) that is not finite, not
    affine or singular, and why; None if all are good. Each rule is tested on the whole chunk
    first (one pass) and located only when it fails; the determinant is taken in float32 and
    again in float64 (`is_singular`'s) where float32 finds it near the threshold."""
    if not np.isfinite(c).all():
        return int(np.argmin(np.isfinite(c).all(axis=(1, 2)))), "must be finite"
    if c.shape[1] == 4:
        off = c[:, 3] != np.array([0, 0, 0, 1], c.dtype)
        if off.any():
            return int(np.argmax(off.any(axis=1))), "must be affine (its last row 0, 0, 0, 1)"
    m = c[:, :3, :3]
    near = np.flatnonzero(~(np.abs(_determinants(m)) >= 1e-20))
    bad = near[~(np.abs(_determinants(m[near].astype(np.float64))) >= SINGULAR_DET)]
    if len(bad):
        return int(bad[0]), "must not be singular (|det| of its 3 x 3 part is below 1e-30)"
    return None


def checked_rows(worlds, what: str = "an instance transform") -> np.ndarray:
    """(k, 3, 4) float32 rows of affine transforms given as one (4, 4) or (3, 4) matrix or an
    array of k of them (a memory-mapped .npy is read in chunks): InstanceError naming the first
    bad one (`what`, and its index when there are several) unless each is finite, affine (a
    4 x 4's last row 0, 0, 0, 1) and not singular (|det| of the 3 x 3 part, in float64,
    >= 1e-30: `scene_file.is_singular`). A million in ~0.1 s on the 2-core machine."""
    try:
        a = np.asarray(worlds)
        if a.dtype.kind != "f":
            a = a.astype(np.float64)
    except (TypeError, ValueError):
        raise InstanceError(f"{what} must be a finite (4, 4) or (3, 4) matrix of numbers") from None
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3 or a.shape[1:] not in ((4, 4), (3, 4)):
        raise InstanceError(f"{what} must be a finite (4, 4) or (3, 4) matrix, or (k, 4, 4) / "
                            f"(k, 3, 4) for k instances; got shape {np.shape(worlds)}")
    out = np.empty((len(a), 3, 4), np.float32)
    for lo in range(0, len(a), CHUNK):
        c = np.asarray(a[lo : lo + CHUNK])
        found = _first_bad(c)
        if found is not None:
            i, why = found
            raise InstanceError(f"{what}{f' {lo + i}' if len(a) > 1 else ''} {why}")
        out[lo : lo + len(c)] = c[:, :3]
    return out


def world_spheres(rows: np.ndarray, assets, local: np.ndarray) -> tuple[np.ndarray, float]:
    """(k, 4) float64 world bounding spheres of instances with (k, 3, 4) float32 `rows` and
    asset indices `assets` ((k,), or one for all) into `local` ((A, 4) the assets' spheres):
    the centre through the float32 transform in float64, the radius times the largest axis
    scale (in float32, as the GPU's); and the farthest they reach along an axis
    (`scene_file.instance_reach`'s measure, held to MAX_WORLD). In chunks."""
    assets = np.atleast_1d(np.asarray(assets, np.int64))
    local = np.asarray(local, np.float64).reshape(-1, 4)
    out = np.empty((len(rows), 4))
    reach = 0.0
    for lo in range(0, len(rows), CHUNK):  # (k,) vectors: numpy's reductions over axes of 3
        r = rows[lo : lo + CHUNK]  # are ten times slower than these element-wise operations
        sph = local[assets[lo : lo + CHUNK] if len(assets) > 1 else np.full(len(r), assets[0])]
        o = out[lo : lo + len(r)]
        for j in range(3):  # the centre: R s + t, in float64
            o[:, j] = (r[:, j, 0] * sph[:, 0] + r[:, j, 1] * sph[:, 1] + r[:, j, 2] * sph[:, 2]
                       + r[:, j, 3])
        o[:, 3] = sph[:, 3] * max_scales(r)
        far = np.maximum(np.maximum(np.abs(o[:, 0]), np.abs(o[:, 1])), np.abs(o[:, 2])) + o[:, 3]
        reach = max(reach, float(far.max(initial=0.0)))
    return out, reach


def _split_rows(order: np.ndarray, xyz: np.ndarray, cells: np.ndarray, start: int, m: int,
                z: int, k: int) -> None:
    """Split the m segments of z points side by side from `start` across each one's longest
    axis, its k smallest first (`order` and the coordinates `xyz` (3, n) permuted alike), and
    their cells (`cells` (2, 3, n): a segment's box at its first point) at the plane midway
    between the two halves."""
    sl = slice(start, start + m * z)
    q = [xyz[a, sl].reshape(m, z) for a in range(3)]
    ax = np.argmax(np.stack([x.max(axis=1) - x.min(axis=1) for x in q]), axis=0)
    c = np.where((ax == 0)[:, None], q[0], np.where((ax == 1)[:, None], q[1], q[2]))
    part = np.argpartition(c, k - 1, axis=1)
    rows = order[sl].reshape(m, z)
    rows[:] = np.take_along_axis(rows, part, axis=1)
    for x in q:
        x[:] = np.take_along_axis(x, part, axis=1)
    c = np.take_along_axis(c, part, axis=1)
    plane = (c[:, :k].max(axis=1) + c[:, k:].min(axis=1)) / 2
    left = start + z * np.arange(m)
    right = left + k
    cells[:, :, right] = cells[:, :, left]
    cells[1, ax, left] = plane
    cells[0, ax, right] = plane


def kd_order(points: np.ndarray, leaf: int = BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """(n,) int64 order of (n, 3) points along a k-d tree whose leaves are `leaf` consecutive
    points, and the leaves' cells ((leaves, 2, 3) float64 boxes: the points' bounding box cut
    by the split planes, so that they tile it). Each segment of more than `leaf` is split
    across its longest axis, midway between the halves, at a rank that is a whole number of
    leaves (half of a power-of-two count of leaves, else that power of two: a split of more
    than BLOCK points falls on a whole block), so that every leaf, every block of BLOCK
    consecutive points and every run of 8^k blocks of the aggregate tree
    (renderer/aggregates.py) is a compact cell. (A Morton curve cut into runs of 64 straddles
    its own cells wherever they do not hold exactly 64: boxes twice as large, half empty.)
    Segments of one size are split together (an (m, size) partition); ~1 s for a million on
    the 2-core machine."""
    n = len(points)
    order = np.arange(n)
    # the coordinates kept in the current order: each level's gathers stay within segments
    xyz = np.ascontiguousarray(np.asarray(points, np.float32).T)  # (3, n)
    cells = np.zeros((2, 3, n), np.float32)  # a segment's box, kept at its first point
    if n:
        cells[0, :, 0], cells[1, :, 0] = xyz.min(axis=1), xyz.max(axis=1)
    segs = {n: np.zeros(1, np.int64)}  # size -> starts of the segments of that size
    while any(z > leaf for z in segs):
        nxt: dict[int, list[np.ndarray]] = {}
        for z, starts in segs.items():
            if z <= leaf:
                nxt.setdefault(z, []).append(starts)
                continue
            count = -(-z // leaf)
            k = leaf * (1 << int(np.log2(count - 1))) if count > 2 else leaf
            starts = np.sort(starts)
            # runs of segments side by side: their rows are a reshaped slice (no gather)
            for run in np.split(starts, np.flatnonzero(np.diff(starts) != z) + 1):
                _split_rows(order, xyz, cells, int(run[0]), len(run), z, k)
            nxt.setdefault(k, []).append(starts)
            nxt.setdefault(z - k, []).append(starts + k)
        segs = {z: np.concatenate(v) for z, v in nxt.items()}
    first = np.arange(0, n, leaf)
    return order, cells[:, :, first].transpose(2, 0, 1).astype(np.float64)


def _padded_runs(asset: np.ndarray, order: np.ndarray, first: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Slots from `first` for items of `asset` ((n,) ints) taken in `order` (sorted by asset):
    each asset's run after the one before, padded to whole blocks. ((n,) int64 each item's
    slot, (assets,) the slots each run takes.)"""
    counts = np.bincount(asset, minlength=int(asset.max(initial=-1)) + 1)
    padded = -(-counts // BLOCK) * BLOCK
    run_start = first + np.concatenate([[0], np.cumsum(padded)[:-1]])
    first_of = np.concatenate([[0], np.cumsum(counts)[:-1]])
    a = asset[order]
    slot = np.empty(len(asset), np.int64)
    slot[order] = run_start[a] + (np.arange(len(asset)) - first_of[a])
    return slot, padded


def _box_side(centre: np.ndarray, radius: np.ndarray, sign: int) -> np.ndarray:
    """float64 low (`sign` -1) or high (1) side of the boxes around spheres, widened by a
    millionth of the coordinates: the GPU's float32 box tests round (`block_bounds`)."""
    return centre + sign * (radius + (np.abs(centre) + radius) * 1e-6)


def _outward(v: np.ndarray, sign: int) -> np.ndarray:
    """float64 `v` as float32, rounded down (`sign` -1) or up (1): a box never shrinks."""
    f = v.astype(np.float32)
    off = (f > v) if sign < 0 else (f < v)
    return np.where(off, np.nextafter(f, np.float32(sign * np.inf)), f)


def max_scales(rows: np.ndarray) -> np.ndarray:
    """(k,) float32: the largest axis scale of each (k, 3, 4) transform (the norm of its longest
    column), in float32 arithmetic as `shaders/instance.wgsl` computes it (x² + y² + z², in
    that order)."""
    r = np.asarray(rows, np.float32)
    sq = [r[:, 0, c] * r[:, 0, c] + r[:, 1, c] * r[:, 1, c] + r[:, 2, c] * r[:, 2, c]
          for c in range(3)]
    return np.sqrt(np.maximum(np.maximum(sq[0], sq[1]), sq[2]))


ORTHOGONAL = 1e-4  # `axis_scales`' tolerance: relative, on the columns' dot products


def axis_scales(rows: np.ndarray) -> np.ndarray:
    """(k, 2) float64: the smallest and largest column length of each (k, 3, 4) transform whose
    linear part has orthogonal columns (a rotation or reflection times axis scales: AᵀA
    diagonal within ORTHOGONAL of its largest entry), so that it stretches every direction by
    between those two (up to 1 + ORTHOGONAL); NaN where the columns are not orthogonal."""
    out = np.full((len(rows), 2), np.nan)
    for lo in range(0, len(rows), CHUNK):
        a = np.asarray(rows[lo : lo + CHUNK, :, :3], np.float64)
        g = np.einsum("kij,kil->kjl", a, a)
        d = np.einsum("kii->ki", g)
        top = d.max(axis=1)
        off = np.abs(g - d[:, :, None] * np.eye(3)).max(axis=(1, 2))
        ok = off <= ORTHOGONAL * top
        s = np.sqrt(d)
        out[lo : lo + len(a)][ok] = np.stack([s.min(axis=1), s.max(axis=1)], axis=1)[ok]
    return out


def as_matrices(rows: np.ndarray) -> np.ndarray:
    """(k, 4, 4) float32 matrices of (k, 3, 4) rows."""
    out = np.zeros((len(rows), 4, 4), np.float32)
    out[:, :3] = rows
    out[:, 3, 3] = 1
    return out


class InstanceStore:
    """The scene's instances: `asset` (n,) int32 and `rows` (n, 3, 4) float32 (views of arrays
    grown by doubling), and the moves since the renderer last took them (`take_moved`)."""

    def __init__(self) -> None:
        self._asset = np.zeros(0, np.int32)
        self._rows = np.zeros((0, 3, 4), np.float32)
        self.count = 0
        self._moved: list[tuple[np.ndarray, np.ndarray]] = []  # (indices, rows before) chunks
        # instances at the last `take_moved`: those added since have no previous frame, and
        # their moves before their first frame are no motion
        self.taken = 0

    @property
    def asset(self) -> np.ndarray:
        return self._asset[: self.count]

    @property
    def rows(self) -> np.ndarray:
        return self._rows[: self.count]

    @property
    def moving(self) -> bool:
        """Whether any instance moved since the last `take_moved`."""
        return bool(self._moved)

    def append(self, asset: int, rows: np.ndarray) -> range:
        """Add len(rows) instances of `asset` ((k, 3, 4) float32 rows, checked already)."""
        k, n = len(rows), self.count
        if n + k > len(self._asset):
            cap = max(n + k, 2 * len(self._asset), 64)
            grown = np.zeros(cap, np.int32), np.zeros((cap, 3, 4), np.float32)
            grown[0][:n], grown[1][:n] = self._asset[:n], self._rows[:n]
            self._asset, self._rows = grown
        self._asset[n : n + k] = asset
        self._rows[n : n + k] = rows
        self.count = n + k
        return range(n, n + k)

    def move(self, indices: np.ndarray, rows: np.ndarray) -> None:
        """Give instances `indices` ((k,) int64, in range) new rows; the previous frame's rows of
        those drawn before are kept for velocity."""
        old = indices < self.taken
        if old.any():
            self._moved.append((indices[old], self._rows[indices[old]].copy()))
        self._rows[indices] = rows

    def take_moved(self) -> tuple[np.ndarray, np.ndarray]:
        """The instances moved since the last call (sorted (m,) int64) and each one's rows before
        the first of those moves (the previous frame's, when the renderer calls this once a
        frame); forgets them."""
        chunks, self._moved = self._moved, []
        self.taken = self.count
        if not chunks:
            return np.zeros(0, np.int64), np.zeros((0, 3, 4), np.float32)
        idx = np.concatenate([c[0] for c in chunks])
        before = np.concatenate([c[1] for c in chunks])
        # np.unique's first occurrence of each index: its rows before the earliest move
        idx, first = np.unique(idx, return_index=True)
        return idx, before[first]

    def clear(self) -> None:
        self.count = self.taken = 0
        self._moved = []


@dataclass
class GpuInstances:
    """The instance buffer's layout for one set of instances: `slot` (n,) int64, each instance's
    slot; `user` (slots,) int64, each slot's instance (-1 for padding); `blocks` (slots //
    BLOCK,) uint32, each block's asset."""

    slot: np.ndarray
    user: np.ndarray
    blocks: np.ndarray
    # (blocks * BLOCK // LEAF, 2, 3) float64: the k-d cells of each block's leaves of LEAF slots
    # (`kd_order`: an asset's cells tile its instances' centres' box; a leaf without instances
    # has lo > hi), what the aggregate proxies' boxes are made of; empty without centres
    cells: np.ndarray = None
    # the first proxy slot (renderer/aggregates.py): instance slots end here, proxies follow,
    # each asset's run padded to whole blocks (user -1); -1 until `add_proxies`
    proxy_first: int = -1
    proxy_slot: np.ndarray | None = None  # (nodes,) int64 each proxy node's slot

    @property
    def instance_slots(self) -> int:
        """The slots of instances (padding included), before any proxy."""
        return self.proxy_first if self.proxy_first >= 0 else self.slots

    @classmethod
    def layout(cls, asset: np.ndarray, centres: np.ndarray | None = None) -> GpuInstances:
        """Slots sorted by asset, then (with `centres`, (n, 3) world positions) in `kd_order`
        through each asset's instances, so that a block of slots holds neighbours (a small box
        for `block_bounds`); each asset's run padded to whole blocks."""
        order = np.argsort(asset, kind="stable")
        cells = []
        if centres is not None:
            bounds = np.flatnonzero(np.diff(asset[order])) + 1
            for run in np.split(order, bounds):  # views: each asset's run sorted in place
                o, c = kd_order(centres[run], LEAF)
                run[:] = run[o]
                # the run's last block's empty leaves: empty cells (lo > hi)
                pad = -(-len(run) // BLOCK) * (BLOCK // LEAF) - len(c)
                cells.append(np.concatenate([c, np.tile([[[np.inf] * 3, [-np.inf] * 3]],
                                                        (pad, 1, 1))]))
        slot, padded = _padded_runs(asset, order, 0)
        user = np.full(max(int(padded.sum()), BLOCK), -1, np.int64)
        user[slot] = np.arange(len(asset))
        blocks = np.repeat(np.arange(len(padded), dtype=np.uint32), padded // BLOCK)
        blocks = np.concatenate([blocks, np.zeros(len(user) // BLOCK - len(blocks), np.uint32)])
        cell = np.concatenate(cells) if cells else np.zeros((0, 2, 3))
        return cls(slot=slot, user=user, blocks=blocks, cells=cell)

    def block_bounds(self, spheres: np.ndarray) -> np.ndarray:
        """(blocks, 2, 4) float32: each block's world box around the bounding spheres of its
        instances ((n, 4) `spheres`, in instance order), (lo, count) and (hi, 0), widened by a
        millionth of the coordinates and rounded outwards to float32, so that the GPU's float32
        tests never find an instance in view outside its block's box (block_cull.wgsl)."""
        user = self.user[: self.instance_slots]
        out = np.zeros((len(user) // BLOCK, 2, 4), np.float32)
        pad = user < 0
        # gathered in slot order, by axis (3 + 1, slots): the reductions run along rows
        c = np.ascontiguousarray(spheres[np.maximum(user, 0)].T, dtype=np.float64)
        for side, fill, pick, sign in ((0, np.inf, np.min, -1), (1, -np.inf, np.max, 1)):
            v = _box_side(c[:3], c[3], sign)
            v[:, pad] = fill
            out[:, side, :3] = _outward(pick(v.reshape(3, -1, BLOCK), axis=2).T, sign)
        out[:, 0, 3] = (user.reshape(-1, BLOCK) >= 0).sum(axis=1)
        out[out[:, 0, 3] == 0, :, :3] = 0  # an empty block (none but the last)
        return out

    def grow_bounds(self, bounds: np.ndarray, indices: np.ndarray, spheres: np.ndarray) -> None:
        """Widen `bounds` (block_bounds') in place over instances `indices` at `spheres` (moved:
        a block's box only grows until the instances are laid out again, a frame's moves cost
        what moved, not what their blocks hold)."""
        b = self.slot[indices] // BLOCK
        order = np.argsort(b)
        b = b[order]
        c, r = spheres[order, :3], spheres[order, 3:]
        # each block's run reduced (ufunc.at took 7 ms for 10,000 moves)
        start = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        blocks = b[start]
        lo = np.minimum.reduceat(_outward(_box_side(c, r, -1), -1), start, axis=0)
        hi = np.maximum.reduceat(_outward(_box_side(c, r, 1), 1), start, axis=0)
        box = bounds[blocks, :, :3]
        box[:, 0] = np.minimum(box[:, 0], lo)
        box[:, 1] = np.maximum(box[:, 1], hi)
        bounds[blocks, :, :3] = box

    @property
    def slots(self) -> int:
        return len(self.user)

    def add_proxies(self, node_asset: np.ndarray, row_base: int) -> np.ndarray:
        """Slots after the instances' for proxy nodes of assets `node_asset` ((nodes,)), sorted
        by asset, each asset's run padded to whole blocks whose asset-table row is `row_base` +
        the asset (`Scene.proxy_assets`); returns and keeps each node's slot."""
        first = self.instance_slots
        node_asset = np.asarray(node_asset, np.int64)
        slot, padded = _padded_runs(node_asset, np.argsort(node_asset, kind="stable"), first)
        self.user = np.concatenate([self.user[:first], np.full(int(padded.sum()), -1)])
        self.blocks = np.concatenate([
            self.blocks[: first // BLOCK],
            np.repeat(row_base + np.arange(len(padded), dtype=np.uint32), padded // BLOCK)
            .astype(np.uint32)])
        self.proxy_first, self.proxy_slot = first, slot
        return slot

    def words(self, rows: np.ndarray, proxy_rows: np.ndarray | None = None) -> np.ndarray:
        """The instance buffer as (n,) uint32 words: every slot's 12 row words (the proxies'
        `proxy_rows`, (nodes, 3, 4), after `add_proxies`), then the block table (padded to a
        whole vec4)."""
        data = np.zeros((self.slots, 3, 4), np.float32)
        data[self.slot] = rows
        if proxy_rows is not None:
            data[self.proxy_slot] = proxy_rows
        table = np.zeros(-(-len(self.blocks) // 4) * 4, np.uint32)
        table[: len(self.blocks)] = self.blocks
        return np.concatenate([data.view(np.uint32).reshape(-1), table])

    def to_user(self, slots: np.ndarray) -> np.ndarray:
        """The caller's instance indices of GPU slots (any shape; negative stays -1)."""
        s = np.asarray(slots, np.int64)
        return np.where(s >= 0, self.user[np.clip(s, 0, None)], -1)

    def moved_table(self, indices: np.ndarray, before: np.ndarray, now: np.ndarray
                    ) -> np.ndarray:
        """The moved table as (n,) uint32 words (`shaders/moved.wgsl`): a vec4 (count, 0, 0, 0),
        then per moved instance, sorted by slot, MOVED_VEC4S vec4s: (slot, 0, 0, 0), its rows
        before (the previous frame's: velocity) and its rows now (scattered into the instance
        buffer by `passes.instance_scatter`)."""
        slots = self.slot[indices]
        order = np.argsort(slots)
        out = np.zeros(4 + len(slots) * MOVED_VEC4S * 4, np.uint32)
        out[0] = len(slots)
        t = out[4:].reshape(len(slots), MOVED_VEC4S * 4)  # words: slot, 12 before, 12 now
        t[:, 0] = slots[order]
        t[:, 4:16] = np.asarray(before, np.float32).reshape(-1, 12)[order].view(np.uint32)
        t[:, 16:28] = np.asarray(now, np.float32).reshape(-1, 12)[order].view(np.uint32)
        return out
