// Depth targets (Nanite's EmitDepthTargets): one lane per pixel, per-pixel velocity from the
// visibility buffer, for whatever reuses the previous frame (temporal anti-aliasing, motion blur,
// reprojection). Reads the visibility buffer, visible, pages, instances, assets, frame (this
// frame's view_proj and the previous frame's prev_view_proj) and prev_worlds (each instance's
// object-to-world transform in the previous submitted frame); writes velocity. Scene depth stays
// resolve's output and material depth waits for materials (issue 16).
//
// velocity = where the surface point under the pixel centre is now - where it was in the previous
// frame, in pixels, x right and y down (image rows top to bottom, as every image of RenderResult):
// a point moving right and down on screen has velocity (+, +), and the previous pixel position is
// (pixel centre - velocity). The point is taken in object space (pixel_triangle.wgsl), so both
// camera and instance motion show; both positions go through the same arithmetic, so a static
// frame gives exactly 0. 0 too where nothing was drawn, and where the point was behind the
// previous camera (clip w <= 0: it had no pixel position).
#include "layout.wgsl"
#include "pixel_triangle.wgsl"

// pixel coordinates (x right, y down, centres at + 0.5) of a clip-space point in front (w > 0)
fn clip_to_pixel(c: vec4<f32>) -> vec2<f32> {
    let ndc = c.xy / c.w;
    return vec2<f32>((ndc.x * 0.5 + 0.5) * frame.viewport.x,
                     (0.5 - ndc.y * 0.5) * frame.viewport.y);
}

@compute @workgroup_size(8, 8)
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
    let p = vec4<f32>(pixel_object_position(t), 1.0);
    let now = frame.view_proj * (t.inst.world * p);
    let before = frame.prev_view_proj * (prev_worlds[t.instance] * p);
    if !(before.w > 0.0) {
        velocity[pixel] = vec2<f32>(0.0);
        return;
    }
    velocity[pixel] = clip_to_pixel(now) - clip_to_pixel(before);
}
