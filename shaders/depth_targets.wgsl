// Depth targets (Nanite's EmitDepthTargets): one lane per pixel, per-pixel velocity from the
// visibility buffer, for whatever reuses the previous frame (temporal anti-aliasing, motion blur,
// reprojection). Reads the visibility buffer, visible, pages, instances, assets, frame (this
// frame's view_proj and the previous frame's prev_view_proj) and the moved table (the
// transforms, in the previous submitted frame, of the instances moved since: moved.wgsl; an
// instance not there was where it is); writes velocity. Scene depth stays
// resolve's output and material depth waits for materials (issue 16).
//
// velocity = where the surface point under the pixel centre is now - where it was in the previous
// frame, in pixels, x right and y down (image rows top to bottom, as every image of RenderResult):
// a point moving right and down on screen has velocity (+, +), and the previous pixel position is
// (pixel centre - velocity). The point is taken in object space (pixel_triangle.wgsl), so both
// camera and instance motion show. A point whose instance and camera did not move gets exactly 0
// without arithmetic: the same products of the same inputs need not round the same (NVIDIA's
// Vulkan compiler contracts `now`, whose world * p pixel_triangle.wgsl also computes, differently
// from `before`: about 1e-6 px where nothing moved). 0 too where nothing was drawn, and where the
// point was behind the previous camera (clip w <= 0: it had no pixel position).
// Temporal accumulation jitters view_proj by under half a pixel a frame (renderer/antialias.py):
// the point is the one under the jittered sample, but both positions are taken through the
// unjittered matrices (motion_view_proj, and prev_view_proj is the previous frame's), so the
// jitter is no motion and a still camera's pixels are exactly 0 still.
#include "layout.wgsl"
#include "pixel_triangle.wgsl"
#include "moved.wgsl"

// pixels per NDC unit: x right, y down (NDC y points up)
fn ndc_to_pixels() -> vec2<f32> {
    return vec2<f32>(0.5 * frame.viewport.x, -0.5 * frame.viewport.y);
}

// the transform in the previous frame of what slot `s` draws (`now` unless it moved since; its
// box on the transform before where it is drawn as its box)
fn world_before(s: u32, now: mat4x4<f32>, boxed: bool) -> mat4x4<f32> {
    let k = moved_find(s);
    if k == moved_count() {
        return now;
    }
    let e = moved_entry(k) + 1u;
    let r0 = bitcast<vec4<f32>>(moved[e]);
    let r1 = bitcast<vec4<f32>>(moved[e + 1u]);
    let r2 = bitcast<vec4<f32>>(moved[e + 2u]);
    let was = mat4x4<f32>(vec4<f32>(r0.x, r1.x, r2.x, 0.0), vec4<f32>(r0.y, r1.y, r2.y, 0.0),
                          vec4<f32>(r0.z, r1.z, r2.z, 0.0), vec4<f32>(r0.w, r1.w, r2.w, 1.0));
    if boxed {
        return was * box_matrix(instance(s).asset);
    }
    return was;
}

fn same_matrix(a: mat4x4<f32>, b: mat4x4<f32>) -> bool {
    return all(a[0] == b[0]) && all(a[1] == b[1]) && all(a[2] == b[2]) && all(a[3] == b[3]);
}

@compute @workgroup_size(PIXEL_TILE, PIXEL_TILE)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = u32(frame.viewport.x);
    let h = u32(frame.viewport.y);
    if gid.x >= w || gid.y >= h {
        return;
    }
    let pixel = gid.y * w + gid.x;
    let s = vis_sample(pixel);
    if s.depth <= 0.0 {
        velocity[pixel] = vec2<f32>(0.0);
        return;
    }
    let t = pixel_triangle(s.payload, pixel_ndc(gid.xy));
    let was = world_before(t.instance, t.inst.world, t.boxed);
    if same_matrix(was, t.inst.world) && same_matrix(frame.prev_view_proj,
                                                     frame.motion_view_proj) {
        velocity[pixel] = vec2<f32>(0.0);
        return;
    }
    let p = vec4<f32>(pixel_object_position(t), 1.0);
    let now = frame.motion_view_proj * (t.inst.world * p);
    let before = frame.prev_view_proj * (was * p);
    if !(before.w > 0.0) {
        velocity[pixel] = vec2<f32>(0.0);
        return;
    }
    // the difference of the NDC positions, then scaled (the difference of the two pixel
    // positions, a * s - b * s, may be fused as fma(a, s, -(b * s)): not 0 where a == b)
    velocity[pixel] = (now.xy / now.w - before.xy / before.w) * ndc_to_pixels();
}
