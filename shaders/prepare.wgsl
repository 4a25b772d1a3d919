// Indirect arguments, one lane each: the raster work (SW dispatch size, HW draw instance count),
// the post pass's seeding dispatch and each level of the per-level traversal. Reads and
// writes `state`; writes `args`, which later passes use as indirect buffers (never bound with it).
#include "layout.wgsl"

// clusters a SW raster workgroup draws (raster_sw.wgsl: 128 / SW_LANES * SW_ROUNDS)
override SW_PER_WORKGROUP: u32 = 1u;
// the per-level traversal's workgroups per level (RenderOptions.level_workgroups), and the most
// items one of its lanes takes (more workgroups where a level has more): lavapipe ends every
// loop of an invocation once its loops made 65,535 iterations in all, silently, and an item
// costs up to a few thousand (a node's eight groups' parts visited inline, their clusters'
// frustum and occlusion tests)
override LEVEL_WORKGROUPS: u32 = 16u;
const LEVEL_ITEMS: u32 = 8u;

// the per-level traversal, before each level: the level is what the previous one pushed; its
// dispatch takes LEVEL_WORKGROUPS workgroups, or as many more as keep a lane within LEVEL_ITEMS
@compute @workgroup_size(1)
fn cs_level_begin() {
    let start = atomicLoad(&state[S_LEVEL_END]);
    let end = max(min(atomicLoad(&state[S_QUEUE_WRITE]), frame.queue_capacity), start);
    atomicStore(&state[S_LEVEL_START], start);
    atomicStore(&state[S_LEVEL_END], end);
    let per_group = WORKGROUP * LEVEL_ITEMS;
    let groups = max(LEVEL_WORKGROUPS, (end - start + per_group - 1u) / per_group);
    args[A_LEVEL_X] = min(groups, MAX_DISPATCH);
    args[A_LEVEL_Y] = (groups + MAX_DISPATCH - 1u) / MAX_DISPATCH;
    args[A_LEVEL_Z] = 1u;
}

// the raster passes draw visible[first..count): everything in the main pass (first = 0), the
// clusters the post pass added after it
@compute @workgroup_size(1)
fn cs_raster_args() {
    let half = frame.visible_capacity / 2u;
    let sw = min(atomicLoad(&state[S_SW_COUNT]), half) - atomicLoad(&state[S_SW_FIRST]);
    let hw = min(atomicLoad(&state[S_HW_COUNT]), half) - atomicLoad(&state[S_HW_FIRST]);
    let groups = (sw + SW_PER_WORKGROUP - 1u) / SW_PER_WORKGROUP;
    args[A_SW_X] = min(groups, MAX_DISPATCH);
    args[A_SW_Y] = (groups + MAX_DISPATCH - 1u) / MAX_DISPATCH;
    args[A_SW_Z] = 1u;
    args[A_HW_VERTEX_COUNT] = 3u * MAX_CLUSTER_TRIANGLES;
    args[A_HW_INSTANCE_COUNT] = hw;
    args[A_HW_FIRST_VERTEX] = 0u;
    args[A_HW_FIRST_INSTANCE] = 0u;
}

// before the post pass: the queue starts empty again, the raster passes will draw only what the
// post pass adds, and the seeding dispatch covers the occluded list
@compute @workgroup_size(1)
fn cs_post_begin() {
    let half = frame.visible_capacity / 2u;
    atomicStore(&state[S_QUEUE_WRITE], 0u);
    atomicStore(&state[S_QUEUE_READ], 0u);
    atomicStore(&state[S_LEVEL_START], 0u);
    atomicStore(&state[S_LEVEL_END], 0u);
    atomicStore(&state[S_SW_FIRST], min(atomicLoad(&state[S_SW_COUNT]), half));
    atomicStore(&state[S_HW_FIRST], min(atomicLoad(&state[S_HW_COUNT]), half));
    let n = min(atomicLoad(&state[S_OCCLUDED_TOTAL]), frame.occluded_capacity);
    let needed = (n + WORKGROUP - 1u) / WORKGROUP;
    args[A_POST_X] = min(needed, MAX_DISPATCH);
    args[A_POST_Y] = (needed + MAX_DISPATCH - 1u) / MAX_DISPATCH;
    args[A_POST_Z] = 1u;
}

// the 32-bit path's id passes run once, after every depth pass, over all visible clusters
@compute @workgroup_size(1)
fn cs_raster_all() {
    atomicStore(&state[S_SW_FIRST], 0u);
    atomicStore(&state[S_HW_FIRST], 0u);
}
