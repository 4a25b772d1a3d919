// Blit: the resolve pass's color buffer (RGBA8 packed in u32, row 0 at the top) to the window,
// as a full-screen triangle. Reads `color` and `frame` (for the image width).
#include "layout.wgsl"

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_main(@builtin(position) p: vec4<f32>) -> @location(0) vec4<f32> {
    let w = u32(frame.viewport.x);
    let x = min(u32(p.x), w - 1u);
    let y = min(u32(p.y), u32(frame.viewport.y) - 1u);
    return unpack4x8unorm(color[y * w + x]);
}
