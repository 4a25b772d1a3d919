// Resolve: one lane per pixel, from the visibility buffer to images. Reads the visibility buffer,
// visible, pages, instances, assets, frame; writes color (RGBA8 in a u32), depth (NDC, reversed
// Z, 0 = nothing), normal (world: normal_xy and normal_z), and ids (ids_a: instance, cluster;
// ids_b: triangle, level << 1 | hw; all 0xffffffff where nothing was drawn). The normal and ids
// are split so that no image buffer holds more than the visibility buffer's 8 bytes a pixel: one
// storage binding holds 128 MiB on some adapters (renderer.limits.IMAGE_BUFFER_BYTES). The
// triangle under the pixel is decoded again from its page and intersected with the pixel's ray
// for perspective-correct barycentrics.
#include "layout.wgsl"
#include "math.wgsl"
#include "cluster.wgsl"


fn pack_rgba(c: vec3<f32>) -> u32 {
    let q = vec3<u32>(clamp(c, vec3<f32>(0.0), vec3<f32>(1.0)) * 255.0 + 0.5);
    return q.x | (q.y << 8u) | (q.z << 16u) | (255u << 24u);
}

fn level_color(level: u32) -> vec3<f32> {
    let palette = array<vec3<f32>, 8>(
        vec3<f32>(0.25, 0.45, 0.95), vec3<f32>(0.2, 0.8, 0.8), vec3<f32>(0.3, 0.85, 0.3),
        vec3<f32>(0.85, 0.85, 0.2), vec3<f32>(0.95, 0.6, 0.2), vec3<f32>(0.95, 0.3, 0.25),
        vec3<f32>(0.85, 0.3, 0.75), vec3<f32>(0.6, 0.6, 0.6));
    return palette[min(level, 7u)];
}

@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = u32(frame.viewport.x);
    let h = u32(frame.viewport.y);
    if gid.x >= w || gid.y >= h {
        return;
    }
    let pixel = gid.y * w + gid.x;
#ifdef VIS64
    let word = vis[pixel];
    let depth = bitcast<f32>(word.y);
    let payload = word.x;
#else
    let depth = bitcast<f32>(vis_depth[pixel]);
    let payload = vis_ids[pixel];
#endif
    if depth <= 0.0 {
        color[pixel] = pack_rgba(vec3<f32>(0.08, 0.09, 0.11));
        depth_out[pixel] = 0.0;
        normal_xy[pixel] = vec2<f32>(0.0);
        normal_z[pixel] = 0.0;
        ids_a[pixel] = vec2<u32>(ID_EMPTY);
        ids_b[pixel] = vec2<u32>(ID_EMPTY);
        return;
    }
    let idx = payload >> TRIANGLE_BITS;
    let t = payload & ((1u << TRIANGLE_BITS) - 1u);
    let entry = visible[idx];
    let inst = instances[entry.x];
    let step = assets[inst.asset].step;
    let page = page_start(entry.y);
    let base = cluster_base(entry.y);
    let c = cluster_triangle(page, base, t);
    // world positions and normals of the three corners
    var pw: array<vec3<f32>, 3>;
    var nw: array<vec3<f32>, 3>;
    for (var k = 0u; k < 3u; k++) {
        pw[k] = (inst.world * vec4<f32>(cluster_position(page, base, c[k], step), 1.0)).xyz;
        nw[k] = (inst.world * vec4<f32>(cluster_normal(page, base, c[k]), 0.0)).xyz;
    }
    // the pixel centre's ray against the triangle's plane: barycentrics (perspective-correct)
    let ndc = vec2<f32>((f32(gid.x) + 0.5) * frame.viewport.z * 2.0 - 1.0,
                        1.0 - (f32(gid.y) + 0.5) * frame.viewport.w * 2.0);
    let e1 = pw[1] - pw[0];
    let e2 = pw[2] - pw[0];
    let face = cross(e1, e2);
    // the clip-space barycentric method: solve in clip space for the point whose projection is ndc
    let c0 = frame.view_proj * vec4<f32>(pw[0], 1.0);
    let c1 = frame.view_proj * vec4<f32>(pw[1], 1.0);
    let c2 = frame.view_proj * vec4<f32>(pw[2], 1.0);
    let s0 = c0.xy - ndc * c0.w;
    let s1 = c1.xy - ndc * c1.w;
    let s2 = c2.xy - ndc * c2.w;
    var b = vec3<f32>(s1.x * s2.y - s1.y * s2.x, s2.x * s0.y - s2.y * s0.x,
                      s0.x * s1.y - s0.y * s1.x);
    let bsum = b.x + b.y + b.z;
    if abs(bsum) > 0.0 {
        b /= bsum;
    } else {
        b = vec3<f32>(1.0 / 3.0);
    }
    var n = normalize(b.x * nw[0] + b.y * nw[1] + b.z * nw[2]);
    if !(dot(n, n) > 0.5) {  // degenerate or NaN interpolation: the face normal
        n = normalize(face);
    }
    let hw = select(0u, 1u, idx >= frame.visible_capacity / 2u);
    let level = rec_u(base, CLUSTER_LEVEL);
    let cluster = rec_u(base, CLUSTER_CLUSTER);
    depth_out[pixel] = depth;
    normal_xy[pixel] = n.xy;
    normal_z[pixel] = n.z;
    ids_a[pixel] = vec2<u32>(entry.x, cluster);
    ids_b[pixel] = vec2<u32>(t, (level << 1u) | hw);
    // shading: a key light from above and behind the camera, a fill from the camera
    let p = b.x * pw[0] + b.y * pw[1] + b.z * pw[2];
    let to_eye = normalize(frame.camera.xyz - p);
    let key = normalize(to_eye + vec3<f32>(0.3, 0.8, 0.2));
    let lit = 0.12 + 0.7 * max(dot(n, key), 0.0) + 0.25 * max(dot(n, to_eye), 0.0);
    // The debug view picks the albedo with selects, never a switch or an if on frame.debug_view:
    // lavapipe (Mesa 22.3) inlines a uniform that alone decides a branch, recompiles the shader
    // at every dispatch and never frees the variant: ~0.43 MB of native memory a frame (measured
    // with tools/soak.py) and an LLVM compile a dispatch. Views 1, 2, 3 and 6 hash one key.
    let view = frame.debug_view;
    let hashed = select(select(select(entry.x + 1u, rec_u(base, CLUSTER_GROUP) * 31u + entry.x,
                                      view == 3u),
                               (cluster << 7u) + t, view == 2u),
                        cluster * 7919u + entry.x, view == 1u);
    let hashes = (view == 1u) | (view == 2u) | (view == 3u) | (view == 6u);
    var albedo = vec3<f32>(0.78, 0.76, 0.72);
    albedo = select(albedo, hash_color(hashed), hashes);
    albedo = select(albedo, level_color(level), view == 4u);
    albedo = select(albedo, select(vec3<f32>(0.3, 0.55, 0.95), vec3<f32>(0.95, 0.45, 0.25),
                                   hw == 1u), view == 5u);
    color[pixel] = pack_rgba(albedo * lit);
}
