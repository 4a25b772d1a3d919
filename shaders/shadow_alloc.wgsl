// The marked entries of one level get pages (shadow_pages.wgsl's cs_alloc_level names the level,
// the coarsest first; dispatched indirectly over its marked list, shadow_alloc_args, never bound
// here): an entry without a page takes one from the free list (none left: counted, a coarser
// level serves its pixels, and the next frame frees the pages not marked); an entry not valid is
// drawn this frame: listed in `shadow_draw`, its page-mask bits set up to the top mip (the
// finest holds its physical page + 1, the rasterizers' target).
// Reads shadow, shadow_views, shadow_marked, shadow_free; writes the table (in shadow_map),
// shadow_owner, shadow_pool_state, shadow_hpm, shadow_draw, state (the page counters).
#include "layout.wgsl"
#include "shadow.wgsl"
#include "shadow_table.wgsl"
#include "shadow_state.wgsl"

fn alloc(e: u32) {
    atomicAdd(&state[S_SHADOW_MARKED], 1u);
    let v = e / (SHADOW_PAGES * SHADOW_PAGES);
    let ent = table_entry(e);
    let pg = shadow_entry_page(v, e);
    var phys = ent.x;
    var flags = ent.z;
    if phys == NO_PAGE {
        let k = atomicSub(&shadow_pool_state[0], 1u);
        if k == 0u || k > shadow.counts.y {  // the pool is spent: a coarser level serves
            atomicAdd(&state[S_SHADOW_FAILED], 1u);
            atomicStore(&shadow_pool_state[2], 1u);
            return;
        }
        phys = shadow_free[k - 1u];
        shadow_owner[phys] = e + 1u;
        flags = 0u;
        atomicAdd(&state[S_SHADOW_ALLOCATED], 1u);
    }
    if (flags & PAGE_VALID) == 0u {
        let d = atomicAdd(&state[S_SHADOW_DRAWN], 1u);
        shadow_draw[d] = e;
        flags = PAGE_VALID | PAGE_DRAW;
        atomicStore(&shadow_hpm[hpm_index(v, 0u, pg.x, pg.y)], phys + 1u);
        for (var m = 1u; m < HPM_MIPS; m++) {
            atomicStore(&shadow_hpm[hpm_index(v, m, pg.x >> m, pg.y >> m)], 1u);
        }
    } else {
        atomicAdd(&state[S_SHADOW_CACHED], 1u);
    }
    table_store(e, vec4<u32>(phys, shadow_tag(v, pg.x, pg.y), flags, 0u));
}

@compute @workgroup_size(64)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = atomicLoad(&shadow_pool_state[3]);
    if v < shadow.counts.x && gid.x < atomicLoad(&shadow_pool_state[MARKED_COUNT + v]) {
        alloc(shadow_marked[v * SHADOW_PAGES * SHADOW_PAGES + gid.x]);
    }
}
