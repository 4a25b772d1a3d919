// The triangle under a pixel, rebuilt from the visibility buffer: what every pass that shades or
// measures a pixel after rasterization starts from (depth_targets.wgsl, resolve.wgsl). The visibility buffer keeps only (depth, visible index, triangle); the
// cluster is found again through the visible list, its triangle decoded from its page, and the
// pixel centre's point on it found with perspective-correct barycentrics by the clip-space
// method. Needs the bindings of renderer.passes.cluster_reader_bindings and vis_bindings(write=
// False), and the define VIS64 as those were made.
#include "layout.wgsl"
#include "instance.wgsl"
#include "cluster.wgsl"

// what the visibility buffer holds at a pixel
struct VisSample {
    depth: f32,  // NDC depth, reversed Z: near / distance; 0 where nothing was drawn
    payload: u32,  // visible index << TRIANGLE_BITS | triangle in the cluster
}

fn vis_sample(pixel: u32) -> VisSample {
#ifdef VIS64
    let word = vis[pixel];
    return VisSample(bitcast<f32>(word.y), word.x);
#else
    return VisSample(bitcast<f32>(vis_depth[pixel]), vis_ids[pixel]);
#endif
}

// NDC (y up) of the centre of pixel `px` (x right, y down from the top-left corner)
fn pixel_ndc(px: vec2<u32>) -> vec2<f32> {
    return vec2<f32>((f32(px.x) + 0.5) * frame.viewport.z * 2.0 - 1.0,
                     1.0 - (f32(px.y) + 0.5) * frame.viewport.w * 2.0);
}

// Barycentrics (summing to 1) of the point of the triangle with clip-space corners c0, c1, c2
// that projects to `ndc`: in clip space that point p satisfies p.xy - ndc * p.w = 0, linear in
// the barycentrics, so each is the 2D cross product of the other two corners' residuals
// s = c.xy - ndc * c.w. Perspective-correct without dividing by w (no trouble near w = 0).
// A degenerate triangle (all residuals collinear) gets the centroid.
fn clip_barycentrics(c0: vec4<f32>, c1: vec4<f32>, c2: vec4<f32>, ndc: vec2<f32>) -> vec3<f32> {
    let s0 = c0.xy - ndc * c0.w;
    let s1 = c1.xy - ndc * c1.w;
    let s2 = c2.xy - ndc * c2.w;
    let b = vec3<f32>(s1.x * s2.y - s1.y * s2.x, s2.x * s0.y - s2.y * s0.x,
                      s0.x * s1.y - s0.y * s1.x);
    let sum = b.x + b.y + b.z;
    if abs(sum) > 0.0 {
        return b / sum;
    }
    return vec3<f32>(1.0 / 3.0);
}

// the triangle under a pixel, decoded again from its page
struct PixelTriangle {
    instance: u32,  // instance slot (the visible entry's x)
    boxed: bool,  // the instance drawn as its asset's box (instance.wgsl `draws_box`)
    inst: Instance,  // what it draws (`entry_instance`): world transform, asset, scale
    visible: u32,  // index in the visible list (the HW half from visible_capacity / 2)
    triangle: u32,  // triangle in the cluster (0 .. MAX_CLUSTER_TRIANGLES - 1)
    page: u32,  // first word of the cluster's page in `pages`
    base: u32,  // first word of the cluster's record
    corners: vec3<u32>,  // the three corners' local vertex indices in the cluster
    object: array<vec3<f32>, 3>,  // object-space corner positions (exact grid values)
    world: array<vec3<f32>, 3>,  // world-space corner positions (this frame's transform)
    clip: array<vec4<f32>, 3>,  // clip-space corners (this frame's camera)
    bary: vec3<f32>,  // perspective-correct barycentrics of the pixel centre (sum 1)
}

// `payload` from vis_sample of a covered pixel (depth > 0), `ndc` from pixel_ndc
fn pixel_triangle(payload: u32, ndc: vec2<f32>) -> PixelTriangle {
    var out: PixelTriangle;
    out.visible = payload >> TRIANGLE_BITS;
    out.triangle = payload & ((1u << TRIANGLE_BITS) - 1u);
    let entry = visible[out.visible];
    out.instance = entry.x & INSTANCE_MASK;
    out.boxed = draws_box(out.instance, entry.y);
    out.inst = entry_instance(entry.x, entry.y);
    let step = assets[out.inst.asset].step;
    out.page = page_start(entry.y);
    out.base = cluster_base(entry.y);
    let streams = cluster_streams(out.page, out.base);
    out.corners = stream_triangle(streams, out.triangle);
    for (var k = 0u; k < 3u; k++) {
        out.object[k] = stream_position(streams, out.corners[k], step);
        out.world[k] = (out.inst.world * vec4<f32>(out.object[k], 1.0)).xyz;
        out.clip[k] = frame.view_proj * vec4<f32>(out.world[k], 1.0);
    }
    out.bary = clip_barycentrics(out.clip[0], out.clip[1], out.clip[2], ndc);
    return out;
}

// the object-space point of the triangle under the pixel centre
fn pixel_object_position(t: PixelTriangle) -> vec3<f32> {
    return t.bary.x * t.object[0] + t.bary.y * t.object[1] + t.bary.z * t.object[2];
}
