// Temporal accumulation (TAA), one lane per pixel: this frame's lit colour, drawn with a
// sub-pixel jitter of the projection (renderer/antialias.py), blended into a history of the
// frames before, so that a still view converges to the mean of many samples a pixel (a box
// filter, as supersampling's) and sub-pixel geometry stops aliasing.
// Reads `color` (this frame's resolve output, RGBA8 sRGB, decoded by the table at the head of
// `materials`: a load, not three pow() a sample), `velocity` (the depth targets':
// where the pixel's point was in the previous frame), the previous history (`history_rg`,
// `history_ba`: linear RGB and the frames it averages, f32); writes the new history
// (`out_rg`, `out_ba`) and, in `cs_output`, the accumulated image back into `color`.
//
// - Reprojection: the history is read bilinearly where the pixel's point was (pixel centre -
//   velocity); a point from outside the previous image, or a reset (the first frame, a resize,
//   a new scene, another debug view: `params.y`), starts the pixel's history again.
// - Rejection (Salvi's variance clipping, in YCoCg): the history is clipped towards the mean of
//   this frame's 3 x 3 neighbourhood, into the box of `params.z` standard deviations around it,
//   in the pipeline with CLIP (a frame where something moved; the other reads no neighbour).
//   Where an object moved away, or a disocclusion shows what was hidden, the neighbourhood
//   shows the new surface only and the old colour cannot survive (no ghost); where sub-pixel
//   geometry makes the neighbourhood vary, the box is wide and the history converges.
// - Blend: weight 1 / n for the n-th frame of a pixel's history, n at most `1 / params.x`: a
//   still view's history is the exact mean of the last K frames' samples, then a running
//   average with weight 1 / K.
// Every choice that a uniform makes is a `select` (docs/ARCHITECTURE.md "Testing": lavapipe).
#include "layout.wgsl"

override CLIP: bool = true;

fn srgb_code(code: u32) -> f32 {
    return bitcast<f32>(materials[SRGB_TABLE + code]);
}

fn srgb_encode(c: vec3<f32>) -> vec3<f32> {
    let x = clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
    return select(1.055 * pow(x, vec3<f32>(1.0 / 2.4)) - 0.055, x * 12.92,
                  x <= vec3<f32>(0.0031308));
}

fn ycocg(c: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(0.25 * c.x + 0.5 * c.y + 0.25 * c.z, 0.5 * c.x - 0.5 * c.z,
                     -0.25 * c.x + 0.5 * c.y - 0.25 * c.z);
}

fn rgb(c: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(c.x + c.y - c.z, c.x + c.z, c.x - c.y - c.z);
}

// this frame's linear colour at a pixel, clamped to the image
fn current(p: vec2<i32>, size: vec2<i32>) -> vec3<f32> {
    let q = clamp(p, vec2<i32>(0), size - 1);
    let w = color[u32(q.y * size.x + q.x)];
    return vec3<f32>(srgb_code(w & 0xffu), srgb_code((w >> 8u) & 0xffu),
                     srgb_code((w >> 16u) & 0xffu));
}

fn history_texel(p: vec2<i32>, size: vec2<i32>) -> vec4<f32> {
    let q = clamp(p, vec2<i32>(0), size - 1);
    let i = u32(q.y * size.x + q.x);
    return vec4<f32>(history_rg[i], history_ba[i]);
}

// the history at `pos` (pixels, x right, y down; a texel's centre at + 0.5), bilinear
fn history_at(pos: vec2<f32>, size: vec2<i32>) -> vec4<f32> {
    let t = pos - 0.5;
    let b = vec2<i32>(floor(t));
    let f = t - floor(t);
    let top = mix(history_texel(b, size), history_texel(b + vec2<i32>(1, 0), size), f.x);
    let bottom = mix(history_texel(b + vec2<i32>(0, 1), size),
                     history_texel(b + vec2<i32>(1, 1), size), f.x);
    return mix(top, bottom, f.y);
}

// `h` moved towards `centre` onto the box centre +- extent where it lies outside it
fn clip_to_box(h: vec3<f32>, centre: vec3<f32>, extent: vec3<f32>) -> vec3<f32> {
    let d = h - centre;
    let t = abs(d) / max(extent, vec3<f32>(1e-6));
    let m = max(t.x, max(t.y, t.z));
    return select(h, centre + d / m, m > 1.0);
}

@compute @workgroup_size(PIXEL_TILE, PIXEL_TILE)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let size = vec2<i32>(frame.viewport.xy);
    if gid.x >= u32(size.x) || gid.y >= u32(size.y) {
        return;
    }
    let p = vec2<i32>(gid.xy);
    let pixel = gid.y * u32(size.x) + gid.x;
    let now = ycocg(current(p, size));
    // the history where the pixel's point was
    let was = vec2<f32>(p) + 0.5 - velocity[pixel];
    let inside = all(was >= vec2<f32>(0.0)) && all(was <= vec2<f32>(size));
    let h = history_at(was, size);
    let n = select(0.0, h.w, inside && params.y == 0.0);
    // (a history started again is not read at all: a new buffer's zeros, or another frame's)
    var kept = ycocg(h.xyz);
    if CLIP {
        // this frame's neighbourhood: mean and standard deviation in YCoCg
        var m1 = vec3<f32>(0.0);
        var m2 = vec3<f32>(0.0);
        for (var k = 0; k < 9; k++) {
            let c = ycocg(current(p + vec2<i32>(k % 3 - 1, k / 3 - 1), size));
            m1 += c;
            m2 += c * c;
        }
        let mean = m1 / 9.0;
        let sigma = sqrt(max(m2 / 9.0 - mean * mean, vec3<f32>(0.0)));
        kept = clip_to_box(kept, mean, params.z * sigma);
    }
    let before = select(now, kept, n > 0.0);
    let count = min(n + 1.0, 1.0 / params.x);
    let blended = mix(before, now, 1.0 / count);
    let out = max(rgb(blended), vec3<f32>(0.0));
    out_rg[pixel] = out.xy;
    out_ba[pixel] = vec2<f32>(out.z, count);
}

// the accumulated history, sRGB-encoded, as the frame's image
@compute @workgroup_size(PIXEL_TILE, PIXEL_TILE)
fn cs_output(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = u32(frame.viewport.x);
    if gid.x >= w || gid.y >= u32(frame.viewport.y) {
        return;
    }
    let pixel = gid.y * w + gid.x;
    let c = srgb_encode(vec3<f32>(out_rg[pixel], out_ba[pixel].x));
    let q = vec3<u32>(c * 255.0 + 0.5);
    color[pixel] = q.x | (q.y << 8u) | (q.z << 16u) | (255u << 24u);
}
