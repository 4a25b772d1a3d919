// Hardware rasterizer: one indirect draw, an instance per visible HW cluster and 3 x 128 vertices
// per instance, vertices pulled from the page data (triangles past the cluster's count collapse to
// a point and are dropped). The fixed-function rasterizer clips at the near plane and
// interpolates depth; the fragment shader writes the visibility buffer like the software
// rasterizer does. Back faces are culled here, not by the pipeline, since double-sided materials
// keep theirs: each vertex decodes its triangle's three corners and tests the sign of the
// homogeneous determinant of (x, y, w), the triangle's orientation on screen even where a corner
// lies behind the eye (Olano and Greer 1997). Alpha cut-outs (glTF MASK; culling sends every
// such cluster here): the vertex shader passes the uv, the vertex colour's alpha and the scene
// material, and the fragment shader drops a fragment whose alpha (factor x texture x colour)
// is below the material's cutoff, before it reaches the visibility buffer: depth, the HZB and
// occlusion then see only what is there. Reads visible (HW half), pages, instances, assets,
// frame, materials.
#include "layout.wgsl"
#include "instance.wgsl"
#include "cluster.wgsl"
#ifndef SHADOW
#include "visbuffer.wgsl"
#endif
#include "shading.wgsl"
#include "material.wgsl"
#ifdef SHADOW
#include "shadow.wgsl"
#include "shadow_raster.wgsl"
#endif
// With SHADOW it draws the HW items of the shadow views (cull.wgsl): (cluster, page drawn this
// frame), each into a SHADOW_PAGE^2 viewport that stands for that page (the rasterizer clips the
// triangles to it), the fragment's depth into the page (shadow_raster.wgsl).

struct VertexOut {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) payload: u32,
    // alpha cut-outs: the scene material where it masks (else NO_TEXTURE), uv, colour alpha
    @location(1) @interpolate(flat) mask_material: u32,
    @location(2) uv: vec2<f32>,
    @location(3) alpha: f32,
    @location(4) @interpolate(flat) page: u32,  // SHADOW: the item's physical page
    // a proxy's coverage (bits) and slot: the share of its pixels it keeps (proxy_keep)
    @location(5) @interpolate(flat) keep: vec2<u32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) k: u32) -> VertexOut {
    var out: VertexOut;
    let idx = frame.visible_capacity / 2u + state[S_HW_FIRST] + k;
    let entry = visible[idx];
    let inst = entry_instance(entry.x, entry.y);
    out.page = 0u;
    out.keep = vec2<u32>(bitcast<u32>(inst.coverage), entry.x & INSTANCE_MASK);
    let page = page_start(entry.y);
    let base = cluster_base(entry.y);
    let t = vi / 3u;
    out.mask_material = NO_TEXTURE;
    out.uv = vec2<f32>(0.0);
    out.alpha = 1.0;
    if t >= rec_u(base, CLUSTER_TRIANGLE_COUNT) {
        out.position = vec4<f32>(0.0, 0.0, -1.0, 1.0);  // behind the depth range: clipped
        out.payload = 0u;
        return out;
    }
    let c = cluster_triangle(page, base, t);
    let step = assets[inst.asset].step;
    var clip: array<vec4<f32>, 3>;
#ifdef SHADOW
    // the view's window, moved and scaled so that the item's page fills the viewport
    let v = entry.x >> VIEW_SHIFT;
    let pg = vec2<f32>(f32(entry.w & 0xffffu), f32(entry.w >> 16u));
    let scale = f32(view_pages(v));
    let shift = vec2<f32>(scale - 1.0 - 2.0 * pg.x, 1.0 - scale + 2.0 * pg.y);
    out.page = entry.z;
    for (var k = 0u; k < 3u; k++) {
        let q = shadow_views[v].view_proj
            * (inst.world * vec4<f32>(cluster_position(page, base, c[k], step), 1.0));
        clip[k] = vec4<f32>(q.xy * scale + shift * q.w, q.z, q.w);
    }
#else
    for (var k = 0u; k < 3u; k++) {
        clip[k] = frame.view_proj
            * (inst.world * vec4<f32>(cluster_position(page, base, c[k], step), 1.0));
    }
#endif
    // counter-clockwise on screen (a front face) is a positive determinant
    let det = determinant(mat3x3<f32>(clip[0].xyw, clip[1].xyw, clip[2].xyw));
    if det <= 0.0 && !triangle_double_sided(page, base, t) {
        out.position = vec4<f32>(0.0, 0.0, -1.0, 1.0);  // a single-sided back face: dropped
        out.payload = 0u;
        return out;
    }
    out.position = clip[vi % 3u];
    out.payload = (idx << TRIANGLE_BITS) | t;
    let mode = rec_u(base, CLUSTER_MODE);
    if (mode & MODE_ALPHA_MASK) != 0u {
        let asset = assets[inst.asset];
        let m = asset.material_base + cluster_material(page, base, t);
        if (material_word(m, MATERIAL_FLAGS) & MATERIAL_ALPHA_MASK) != 0u {
            out.mask_material = m;
            let v = c[vi % 3u];
            if (mode & MODE_HAS_UV) != 0u {
                out.uv = cluster_uv(page, base, v, asset.uv_box);
            }
            if (mode & MODE_HAS_COLOR) != 0u {
                out.alpha = f32(cluster_color_word(page, base, v) >> 24u) / 255.0;
            }
        }
    }
    return out;
}

// the alpha of a masked material's fragment: factor x base-colour texture x vertex colour
fn masked_alpha(in: VertexOut, duv_dx: vec2<f32>, duv_dy: vec2<f32>) -> f32 {
    let m = in.mask_material;
    var a = material_f(m, MATERIAL_BASE_COLOR + 3u) * in.alpha;
    let t = material_word(m, MATERIAL_BASE_COLOR_TEXTURE);
    if t != NO_TEXTURE {
        a *= sample_texture(t, in.uv, duv_dx, duv_dy).a;
    }
    return a;
}

@fragment
fn fs_main(in: VertexOut) {
    let duv_dx = dpdx(in.uv);  // in uniform control flow, as derivatives must be
    let duv_dy = dpdy(in.uv);
    if in.mask_material != NO_TEXTURE
            && masked_alpha(in, duv_dx, duv_dy)
               < material_f(in.mask_material, MATERIAL_ALPHA_CUTOFF) {
        return;  // cut out
    }
    let x = u32(in.position.x);
    let y = u32(in.position.y);
#ifdef SHADOW
    if proxy_keep(bitcast<f32>(in.keep.x), texel_key(x, y), in.keep.y) {
        shadow_write_page(in.page, x, y, in.position.z);
    }
#else
    let pixel = y * u32(frame.viewport.x) + x;
    if proxy_keep(bitcast<f32>(in.keep.x), pixel, in.keep.y) {
        vis_write(pixel, in.position.z, in.payload);
    }
#endif
}
