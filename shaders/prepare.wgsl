// Indirect arguments, one lane each: the next level of the per-level traversal (what the last
// level pushed), and the raster work (SW dispatch size, HW draw instance count). Reads and
// writes `state`; writes `args`, which later passes use as indirect buffers (never bound with it).
#include "layout.wgsl"

@compute @workgroup_size(1)
fn cs_level_args() {
    let start = atomicLoad(&state[S_LEVEL_END]);
    let end = min(atomicLoad(&state[S_QUEUE_WRITE]), frame.queue_capacity);
    atomicStore(&state[S_LEVEL_START], start);
    atomicStore(&state[S_LEVEL_END], end);
    let needed = (max(end, start) - start + WORKGROUP - 1u) / WORKGROUP;
    args[A_LEVEL_X] = min(needed, MAX_DISPATCH);
    args[A_LEVEL_Y] = (needed + MAX_DISPATCH - 1u) / MAX_DISPATCH;
    args[A_LEVEL_Z] = 1u;
}

// the raster passes draw visible[first..count): everything in the main pass (first = 0), the
// clusters the post pass added after it
@compute @workgroup_size(1)
fn cs_raster_args() {
    let half = frame.visible_capacity / 2u;
    let sw = min(atomicLoad(&state[S_SW_COUNT]), half) - atomicLoad(&state[S_SW_FIRST]);
    let hw = min(atomicLoad(&state[S_HW_COUNT]), half) - atomicLoad(&state[S_HW_FIRST]);
    args[A_SW_X] = min(sw, MAX_DISPATCH);
    args[A_SW_Y] = (sw + MAX_DISPATCH - 1u) / MAX_DISPATCH;
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
