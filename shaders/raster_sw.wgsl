// Software rasterizer over the visible SW clusters. Reads visible (SW half), state (the SW count),
// the cluster's page data, instances, assets, frame; writes the visibility buffer.
// A lane rasterizes whole triangles, transforming its three vertices itself (no workgroup memory,
// no barrier: on CPU adapters a barrier costs more than the transforms it saves; the result is
// the same bits whichever lane computes a vertex). Screen positions are snapped to 1/256 pixel,
// as hardware rasterizers do; back faces culled,
// exact integer edge functions with the top-left fill rule, pixel centres sampled, depth
// interpolated linearly in screen space (NDC depth is affine in screen space).
// The edge functions are i32: a triangle spanning up to MAX_SPAN sub-pixel units is exact at
// 1/256 pixel (125 pixels); a larger one (rare: big triangles go to the hardware rasterizer) is
// rasterized at 1/16 pixel (up to 2000 pixels), grown by the snapping's reach so that it leaves no
// crack beside finer-snapped neighbours, and a larger one still is skipped.
// Loop budget: lavapipe ends every loop of an invocation, without an error, once its loops made
// 65,535 iterations together (Mesa's LP_MAX_TGSI_LOOP_ITERATIONS). A lane tests four pixels an
// iteration of its row loop and, on CPU adapters, draws 128 triangles (4 lanes a cluster, 4
// rounds: renderer.options.RenderOptions), so that triangles up to sw_max_edge (32 px, about
// 290 iterations each) stay within it
// (tests/renderer/test_render.py::test_software_lanes_draw_every_triangle_of_a_long_run).
#include "layout.wgsl"
#include "instance.wgsl"
#include "cluster.wgsl"
#ifndef SHADOW
#include "visbuffer.wgsl"
#endif
#ifdef SHADOW
#include "shadow.wgsl"
#include "shadow_raster.wgsl"
#endif
// With SHADOW it draws the SW clusters of the shadow views (cull.wgsl): each into its view's
// window (16,384^2 texels for the sun's levels; the view's view_proj), each texel into its page
// if that page is drawn this frame (shadow_raster.wgsl), the nearest depth to the light kept.

const SUB: f32 = 256.0;  // sub-pixel precision of the stored positions: 1/256 pixel
// |E| <= 2 * span * (span + 256) must stay below 2^31
const MAX_SPAN: i32 = 32000;

struct ScreenVertex { p: vec2<i32>, z: f32 }

// the view: the frame's camera and viewport, or a shadow view and its window
struct RasterView {
    view_proj: mat4x4<f32>,
    size: vec2<i32>,
    view: u32,  // the shadow view (level)
}

fn screen_vertex(s: ClusterStreams, v: u32, step: f32, world: mat4x4<f32>, rv: RasterView
                 ) -> ScreenVertex {
    let p = stream_position(s, v, step);
    let clip = rv.view_proj * (world * vec4<f32>(p, 1.0));
    let ndc = clip.xyz / clip.w;
    let sx = (ndc.x * 0.5 + 0.5) * f32(rv.size.x);
    let sy = (0.5 - ndc.y * 0.5) * f32(rv.size.y);
    let lim = 8.0e6;  // a 16,384-texel window at 1/256 (i32 below 2^31 with room)
    return ScreenVertex(vec2<i32>(i32(clamp(round(sx * SUB), -lim, lim)),
                        i32(clamp(round(sy * SUB), -lim, lim))), ndc.z);
}

// SW_LANES lanes per cluster, lane l drawing triangles l, l + SW_LANES, ...; a workgroup draws
// 128 / SW_LANES clusters a round, SW_ROUNDS rounds (renderer.options.RenderOptions.sw_lanes: a
// workgroup per cluster on GPUs, 128 clusters per workgroup on CPU adapters)
override SW_LANES: u32 = 128u;
override SW_ROUNDS: u32 = 1u;

@compute @workgroup_size(SW_WORKGROUP)
fn cs_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let last = min(state[S_SW_COUNT], frame.visible_capacity / 2u);
    let per_round = SW_WORKGROUP / SW_LANES;
    let first = state[S_SW_FIRST] + (wid.x + wid.y * MAX_DISPATCH) * SW_ROUNDS * per_round
        + lid / SW_LANES;
    let lane = lid % SW_LANES;
    for (var r = 0u; r < SW_ROUNDS; r++) {
        let idx = first + r * per_round;
        if idx >= last {
            return;
        }
        let entry = visible[idx];
        let base = cluster_base(entry.y);
        let nt = rec_u(base, CLUSTER_TRIANGLE_COUNT);
        if lane >= nt {
            continue;
        }
        let inst = entry_instance(entry.x, entry.y);
        let step = assets[inst.asset].step;
        let streams = cluster_streams(page_start(entry.y), base);
#ifdef SHADOW
        let v = entry.x >> VIEW_SHIFT;
        let rv = RasterView(shadow_views[v].view_proj, vec2<i32>(i32(view_texels(v))), v);
#else
        let rv = RasterView(frame.view_proj, vec2<i32>(frame.viewport.xy), 0u);
#endif
        let keep = vec2<u32>(bitcast<u32>(inst.coverage), entry.x & INSTANCE_MASK);
        for (var t = lane; t < nt; t += SW_LANES) {
            raster_triangle(idx, t, streams, base, inst.world, step, rv, keep);
        }
    }
}

// keep: the instance's coverage (bits) and slot (a proxy keeps a share of its pixels)
fn raster_triangle(idx: u32, t: u32, streams: ClusterStreams, base: u32, world: mat4x4<f32>,
                   step: f32, rv: RasterView, keep: vec2<u32>) {
    let w = rv.size.x;
    let h = rv.size.y;
    let c = stream_triangle(streams, t);
    let v0 = screen_vertex(streams, c.x, step, world, rv);
    let v1 = screen_vertex(streams, c.y, step, world, rv);
    let v2 = screen_vertex(streams, c.z, step, world, rv);
    var p0 = v0.p;
    var p1 = v1.p;
    var p2 = v2.p;
    let z0 = v0.z;
    var z1 = v1.z;
    var z2 = v2.z;
    var sub_bits = 8u;
    var lo = min(p0, min(p1, p2));
    var hi = max(p0, max(p1, p2));
    if any(hi - lo > vec2<i32>(MAX_SPAN)) {
        if any(hi - lo > vec2<i32>(MAX_SPAN * 16)) {
            return;
        }
        sub_bits = 4u;  // coarser snapping for a large triangle (arithmetic shifts: floor)
        p0 >>= vec2<u32>(4u);
        p1 >>= vec2<u32>(4u);
        p2 >>= vec2<u32>(4u);
        lo >>= vec2<u32>(4u);
        hi >>= vec2<u32>(4u);
    }
    let s = 1 << sub_bits;
    let half = s >> 1u;  // a pixel centre, in sub-pixel units
    // screen y points down: a front face (counter-clockwise in NDC) has a negative area here
    let e1 = p1 - p0;
    let e2 = p2 - p0;
    let area = e1.x * e2.y - e1.y * e2.x;
    if area == 0 || (area > 0 && !triangle_double_sided(streams.page, base, t)) {
        return;  // degenerate, or a back face of a single-sided material
    }
    if area < 0 {
        // a front face: swap to positive orientation, where all three edge functions are >= 0
        let tp = p1;
        p1 = p2;
        p2 = tp;
        let tz = z1;
        z1 = z2;
        z2 = tz;
    }
    // pixel box of the sample points inside the triangle's box, clipped to the viewport
    let x0 = max((lo.x - half + s - 1) >> sub_bits, 0);
    let y0 = max((lo.y - half + s - 1) >> sub_bits, 0);
    let x1 = min((hi.x - half) >> sub_bits, w - 1);
    let y1 = min((hi.y - half) >> sub_bits, h - 1);
    if x0 > x1 || y0 > y1 {
        return;
    }
    // edge functions relative to the box corner, so that every product fits in an i32
    let o = vec2<i32>(x0 << sub_bits, y0 << sub_bits) + vec2<i32>(half);
    let a0 = p0 - o;
    let a1 = p1 - o;
    let a2 = p2 - o;
    let d01 = a1 - a0;
    let d12 = a2 - a1;
    let d20 = a0 - a2;
    // top-left rule: an edge owns its samples if it is a top edge (horizontal, going right)
    // or a left edge (going up); other edges need a strictly positive function
    let b01 = select(-1, 0, (d01.y == 0 && d01.x > 0) || d01.y < 0);
    let b12 = select(-1, 0, (d12.y == 0 && d12.x > 0) || d12.y < 0);
    let b20 = select(-1, 0, (d20.y == 0 && d20.x > 0) || d20.y < 0);
    // E_ij(p) = d_ij.x * (p.y - a_i.y) - d_ij.y * (p.x - a_i.x), at the box corner p = 0
    var row01 = -d01.x * a0.y + d01.y * a0.x + b01;
    var row12 = -d12.x * a1.y + d12.y * a1.x + b12;
    var row20 = -d20.x * a2.y + d20.y * a2.x + b20;
    if sub_bits == 4u {
        // snapped to 1/16 pixel, each corner moved by less than one unit, so a shared edge no
        // longer meets its neighbour's (snapped to 1/256, or drawn by the hardware): grow every
        // edge by what such a move can change its function, |d.x| + |d.y| (+ 2 for the product
        // of two moves). The triangle then overlaps its neighbours by under 1/16 pixel, where
        // the depth test decides, instead of leaving pixels between them empty.
        row01 += abs(d01.x) + abs(d01.y) + 2;
        row12 += abs(d12.x) + abs(d12.y) + 2;
        row20 += abs(d20.x) + abs(d20.y) + 2;
    }
    let area2 = f32(d01.x * (a2.y - a0.y) - d01.y * (a2.x - a0.x));
    let tri = SwTriangle(vec3<i32>(b01, b12, b20), vec3<f32>(z0, z1, z2), area2,
                         (idx << TRIANGLE_BITS) | t, rv.view, keep);
    // the edge functions' step one pixel right
    let dx = vec3<i32>(d01.y * s, d12.y * s, d20.y * s);
    for (var y = y0; y <= y1; y++) {
        var e = vec3<i32>(row01, row12, row20);
#ifdef SHADOW
        let row = u32(y);  // shadow_write takes the texel's x and y
#else
        let row = u32(y * w);
#endif
        // four pixels an iteration: the loop budget (above)
        for (var x = x0; x <= x1; x += 4) {
            sw_pixel(tri, e, row, x, x1);
            sw_pixel(tri, e - dx, row, x + 1, x1);
            sw_pixel(tri, e - 2 * dx, row, x + 2, x1);
            sw_pixel(tri, e - 3 * dx, row, x + 3, x1);
            e -= 4 * dx;
        }
        row01 += d01.x * s;
        row12 += d12.x * s;
        row20 += d20.x * s;
    }
}

struct SwTriangle {
    bias: vec3<i32>,  // the top-left rule's bias of edges 01, 12, 20
    z: vec3<f32>,  // the corners' depths
    area2: f32,
    payload: u32,
    view: u32,  // the shadow view (SHADOW)
    keep: vec2<u32>,  // coverage bits and slot (proxy_keep)
}

// pixel x of a row (row = y * width) whose edge functions are e, if x <= x1 and inside
fn sw_pixel(tri: SwTriangle, e: vec3<i32>, row: u32, x: i32, x1: i32) {
    if x <= x1 && (e.x | e.y | e.z) >= 0 {
        // barycentric weights: vertex 2 opposite edge 01, and so on (bias removed)
        let l = vec3<f32>(e - tri.bias);
        let z = (l.y * tri.z.x + l.z * tri.z.y + l.x * tri.z.z) / tri.area2;
#ifdef SHADOW
        // a box keeps its share of the texels too (the texel's index in the view's window)
        if proxy_keep(bitcast<f32>(tri.keep.x), texel_key(u32(x), row), tri.keep.y) {
            shadow_write(tri.view, x, i32(row), z);
        }
#else
        if proxy_keep(bitcast<f32>(tri.keep.x), row + u32(x), tri.keep.y) {
            vis_write(row + u32(x), z, tri.payload);
        }
#endif
    }
}
