// The marked entries get pages, view by view from the coarsest (the order of table.w: the sun's
// levels and the local faces' mips interleaved, so that the fallbacks every pixel marked get
// pages first when the pool runs out), by one workgroup that walks each view's marked list (a
// few hundred entries a frame: one dispatch, where a dispatch a view cost lavapipe ~0.5 ms
// each): an entry without a page takes one from the free list (none left: counted, a coarser
// level serves its pixels, and the next frame frees the pages not marked); an
// entry not valid is drawn this frame: listed in `shadow_draw`, its page-mask bits set up to the
// top mip (the finest holds its physical page + 1, the rasterizers' target). Then the clear's
// dispatch (shadow_clear_args, never bound with it) is sized.
// Reads shadow, shadow_views, shadow_marked, shadow_free; writes the table (in shadow_map),
// shadow_owner, shadow_pool_state, shadow_hpm, shadow_draw, state (the page counters),
// shadow_clear_args.
#include "layout.wgsl"
#include "shadow.wgsl"
#include "shadow_table.wgsl"
#include "shadow_state.wgsl"

fn alloc(v: u32, local: u32) {
    atomicAdd(&state[S_SHADOW_MARKED], 1u);
    let e = shadow_views[v].table.x + local;
    let ent = table_entry(e);
    let pg = shadow_entry_page(v, local);
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
        shadow_owner[phys] = page_id(v, local) + 1u;
        flags = 0u;
        atomicAdd(&state[S_SHADOW_ALLOCATED], 1u);
    }
    if (flags & PAGE_VALID) == 0u {
        let d = atomicAdd(&state[S_SHADOW_DRAWN], 1u);
        shadow_draw[d] = page_id(v, local);
        flags = PAGE_VALID | PAGE_DRAW;
        atomicStore(&shadow_hpm[hpm_index(v, 0u, pg.x, pg.y)], phys + 1u);
        for (var m = 1u; m < hpm_mips(v); m++) {
            atomicStore(&shadow_hpm[hpm_index(v, m, pg.x >> m, pg.y >> m)], 1u);
        }
    } else {
        atomicAdd(&state[S_SHADOW_CACHED], 1u);
    }
    table_store(e, vec4<u32>(phys, shadow_tag(v, pg.x, pg.y), flags, 0u));
}

@compute @workgroup_size(WORKGROUP)
fn cs_main(@builtin(local_invocation_index) lid: u32) {
    for (var i = 0u; i < shadow.views.x; i++) {
        let v = shadow_views[i].table.w;
        let n = atomicLoad(&shadow_pool_state[MARKED_COUNT + v]);
        let base = shadow_views[v].table.x;
        for (var k = lid; k < n; k += WORKGROUP) {
            alloc(v, shadow_marked[base + k]);
        }
        storageBarrier();  // this view's pops before the next view's
        workgroupBarrier();
    }
    if lid == 0u {
        let drawn = min(atomicLoad(&state[S_SHADOW_DRAWN]), shadow.counts.y);
        shadow_clear_args[0] = min(drawn, MAX_DISPATCH);
        shadow_clear_args[1] = (drawn + MAX_DISPATCH - 1u) / MAX_DISPATCH;
        shadow_clear_args[2] = 1u;
    }
}
