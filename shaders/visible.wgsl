// Appending to the visible list: the software rasterizer's clusters fill its first half from the
// front (the hardware rasterizer's, cull.wgsl `emit_hw`, its second half). Needs `frame`,
// `state` and `visible` (vec2 entries; with SHADOW vec4, a shadow view's HW item also naming its
// page).

// a visible entry; a shadow view's HW item also names its page: physical, and window (x, y)
#ifdef SHADOW
fn visible_entry(ii: u32, cref: u32, page: vec2<u32>) -> vec4<u32> {
    return vec4<u32>(ii, cref, page);
}
#else
fn visible_entry(ii: u32, cref: u32, page: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(ii, cref);
}
#endif

// cluster `cref` of instance word `ii`, `triangles` of them, for the software rasterizer (the
// half full: flagged, dropped)
fn emit_sw(ii: u32, cref: u32, triangles: u32) {
    let k = atomicAdd(&state[S_SW_COUNT], 1u);
    if k < frame.visible_capacity / 2u {
        visible[k] = visible_entry(ii, cref, vec2<u32>(0u));
        atomicAdd(&state[S_SW_CLUSTERS], 1u);
        atomicAdd(&state[S_SW_TRIANGLES], triangles);
    } else {
        atomicOr(&state[S_OVERFLOW], OVERFLOW_VISIBLE);
    }
}
