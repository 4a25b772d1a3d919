"""BVH and cluster culling: LOD by projected error, frustum, SW/HW bins (shaders/cull.wgsl).

Two traversals of the same rules: ``persistent`` (one dispatch of persistent workgroups pulling
from the global queue; see docs/ARCHITECTURE.md "Persistent-thread culling and per-level
traversal") and per-level (the portable fallback: per BVH depth, one lane of `prepare.wgsl`
takes what the last level pushed and sizes the dispatch that loops over it). Then `prepare.wgsl`
sizes the raster work.
"""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.layout import ARGS
from renderer.limits import SHADOW_VIEWS
from renderer.passes import Pass

BINDINGS = (
    Binding("frame", UNIFORM, "Frame"),
    Binding("instances", READ, "array<vec4<u32>>"),
    Binding("assets", READ, "array<AssetInfo>"),
    Binding("nodes", READ, "array<u32>"),
    Binding("groups", READ, "array<u32>"),
    Binding("parts", READ, "array<u32>"),
    Binding("pages", READ, "array<u32>"),
    Binding("queue", STORAGE, "array<atomic<u32>>"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("visible", STORAGE, "array<vec2<u32>>"),
    Binding("hzb", READ, "array<u32>"),
    Binding("occluded", STORAGE, "array<vec2<u32>>"),
    # streaming (renderer/streaming.py): identity tables when everything is resident
    Binding("residency", READ, "array<u32>"),
    Binding("effective", READ, "array<u32>"),
    Binding("requests", STORAGE, "array<vec2<u32>>"),
    Binding("request_stamp", STORAGE, "array<atomic<u32>>"),
    Binding("slot_used", STORAGE, "array<u32>"),
)

# the shadow views (renderer/shadows.py): the same traversal with SHADOW defined; its visible
# entries are (instance | view << VIEW_SHIFT, cluster, page entry, 0)
SHADOW_BINDINGS = (
    *(Binding("visible", STORAGE, "array<vec4<u32>>") if b.name == "visible" else b
      for b in BINDINGS if b.name not in ("hzb", "occluded")),  # no HZB: the page mask culls
    Binding("shadow", UNIFORM, "ShadowInfo"),
    Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_VIEWS}>"),
    Binding("shadow_hpm", READ, "array<u32>"),
    Binding("shadow_draw", READ, "array<u32>"),
)

PREPARE_BINDINGS = (
    Binding("frame", UNIFORM, "Frame"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("args", STORAGE, "array<u32>"),
)


class Prepare(Pass):
    """One-lane passes writing indirect arguments (shaders/prepare.wgsl)."""

    label = "prepare"
    bindings = PREPARE_BINDINGS

    def __init__(self, device, *, sw_per_workgroup: int = 1, level_workgroups: int = 16) -> None:
        super().__init__()
        self.bgl, self.pipes = compute_pipelines(device, "prepare.wgsl", PREPARE_BINDINGS,
                                                 ["cs_raster_args", "cs_post_begin",
                                                  "cs_raster_all", "cs_level_begin"],
                                                 constants={"SW_PER_WORKGROUP": sw_per_workgroup,
                                                            "LEVEL_WORKGROUPS": level_workgroups},
                                                 label=self.label)

    def dispatch(self, cp, frame, entry: str) -> None:
        cp.set_pipeline(self.pipes[entry])
        cp.set_bind_group(0, self.group(frame))
        cp.dispatch_workgroups(1)


class Cull(Pass):
    """The main pass (`encode`) and the post pass (`encode_post`) of BVH and cluster culling.
    The main pass defers what the previous frame's HZB hides to the occluded list; the post pass
    seeds the queue with the deferred nodes, tests the deferred clusters, and traverses again
    against this frame's HZB (shaders/cull.wgsl's POST override)."""

    label = "cull"
    bindings = BINDINGS

    def __init__(self, device, *, persistent: bool, workgroups: int = 128,
                 level_workgroups: int = 16, sw_per_workgroup: int = 1,
                 shadow: bool = False) -> None:
        super().__init__()
        self.persistent = persistent
        self.workgroups = workgroups  # persistent workgroups
        if shadow:  # the shadow views: a main pass, no post pass
            self.label, self.bindings = "shadow_cull", SHADOW_BINDINGS
        # main (POST false) and post pass pipelines; the per-level entry points visit parts
        # inline (INLINE_PARTS), the persistent one queues them
        self.pipes, self.post_pipes = {}, {}
        for post, pipes in ((False, self.pipes), (True, self.post_pipes))[: 1 + (not shadow)]:
            for inline, entries in ((False, ["cs_persistent"] + ["cs_post_seed"] * post),
                                    (True, ["cs_level"])):
                bgl, made = compute_pipelines(
                    device, "cull.wgsl", self.bindings, entries,
                    defines=["SHADOW"] if shadow else [],
                    constants={"POST": post, "INLINE_PARTS": inline},
                    label="cull.post" if post else self.label)
                self.bgl = self.bgl or bgl  # equivalent layouts: one bind group serves all
                pipes.update(made)
        # per-level traversal: workgroups per level, more where a level is big (prepare.wgsl)
        self.prepare = Prepare(device, sw_per_workgroup=sw_per_workgroup,
                               level_workgroups=level_workgroups)

    def _traverse(self, cp, frame, pipes) -> None:
        if self.persistent:
            cp.set_pipeline(pipes["cs_persistent"])
            cp.set_bind_group(0, self.group(frame))
            cp.dispatch_workgroups(self.workgroups)
        else:
            # nodes of depth d push depth d + 1 nodes and visit their groups' parts: max depth
            # + 1 rounds (the far instances' parts are in the first); the post pass's seeds are
            # at any depth, and the same number of rounds reaches below the deepest of them.
            # Each level's dispatch is sized on the GPU by what the one before pushed.
            for _ in range(frame.max_depth + 1):
                self.prepare.dispatch(cp, frame, "cs_level_begin")
                cp.set_pipeline(pipes["cs_level"])
                cp.set_bind_group(0, self.group(frame))
                cp.dispatch_workgroups_indirect(frame.buffers["args"], 4 * ARGS["level_x"])

    def encode(self, frame, encoder) -> None:
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        self._traverse(cp, frame, self.pipes)
        self.prepare.dispatch(cp, frame, "cs_raster_args")
        cp.end()

    def encode_post(self, frame, encoder) -> None:
        label = "post_cull"
        cp = encoder.begin_compute_pass(label=label, timestamp_writes=frame.timestamps(label))
        self.prepare.dispatch(cp, frame, "cs_post_begin")
        cp.set_pipeline(self.post_pipes["cs_post_seed"])
        cp.set_bind_group(0, self.group(frame))
        cp.dispatch_workgroups_indirect(frame.buffers["args"], 4 * ARGS["post_x"])
        self._traverse(cp, frame, self.post_pipes)
        self.prepare.dispatch(cp, frame, "cs_raster_args")
        cp.end()

    def encode_raster_all(self, frame, encoder) -> None:
        """Raster arguments for every visible cluster (the 32-bit path's id passes)."""
        cp = encoder.begin_compute_pass(label="raster_all_args")
        self.prepare.dispatch(cp, frame, "cs_raster_all")
        self.prepare.dispatch(cp, frame, "cs_raster_args")
        cp.end()
