// The pages drawn this frame cleared to the far depth before the shadow views are drawn: a
// workgroup a page of the draw list (shadow_pages.wgsl's cs_alloc), every texel the largest float
// (nothing there). Reads shadow, state (the list's length), shadow_draw, the table; writes the
// pool (both in shadow_map). Dispatched indirectly (shadow_clear_args, never bound here).
#include "layout.wgsl"
#include "shadow.wgsl"
#include "shadow_table.wgsl"

@compute @workgroup_size(CLEAR_LANES)
fn cs_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let d = wid.x + wid.y * MAX_DISPATCH;
    if d >= min(state[S_SHADOW_DRAWN], shadow.counts.y) {
        return;
    }
    let base = pool_word(table_entry(id_entry(shadow_draw[d])).x, 0u, 0u);
    for (var i = lid; i < SHADOW_PAGE * SHADOW_PAGE; i += CLEAR_LANES) {
        shadow_map[base + i] = 0x7f7fffffu;  // the largest float: lit from any depth
    }
}
