// The shadow map's pages, each frame before the shadow views are drawn (renderer/shadows.py):
//   cs_mark     a lane per pixel: the pixel's world point (the visibility buffer's depth through
//               the inverse view-projection), the level whose texel is about its footprint, and
//               the pages its filter reads there, FALLBACK_STEP levels coarser and in the
//               coarsest level (the fallbacks) are stamped in `shadow_marks`;
//   cs_begin    one lane: the free list's top made whole again, last frame's pool pressure;
//   cs_free     a lane per table entry: a page that scrolled out of its window, or (under
//               pressure) one not marked this frame, goes back to the free list; an entry under
//               a moved instance's bounds (`shadow_dirty`) is no longer valid;
//   cs_alloc    a lane per entry of one level, the coarsest first (cs_alloc_level before each
//               steps down): a marked entry without a page takes one from the free list (none
//               left: counted, and the next frame frees unmarked pages); a marked entry not valid
//               is drawn this frame: listed in `shadow_draw`, its page-mask bits set up to the
//               top mip;
//   cs_clear_args: the dispatch of shadow_clear.wgsl, which clears the listed pages.
// Reads frame, the visibility buffer, shadow, shadow_views, shadow_dirty; writes shadow_marks,
// the table (in shadow_map), shadow_free, shadow_pool_state (free-list top, pressure now,
// pressure next, the level being allocated), shadow_hpm, shadow_draw, state (the page
// counters), shadow_clear_args (the clear's dispatch).
#include "layout.wgsl"
#include "shadow.wgsl"
#include "shadow_table.wgsl"

fn table_store(e: u32, ent: vec4<u32>) {
    let b = 4u * e;
    shadow_map[b] = ent.x;
    shadow_map[b + 1u] = ent.y;
    shadow_map[b + 2u] = ent.z;
}

fn vis_depth_at(pixel: u32) -> f32 {
#ifdef VIS64
    return bitcast<f32>(vis[pixel].y);
#else
    return bitcast<f32>(vis_depth[pixel]);
#endif
}

fn mark_pages(v: u32, p: vec3<f32>) {
    let t = shadow_texel(v, p);
    let r = shadow.footprint.z;
    let lo = vec2<i32>(floor((t.xy - r) / f32(SHADOW_PAGE)));
    let hi = vec2<i32>(floor((t.xy + r) / f32(SHADOW_PAGE)));
    let n = i32(SHADOW_PAGES);
    for (var y = max(lo.y, 0); y <= min(hi.y, n - 1); y++) {
        for (var x = max(lo.x, 0); x <= min(hi.x, n - 1); x++) {
            // neighbouring pixels mark the same pages: look before writing
            let e = shadow_entry(v, x, y);
            if atomicLoad(&shadow_marks[e]) != shadow.counts.z {
                atomicStore(&shadow_marks[e], shadow.counts.z);
            }
        }
    }
}

@compute @workgroup_size(8, 8)
fn cs_mark(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = u32(frame.viewport.x);
    if gid.x >= w || gid.y >= u32(frame.viewport.y) {
        return;
    }
    let depth = vis_depth_at(gid.y * w + gid.x);
    if depth <= 0.0 {
        return;
    }
    let ndc = vec2<f32>((f32(gid.x) + 0.5) * frame.viewport.z * 2.0 - 1.0,
                        1.0 - (f32(gid.y) + 0.5) * frame.viewport.w * 2.0);
    let h = shadow.inv_view_proj * vec4<f32>(ndc, depth, 1.0);
    let p = h.xyz / h.w;
    let last = shadow.counts.x - 1u;
    let v = shadow_level(distance(frame.camera.xyz, p));
    mark_pages(v, p);
    // the fallbacks' texels are 8x and more the pixel's: a pixel in 4 x 4 marks them (the
    // mark radius spans the others)
    if ((gid.x | gid.y) & 3u) == 0u {
        let fallback = min(v + FALLBACK_STEP, last);
        if fallback != v {
            mark_pages(fallback, p);
        }
        if last != fallback {
            mark_pages(last, p);
        }
    }
}

@compute @workgroup_size(1)
fn cs_begin() {
    if atomicLoad(&shadow_pool_state[0]) > shadow.counts.y {  // popped below 0 last frame
        atomicStore(&shadow_pool_state[0], 0u);
    }
    atomicStore(&shadow_pool_state[1], atomicLoad(&shadow_pool_state[2]));
    atomicStore(&shadow_pool_state[2], 0u);
    atomicStore(&shadow_pool_state[3], shadow.counts.x);  // cs_alloc_level steps it down
}

fn entry_count() -> u32 {
    return shadow.counts.x * SHADOW_PAGES * SHADOW_PAGES;
}

@compute @workgroup_size(64)
fn cs_free(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if e >= entry_count() {
        return;
    }
    let v = e / (SHADOW_PAGES * SHADOW_PAGES);
    let ent = table_entry(e);
    var phys = ent.x;
    var flags = ent.z & PAGE_VALID;
    let pg = shadow_entry_page(v, e);
    let tag = shadow_tag(v, pg.x, pg.y);
    let marked = atomicLoad(&shadow_marks[e]) == shadow.counts.z;
    let pressure = atomicLoad(&shadow_pool_state[1]) != 0u;
    if phys != NO_PAGE && (ent.y != tag || (pressure && !marked)) {
        let k = atomicAdd(&shadow_pool_state[0], 1u);
        shadow_free[k] = phys;
        phys = NO_PAGE;
        flags = 0u;
    }
    // moved instances' bounds, before and after: (x0, y0, x1, y1) absolute pages, a rect a level
    let a = shadow_views[v].origin.xy + pg;
    for (var b = 0u; b < shadow.counts.w; b++) {
        let r = shadow_dirty[b * SHADOW_LEVELS + v];
        if all(a >= r.xy) && all(a <= r.zw) {
            flags = 0u;
        }
    }
    table_store(e, vec4<u32>(phys, ent.y, flags, 0u));
}

fn alloc(e: u32) {
    if atomicLoad(&shadow_marks[e]) != shadow.counts.z {
        return;
    }
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
        flags = 0u;
        atomicAdd(&state[S_SHADOW_ALLOCATED], 1u);
    }
    if (flags & PAGE_VALID) == 0u {
        let d = atomicAdd(&state[S_SHADOW_DRAWN], 1u);
        shadow_draw[d] = e;
        flags = PAGE_VALID | PAGE_DRAW;
        // the finest mip holds the physical page + 1 (the rasterizers' target)
        atomicStore(&shadow_hpm[hpm_index(v, 0u, pg.x, pg.y)], phys + 1u);
        for (var m = 1u; m < HPM_MIPS; m++) {
            atomicStore(&shadow_hpm[hpm_index(v, m, pg.x >> m, pg.y >> m)], 1u);
        }
    } else {
        atomicAdd(&state[S_SHADOW_CACHED], 1u);
    }
    table_store(e, vec4<u32>(phys, shadow_tag(v, pg.x, pg.y), flags, 0u));
}

// the levels one by one from the coarsest, so that the fallbacks every pixel marked get pages
// first when they run out
@compute @workgroup_size(1)
fn cs_alloc_level() {
    atomicSub(&shadow_pool_state[3], 1u);
}

@compute @workgroup_size(64)
fn cs_alloc(@builtin(global_invocation_id) gid: vec3<u32>) {
    let per = SHADOW_PAGES * SHADOW_PAGES;
    let v = atomicLoad(&shadow_pool_state[3]);
    if gid.x < per && v < shadow.counts.x {
        alloc(v * per + gid.x);
    }
}

@compute @workgroup_size(1)
fn cs_clear_args() {
    let n = min(atomicLoad(&state[S_SHADOW_DRAWN]), shadow.counts.y);
    shadow_clear_args[0] = min(n, MAX_DISPATCH);
    shadow_clear_args[1] = (n + MAX_DISPATCH - 1u) / MAX_DISPATCH;
    shadow_clear_args[2] = 1u;
}
