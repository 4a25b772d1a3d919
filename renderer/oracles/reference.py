"""The reference renderer: brute-force ground truth for the cluster renderer.

A plain wgpu render pipeline draws every ORIGINAL full-resolution triangle of every instance with a
depth buffer; no LOD, no culling beyond optional back faces. The cluster renderer's images are
compared with these, and `render_timed` gives the benchmark its brute-force figure.

How it draws (see ``shaders/reference.wgsl``):
- vertex pulling: each mesh is one storage buffer of positions (float32 x, y, z) and one of
  triangle indices (uint32); the draw is non-indexed, so vertex ``v`` reads ``indices[v]`` and
  belongs to triangle ``v / 3``, passed flat to the fragment shader (``@builtin(primitive_index)``
  is not portable);
- one draw call per instance, ``draw(3 m, 1, 0, i)``: the instance index is ``first_instance`` and
  picks the world matrix out of a storage array;
- two r32uint color targets get triangle + 1 and instance + 1 (0 = nothing drawn), and the depth
  target is depth32float, reversed Z (cleared to 0, "greater" wins, depth = near / distance, see
  `renderer.camera`);
- a mesh whose index array exceeds the storage binding limit is drawn in chunks, each bound at an
  aligned offset with its first triangle id in a small uniform.

Row 0 of every returned image is the top of the picture (WebGPU's framebuffer origin is top-left).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import wgpu

import shaders
from preprocess.mesh import Mesh
from renderer.device import GpuContext
from renderer.gpu import READ, UNIFORM, Binding, bind_group, bind_group_layout, wgsl_header

__all__ = ["ReferenceRenderer"]

_VS = wgpu.ShaderStage.VERTEX
# group 0: the frame (view_proj) and one world matrix per instance
FRAME_BINDINGS = (
    Binding("frame", UNIFORM, "Frame", _VS),
    Binding("worlds", READ, "array<mat4x4<f32>>", _VS),
)
# group 1: a mesh's positions, the chunk's indices (bound at its offset) and its first triangle
MESH_BINDINGS = (
    Binding("positions", READ, "array<f32>", _VS),
    Binding("indices", READ, "array<u32>", _VS),
    Binding("chunk", UNIFORM, "Chunk", _VS),
)
_COLOR_FORMAT = wgpu.TextureFormat.r32uint
_DEPTH_FORMAT = wgpu.TextureFormat.depth32float
_TRIANGLE_BYTES = 12  # three uint32 indices


@dataclass
class _Chunk:
    first_triangle: int
    triangle_count: int
    bind_group: wgpu.GPUBindGroup


@dataclass
class _GpuMesh:
    label: str
    vertex_count: int
    triangle_count: int
    positions: wgpu.GPUBuffer
    indices: wgpu.GPUBuffer
    params: wgpu.GPUBuffer
    chunks: list[_Chunk] = field(default_factory=list)


class ReferenceRenderer:
    """Draws meshes' full-resolution triangles into a width x height depth / id image."""

    def __init__(self, ctx: GpuContext, width: int, height: int) -> None:
        """Create the pipelines and the render targets for a `width` x `height` image."""
        if width < 1 or height < 1:
            raise ValueError(f"ReferenceRenderer: image size must be positive, "
                             f"got {width}x{height}")
        self.ctx = ctx
        self.device: wgpu.GPUDevice = ctx.device
        self.width = int(width)
        self.height = int(height)
        limits = self.device.limits
        # The largest index range one binding may cover (tests lower it to exercise chunking).
        self.max_index_binding_bytes: int = int(limits["max-storage-buffer-binding-size"])
        self._storage_alignment = int(limits["min-storage-buffer-offset-alignment"])
        self._uniform_alignment = int(limits["min-uniform-buffer-offset-alignment"])
        self._meshes: list[_GpuMesh] = []

        device = self.device
        code = (wgsl_header(FRAME_BINDINGS, group=0) + wgsl_header(MESH_BINDINGS, group=1)
                + shaders.load("reference.wgsl"))
        module = device.create_shader_module(label="reference.shader", code=code)
        self._frame_layout = bind_group_layout(device, FRAME_BINDINGS, "reference.frame_layout")
        self._mesh_layout = bind_group_layout(device, MESH_BINDINGS, "reference.mesh_layout")
        layout = device.create_pipeline_layout(
            label="reference.pipeline_layout",
            bind_group_layouts=[self._frame_layout, self._mesh_layout])
        self._pipelines = {
            cull: device.create_render_pipeline(
                label=f"reference.pipeline.cull_{cull}",
                layout=layout,
                vertex={"module": module, "entry_point": "vs_main", "buffers": []},
                primitive={"topology": wgpu.PrimitiveTopology.triangle_list,
                           "front_face": wgpu.FrontFace.ccw, "cull_mode": cull},
                depth_stencil={"format": _DEPTH_FORMAT, "depth_write_enabled": True,
                               "depth_compare": wgpu.CompareFunction.greater},
                multisample={"count": 1},
                fragment={"module": module, "entry_point": "fs_main",
                          "targets": [{"format": _COLOR_FORMAT}, {"format": _COLOR_FORMAT}]},
            )
            for cull in (wgpu.CullMode.back, wgpu.CullMode.none)
        }

        self._frame_uniform = device.create_buffer(
            label="reference.frame", size=64,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC)
        # `_wait_for_gpu` falls back to mapping this after a 4-byte copy from the frame uniform.
        self._sync_buffer = device.create_buffer(
            label="reference.sync", size=4,
            usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self._work_done_usable = hasattr(device.queue, "on_submitted_work_done_sync")
        self._worlds: wgpu.GPUBuffer | None = None
        self._frame_group: wgpu.GPUBindGroup | None = None
        self._ensure_instance_capacity(1)

        size = (self.width, self.height, 1)
        target_usage = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC
        self._triangle_tex = device.create_texture(label="reference.triangle_target", size=size,
                                                   format=_COLOR_FORMAT, usage=target_usage)
        self._instance_tex = device.create_texture(label="reference.instance_target", size=size,
                                                   format=_COLOR_FORMAT, usage=target_usage)
        self._depth_tex = device.create_texture(label="reference.depth_target", size=size,
                                                format=_DEPTH_FORMAT, usage=target_usage)
        self._triangle_view = self._triangle_tex.create_view(label="reference.triangle_view")
        self._instance_view = self._instance_tex.create_view(label="reference.instance_view")
        self._depth_view = self._depth_tex.create_view(label="reference.depth_view")

        # Readback: every format here is 4 bytes a texel; copies need rows padded to 256 bytes.
        self._row_bytes = -(-self.width * 4 // 256) * 256
        readback_usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        self._readback = {
            name: device.create_buffer(label=f"reference.readback_{name}",
                                       size=self._row_bytes * self.height, usage=readback_usage)
            for name in ("depth", "triangle", "instance")
        }

    # ------------------------------------------------------------------------------------------
    # Meshes

    def add_mesh(self, positions: np.ndarray, triangles: np.ndarray, *, label: str = "mesh") -> int:
        """Upload a mesh and return its id.

        Args:
            positions: (n, 3) float32 object-space positions.
            triangles: (m, 3) integer indices into `positions`, counter-clockwise front faces.
            label: a name for the GPU objects.

        Returns:
            The mesh id to use in `render`'s instances.
        """
        pos = np.ascontiguousarray(positions, dtype=np.float32)
        tris = np.asarray(triangles)
        if pos.ndim != 2 or pos.shape[1] != 3 or pos.shape[0] == 0:
            raise ValueError(f"add_mesh({label!r}): positions must be (n, 3) with n > 0, "
                             f"got {pos.shape}")
        if tris.ndim != 2 or tris.shape[1] != 3 or tris.shape[0] == 0:
            raise ValueError(f"add_mesh({label!r}): triangles must be (m, 3) with m > 0, "
                             f"got {tris.shape}")
        if not np.issubdtype(tris.dtype, np.integer):
            raise ValueError(f"add_mesh({label!r}): triangles must be integers, got {tris.dtype}")
        n, m = pos.shape[0], tris.shape[0]
        lo, hi = int(tris.min()), int(tris.max())
        if lo < 0 or hi >= n:
            raise ValueError(f"add_mesh({label!r}): triangle indices span [{lo}, {hi}], "
                             f"positions has {n}")
        limits = self.device.limits
        max_binding = int(limits["max-storage-buffer-binding-size"])
        max_buffer = int(limits["max-buffer-size"])
        if pos.nbytes > max_binding:
            raise ValueError(f"add_mesh({label!r}): {n} positions ({pos.nbytes} bytes) exceed the "
                             f"storage binding limit of {max_binding} bytes; split the mesh")
        if m * _TRIANGLE_BYTES > max_buffer:
            raise ValueError(f"add_mesh({label!r}): {m} triangles ({m * _TRIANGLE_BYTES} bytes) "
                             f"exceed the buffer size limit of {max_buffer} bytes; split the mesh")
        # Chunks start at multiples of `step` triangles so every binding offset is aligned.
        step = self._storage_alignment // math.gcd(self._storage_alignment, _TRIANGLE_BYTES)
        per_chunk = min(self.max_index_binding_bytes, max_binding) // _TRIANGLE_BYTES // step * step
        if per_chunk < 1:
            raise ValueError(f"add_mesh({label!r}): an index binding of "
                             f"{self.max_index_binding_bytes} bytes cannot hold {step} triangles")
        starts = list(range(0, m, per_chunk))

        device = self.device
        mesh_id = len(self._meshes)
        name = f"reference.mesh{mesh_id}.{label}"
        storage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        pos_buf = device.create_buffer_with_data(label=f"{name}.positions", data=pos.reshape(-1),
                                                 usage=storage)
        idx_buf = device.create_buffer_with_data(
            label=f"{name}.indices", data=np.ascontiguousarray(tris, dtype=np.uint32).reshape(-1),
            usage=storage)
        stride = max(self._uniform_alignment, 16)
        params = np.zeros((len(starts), stride // 4), np.uint32)
        params[:, 0] = starts
        params_buf = device.create_buffer_with_data(
            label=f"{name}.chunks", data=params.reshape(-1),
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        gpu_mesh = _GpuMesh(label=label, vertex_count=n, triangle_count=m, positions=pos_buf,
                            indices=idx_buf, params=params_buf)
        for k, first in enumerate(starts):
            count = min(per_chunk, m - first)
            group = bind_group(device, self._mesh_layout, MESH_BINDINGS, {
                "positions": (pos_buf, 0, pos.nbytes),
                "indices": (idx_buf, first * _TRIANGLE_BYTES, count * _TRIANGLE_BYTES),
                "chunk": (params_buf, k * stride, 16),
            }, f"{name}.chunk{k}")
            gpu_mesh.chunks.append(_Chunk(first, count, group))
        self._meshes.append(gpu_mesh)
        return mesh_id

    def add_mesh_from(self, mesh: Mesh) -> int:
        """Upload a preprocessor `Mesh` (its welded positions and position-index triangles, so
        triangle ids are indices into ``mesh.triangles``); returns the mesh id."""
        return self.add_mesh(mesh.positions, mesh.position_triangles, label=mesh.name)

    def triangle_count(self, mesh_id: int) -> int:
        """Number of triangles of an uploaded mesh."""
        return self._meshes[mesh_id].triangle_count

    # ------------------------------------------------------------------------------------------
    # Drawing

    def render(self, view_proj: np.ndarray, instances: Sequence[tuple[int, np.ndarray]], *,
               cull_backfaces: bool = True) -> dict[str, np.ndarray]:
        """Draw the instances and read the images back.

        Args:
            view_proj: (4, 4) float32 world-to-clip matrix (column vectors, reversed Z).
            instances: (mesh id, (4, 4) float32 object-to-world matrix) pairs.
            cull_backfaces: skip clockwise (back-facing) triangles.

        Returns:
            ``"depth"``: (h, w) float32 NDC depth (near / distance; 0.0 where nothing is drawn),
            ``"triangle"``: (h, w) int32 triangle index into that instance's mesh (-1: empty),
            ``"instance"``: (h, w) int32 index into `instances` (-1: empty). Row 0 is the top.
        """
        encoder = self._encode_frame(view_proj, instances, cull_backfaces)
        size = (self.width, self.height, 1)
        for name, tex in (("depth", self._depth_tex), ("triangle", self._triangle_tex),
                          ("instance", self._instance_tex)):
            source = {"texture": tex, "mip_level": 0, "origin": (0, 0, 0),
                      "aspect": wgpu.TextureAspect.depth_only if name == "depth"
                      else wgpu.TextureAspect.all}
            dest = {"buffer": self._readback[name], "offset": 0,
                    "bytes_per_row": self._row_bytes, "rows_per_image": self.height}
            encoder.copy_texture_to_buffer(source, dest, size)
        self.device.queue.submit([encoder.finish()])

        out: dict[str, np.ndarray] = {}
        for name, dtype in (("depth", np.float32), ("triangle", np.uint32),
                            ("instance", np.uint32)):
            buf = self._readback[name]
            buf.map_sync(wgpu.MapMode.READ)
            try:
                raw = np.frombuffer(buf.read_mapped(), dtype=dtype)
            finally:
                buf.unmap()
            img = raw.reshape(self.height, self._row_bytes // 4)[:, :self.width]
            if name == "depth":
                out[name] = np.ascontiguousarray(img, dtype=np.float32)
            else:
                out[name] = img.astype(np.int32) - 1
        return out

    def render_timed(self, view_proj: np.ndarray, instances: Sequence[tuple[int, np.ndarray]], *,
                     repeats: int = 1) -> float:
        """Draw like `render` (back faces culled, no image readback) `repeats` times, waiting for
        the GPU after each frame; returns the median seconds per frame (upload, encoding,
        submission and GPU time)."""
        if repeats < 1:
            raise ValueError(f"render_timed: repeats must be >= 1, got {repeats}")
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            encoder = self._encode_frame(view_proj, instances, True)
            self.device.queue.submit([encoder.finish()])
            self._wait_for_gpu()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    # ------------------------------------------------------------------------------------------

    def _wait_for_gpu(self) -> None:
        """Block until all work submitted so far has finished.

        wgpu-py 0.32 has ``queue.on_submitted_work_done_sync()``, but with its bundled wgpu-native
        the call raises a TypeError (its callback signature lacks the WGPUStringView message
        argument). The first failure switches to the fallback for good: copy 4 bytes in a new
        submission and map the destination, which resolves only once the queue has drained up
        to that submission (queue submissions complete in order)."""
        queue = self.device.queue
        if self._work_done_usable:
            try:
                queue.on_submitted_work_done_sync()
                return
            except Exception:  # broken binding (see above); any failure: use the fallback
                self._work_done_usable = False
        encoder = self.device.create_command_encoder(label="reference.sync_encoder")
        encoder.copy_buffer_to_buffer(self._frame_uniform, 0, self._sync_buffer, 0, 4)
        queue.submit([encoder.finish()])
        self._sync_buffer.map_sync(wgpu.MapMode.READ)
        self._sync_buffer.unmap()

    def _ensure_instance_capacity(self, count: int) -> None:
        """Grow the world-matrix storage buffer to hold `count` matrices (rebinding group 0)."""
        if self._worlds is not None and self._worlds.size >= count * 64:
            return
        capacity = max(count, 1)
        if self._worlds is not None:
            capacity = max(capacity, 2 * self._worlds.size // 64)
        self._worlds = self.device.create_buffer(
            label="reference.worlds", size=capacity * 64,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST)
        self._frame_group = bind_group(self.device, self._frame_layout, FRAME_BINDINGS, {
            "frame": (self._frame_uniform, 0, 64), "worlds": self._worlds,
        }, "reference.frame_group")

    def _encode_frame(self, view_proj: np.ndarray, instances: Sequence[tuple[int, np.ndarray]],
                      cull_backfaces: bool) -> wgpu.GPUCommandEncoder:
        """Upload the matrices and encode the render pass; returns the open encoder."""
        vp = np.asarray(view_proj, dtype=np.float32)
        if vp.shape != (4, 4):
            raise ValueError(f"render: view_proj must be (4, 4), got {vp.shape}")
        ids = []
        worlds = np.empty((len(instances), 4, 4), np.float32)
        for i, (mesh_id, world) in enumerate(instances):
            if not 0 <= int(mesh_id) < len(self._meshes):
                raise ValueError(f"render: instance {i} names mesh {mesh_id}, "
                                 f"{len(self._meshes)} meshes are uploaded")
            w = np.asarray(world, dtype=np.float32)
            if w.shape != (4, 4):
                raise ValueError(f"render: instance {i} world matrix must be (4, 4), "
                                 f"got {w.shape}")
            ids.append(int(mesh_id))
            worlds[i] = w.T  # numpy row-major -> WGSL column-major
        queue = self.device.queue
        queue.write_buffer(self._frame_uniform, 0, np.ascontiguousarray(vp.T))
        if ids:
            self._ensure_instance_capacity(len(ids))
            queue.write_buffer(self._worlds, 0, np.ascontiguousarray(worlds))

        encoder = self.device.create_command_encoder(label="reference.encoder")
        clear = {"load_op": wgpu.LoadOp.clear, "store_op": wgpu.StoreOp.store,
                 "clear_value": (0, 0, 0, 0)}
        rpass = encoder.begin_render_pass(
            label="reference.pass",
            color_attachments=[{"view": self._triangle_view, **clear},
                               {"view": self._instance_view, **clear}],
            depth_stencil_attachment={"view": self._depth_view, "depth_clear_value": 0.0,
                                      "depth_load_op": wgpu.LoadOp.clear,
                                      "depth_store_op": wgpu.StoreOp.store},
        )
        cull = wgpu.CullMode.back if cull_backfaces else wgpu.CullMode.none
        rpass.set_pipeline(self._pipelines[cull])
        rpass.set_bind_group(0, self._frame_group)
        bound = None
        for i, mesh_id in enumerate(ids):
            for chunk in self._meshes[mesh_id].chunks:
                if bound is not chunk:
                    rpass.set_bind_group(1, chunk.bind_group)
                    bound = chunk
                rpass.draw(3 * chunk.triangle_count, 1, 0, i)
        rpass.end()
        return encoder
