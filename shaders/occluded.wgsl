// The occluded list: what the main pass found behind the previous frame's HZB, for the post
// pass to test again. Nodes (BVH node, instance) fill it from the front, clusters (instance,
// cluster ref) from the back. Needs `frame`, `state` and `occluded`. A full list cannot drop a
// candidate (that could lose a visible surface): `defer_*` then return false and the caller
// treats the candidate as visible.

fn occluded_slot() -> bool {
    return atomicAdd(&state[S_OCCLUDED_TOTAL], 1u) < frame.occluded_capacity;
}

fn defer_node(n: u32, ii: u32) -> bool {
    if !occluded_slot() {
        atomicOr(&state[S_OVERFLOW], OVERFLOW_OCCLUDED);
        return false;
    }
    let k = atomicAdd(&state[S_OCCLUDED_NODES_COUNT], 1u);
    occluded[k] = vec2<u32>(n, ii);
    return true;
}

fn defer_cluster(ii: u32, cref: u32) -> bool {
    if !occluded_slot() {
        atomicOr(&state[S_OVERFLOW], OVERFLOW_OCCLUDED);
        return false;
    }
    let k = atomicAdd(&state[S_OCCLUDED_CLUSTERS_COUNT], 1u);
    occluded[frame.occluded_capacity - 1u - k] = vec2<u32>(ii, cref);
    return true;
}
