// Indirect arguments, one lane each: the raster work (SW dispatch size, HW draw instance count)
// and the post pass's seeding dispatch. Reads and
// writes `state`; writes `args`, which later passes use as indirect buffers (never bound with it).
#include "layout.wgsl"

// clusters a SW raster workgroup draws (raster_sw.wgsl: 128 / SW_LANES * SW_ROUNDS)
override SW_PER_WORKGROUP: u32 = 1u;

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
