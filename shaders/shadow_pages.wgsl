// The shadow maps' pages, each frame before the shadow views are drawn (renderer/shadows.py).
// Its work follows the pixels and the pool, never the table's entries (262,144 for the sun):
//   cs_begin    one lane: the free list's top made whole again, last frame's pool pressure, the
//               marked lists emptied;
//   cs_mark     a lane per pixel: the pixel's world point (the visibility buffer's depth through
//               the inverse view-projection), the sun's level whose texel is about its
//               footprint, and the pages its filter reads there, FALLBACK_STEP levels coarser
//               and in the coarsest level (the fallbacks) are stamped in `shadow_marks`, each
//               entry listed once in its view's list (`shadow_marked`); the same for each spot
//               or point light whose range holds the point: the mip of the face it lies in,
//               FALLBACK_STEP mips coarser and the one-page mip;
//   cs_free     a lane per physical page (`shadow_owner`: its page id + 1): a page that scrolled out
//               of its window, or (under pressure) one not marked this frame, goes back to the
//               free list; a page under a moved instance's bounds (`shadow_dirty`) is no longer
//               valid;
// then shadow_alloc.wgsl gives the marked entries pages and shadow_clear.wgsl clears those drawn.
// Reads frame, the visibility buffer, shadow, shadow_views, lights, shadow_dirty; writes shadow_marks,
// shadow_marked, the table (in shadow_map), shadow_free, shadow_owner, shadow_pool_state
// (free-list top, pressure now, pressure next, 0, each view's marked count).
#include "layout.wgsl"
#include "shadow.wgsl"
#include "shadow_table.wgsl"
#include "shadow_state.wgsl"

// a scene with spot or point lights (the pipelines without: no loop over none, whose code alone
// cost lavapipe's mark pass twice its time)
override LIGHTS: bool = true;

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
    let n = i32(view_pages(v));
    let base = shadow_views[v].table.x;
    for (var y = max(lo.y, 0); y <= min(hi.y, n - 1); y++) {
        for (var x = max(lo.x, 0); x <= min(hi.x, n - 1); x++) {
            // neighbouring pixels mark the same pages: look before writing; the first to
            // stamp an entry lists it
            let local = shadow_local(v, x, y);
            let stamp = shadow.counts.z;
            if atomicLoad(&shadow_marks[base + local]) != stamp
               && atomicExchange(&shadow_marks[base + local], stamp) != stamp {
                let k = atomicAdd(&shadow_pool_state[MARKED_COUNT + v], 1u);
                shadow_marked[base + k] = local;
            }
        }
    }
}

// the pages under point p of view `base + m`, and with `fallbacks` those FALLBACK_STEP views
// coarser and of the coarsest, `base + last` (a sun's level, or a light face's mip)
fn mark_with_fallbacks(base: u32, m: u32, last: u32, p: vec3<f32>, fallbacks: bool) {
    mark_pages(base + m, p);
    if fallbacks {
        let fallback = min(m + FALLBACK_STEP, last);
        if fallback != m {
            mark_pages(base + fallback, p);
        }
        if fallback != last {
            mark_pages(base + last, p);
        }
    }
}

// the pages of a spot or point light's face under point p (a lane in 16 also marks the
// fallbacks)
fn mark_light(l: Light, p: vec3<f32>, dist: f32, fallbacks: bool) {
    let d = p - l.position.xyz;
    if l.views.y == 0u || (l.position.w > 0.0 && length(d) >= l.position.w) {
        return;  // casts no shadow, or out of its range
    }
    let v0 = light_face(l.views, d);
    let z = (shadow_views[v0].view_proj * vec4<f32>(p, 1.0)).w;
    let c = shadow_texel(v0, p).xy / view_texels(v0);
    if z <= shadow_views[v0].texel.z || any(c < vec2<f32>(0.0)) || any(c > vec2<f32>(1.0)) {
        return;  // nearer than its near plane, or outside a spot's window
    }
    mark_with_fallbacks(v0, face_mip(v0, z, dist), LOCAL_MIPS - 1u, p, fallbacks);
}

// 16 x 16 lanes a workgroup: on CPU adapters a workgroup costs microseconds whatever it does
@compute @workgroup_size(MARK_TILE, MARK_TILE)
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
    let dist = distance(frame.camera.xyz, p);
    // the fallbacks' texels are 8x and more the pixel's: a pixel in 4 x 4 marks them (the
    // mark radius spans the others)
    let fallbacks = ((gid.x | gid.y) & 3u) == 0u;
    // (the count through a per-pixel select, as the sun's test below)
    let light_count = select(0u, shadow.views.y, depth > 0.0);
    for (var i = 0u; LIGHTS && i < light_count; i++) {
        mark_light(lights[i], p, dist, fallbacks);
    }
    // no sun: nothing of its marked (folded into a per-pixel test: a branch on a uniform
    // alone costs lavapipe a compiled variant a dispatch, never freed)
    if shadow.sun.w == 0.0 && depth > 0.0 {
        return;
    }
    mark_with_fallbacks(0u, shadow_level(dist), shadow.counts.x - 1u, p, fallbacks);
}

@compute @workgroup_size(1)
fn cs_begin() {
    if atomicLoad(&shadow_pool_state[0]) > shadow.counts.y {  // popped below 0 last frame
        atomicStore(&shadow_pool_state[0], 0u);
    }
    atomicStore(&shadow_pool_state[1], atomicLoad(&shadow_pool_state[2]));
    atomicStore(&shadow_pool_state[2], 0u);
    for (var v = 0u; v < shadow.views.x; v++) {
        atomicStore(&shadow_pool_state[MARKED_COUNT + v], 0u);
    }
}

@compute @workgroup_size(WORKGROUP)
fn cs_free(@builtin(global_invocation_id) gid: vec3<u32>) {
    let phys = gid.x;
    if phys >= shadow.counts.y || shadow_owner[phys] == 0u {
        return;
    }
    let id = shadow_owner[phys] - 1u;
    let v = id_view(id);
    let e = id_entry(id);
    let ent = table_entry(e);
    let pg = shadow_entry_page(v, id & 0xffffu);
    let marked = atomicLoad(&shadow_marks[e]) == shadow.counts.z;
    let pressure = atomicLoad(&shadow_pool_state[1]) != 0u;
    if ent.y != shadow_tag(v, pg.x, pg.y) || (pressure && !marked) {
        let k = atomicAdd(&shadow_pool_state[0], 1u);
        shadow_free[k] = phys;
        shadow_owner[phys] = 0u;
        table_store(e, vec4<u32>(NO_PAGE, ent.y, 0u, 0u));
        return;
    }
    var flags = ent.z & PAGE_VALID;  // not drawn this frame (yet)
    // moved instances' bounds, before and after: (x0, y0, x1, y1) absolute pages, a rect a view
    let a = shadow_views[v].origin.xy + pg;
    for (var b = 0u; b < shadow.counts.w; b++) {
        let r = shadow_dirty[b * shadow.views.x + v];
        if all(a >= r.xy) && all(a <= r.zw) {
            flags = 0u;
        }
    }
    table_store(e, vec4<u32>(phys, ent.y, flags, 0u));
}
