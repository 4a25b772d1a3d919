// Resolve, Nanite's BasePass: one lane per pixel, from the visibility buffer to the G-buffer
// and the lit image (visibility-buffer shading). Per pixel it decodes the triangle again from
// its page, intersects the pixel's ray with it for perspective-correct barycentrics, and does
// the same one pixel to the right and one down: the differences are the barycentrics'
// screen-space derivatives, from which the uv derivatives pick each texture's mip (what a
// fragment shader's quad derivatives do for a rasterized triangle). It interpolates normals,
// uvs and vertex colours, samples the material's textures (shaders/material.wgsl), applies the
// normal map in the triangle's tangent frame, and writes:
//   gbuffer_a: base colour (RGBA8, RGB sRGB), shading normal (octahedral 2 x 16 bits)
//   gbuffer_b: roughness 8 | metallic 8 | scene material 16 bits, emissive (RGB8 sRGB) | occlusion 8
//   color: the lit image (shaders/shading.wgsl) or a debug view, RGBA8 sRGB
//   depth (NDC, reversed Z, 0 = nothing), normal (world, interpolated, before the normal map:
//   normal_xy and normal_z), ids (ids_a: instance, cluster; ids_b: triangle, level << 1 | hw;
//   all 0xffffffff where nothing was drawn).
// No image buffer holds more than the visibility buffer's 8 bytes a pixel: one storage binding
// holds 128 MiB on some adapters (renderer.limits.IMAGE_BUFFER_BYTES).
#include "layout.wgsl"
#include "math.wgsl"
#include "pixel_triangle.wgsl"
#include "shading.wgsl"
#include "material.wgsl"


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

fn interpolate2(b: vec3<f32>, a: array<vec2<f32>, 3>) -> vec2<f32> {
    return b.x * a[0] + b.y * a[1] + b.z * a[2];
}

@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = u32(frame.viewport.x);
    let h = u32(frame.viewport.y);
    if gid.x >= w || gid.y >= h {
        return;
    }
    let pixel = gid.y * w + gid.x;
    let sample = vis_sample(pixel);
    let depth = sample.depth;
    if depth <= 0.0 {
        color[pixel] = pack_rgba(linear_to_srgb(vec3<f32>(0.006, 0.008, 0.011)));
        depth_out[pixel] = 0.0;
        normal_xy[pixel] = vec2<f32>(0.0);
        normal_z[pixel] = 0.0;
        ids_a[pixel] = vec2<u32>(ID_EMPTY);
        ids_b[pixel] = vec2<u32>(ID_EMPTY);
        gbuffer_a[pixel] = vec2<u32>(0u);
        gbuffer_b[pixel] = vec2<u32>(0xffff0000u, 0u);
        return;
    }
    let ndc = pixel_ndc(gid.xy);
    let pt = pixel_triangle(sample.payload, ndc);
    let idx = pt.visible;
    let t = pt.triangle;
    let inst = pt.inst;
    let asset = assets[inst.asset];
    let page = pt.page;
    let base = pt.base;
    let mode = rec_u(base, CLUSTER_MODE);
    let c = pt.corners;
    let pw = pt.world;
    // world normals, uvs and colours of the three corners
    var nw: array<vec3<f32>, 3>;
    var uv: array<vec2<f32>, 3>;
    var vc: array<vec4<f32>, 3>;
    let has_uv = (mode & MODE_HAS_UV) != 0u;
    let has_color = (mode & MODE_HAS_COLOR) != 0u;
    for (var k = 0u; k < 3u; k++) {
        nw[k] = (inst.world * vec4<f32>(cluster_normal(page, base, c[k]), 0.0)).xyz;
        uv[k] = vec2<f32>(0.0);
        vc[k] = vec4<f32>(1.0);
        if has_uv {
            uv[k] = cluster_uv(page, base, c[k], asset.uv_box);
        }
        if has_color {
            let q = cluster_color_word(page, base, c[k]);
            vc[k] = vec4<f32>(srgb_code(q & 0xffu), srgb_code((q >> 8u) & 0xffu),
                              srgb_code((q >> 16u) & 0xffu), f32(q >> 24u) / 255.0);
        }
    }
    // barycentrics at the pixel centre and one pixel right and down: their differences are the
    // screen-space derivatives (exact for the triangle's plane)
    let b = pt.bary;
    let bx = clip_barycentrics(pt.clip[0], pt.clip[1], pt.clip[2],
                               ndc + vec2<f32>(2.0 * frame.viewport.z, 0.0));
    let by = clip_barycentrics(pt.clip[0], pt.clip[1], pt.clip[2],
                               ndc - vec2<f32>(0.0, 2.0 * frame.viewport.w));
    let e1 = pw[1] - pw[0];
    let e2 = pw[2] - pw[0];
    let face = cross(e1, e2);
    var n = normalize(b.x * nw[0] + b.y * nw[1] + b.z * nw[2]);
    if !(dot(n, n) > 0.5) {  // degenerate or NaN interpolation: the face normal
        n = normalize(face);
    }
    let p = b.x * pw[0] + b.y * pw[1] + b.z * pw[2];
    let to_eye = normalize(frame.camera.xyz - p);
    // the material and its textures
    let m = asset.material_base + cluster_material(page, base, t);
    let mat = material_info(m);
    let st = interpolate2(b, uv);
    let dx = interpolate2(bx, uv) - st;
    let dy = interpolate2(by, uv) - st;
    let vcolor = b.x * vc[0] + b.y * vc[1] + b.z * vc[2];
    let texels = material_textures(m, st, dx, dy).t;
    let base_color = mat.base_color * vcolor * texels[0];
    let mr = texels[1];
    let emissive = mat.emissive * texels[3].rgb;
    let occlusion_texel = texels[4].r;
    // double-sided: a back face shows its other side
    let back = dot(face, frame.camera.xyz - pw[0]) < 0.0;
    let flip = select(1.0, -1.0, back && (mat.flags & MATERIAL_DOUBLE_SIDED) != 0u);
    n *= flip;
    // the normal map, in the triangle's tangent frame (dP/du, dP/dv made orthogonal to n)
    var shading_n = n;
    if material_word(m, MATERIAL_NORMAL_TEXTURE) != NO_TEXTURE {
        shading_n = apply_normal_map(n, e1, e2, uv[1] - uv[0], uv[2] - uv[0], texels[2].xyz,
                                     mat.normal_scale, flip);
    }
    var surf: Surface;
    surf.base_color = base_color.rgb;
    surf.metallic = clamp(mat.metallic * mr.b, 0.0, 1.0);
    surf.roughness = clamp(mat.roughness * mr.g, 0.0, 1.0);
    surf.occlusion = 1.0 + mat.occlusion_strength * (occlusion_texel - 1.0);
    surf.emissive = emissive;
    surf.normal = shading_n;
    let lit = shade(surf, to_eye, light_direction(frame.view));

    let hw = select(0u, 1u, idx >= frame.visible_capacity / 2u);
    let level = rec_u(base, CLUSTER_LEVEL);
    let cluster = rec_u(base, CLUSTER_CLUSTER);
    depth_out[pixel] = depth;
    normal_xy[pixel] = n.xy;
    normal_z[pixel] = n.z;
    ids_a[pixel] = vec2<u32>(pt.instance, cluster);
    ids_b[pixel] = vec2<u32>(t, (level << 1u) | hw);
    let q = vec2<u32>(round(clamp(vec2<f32>(surf.roughness, surf.metallic), vec2<f32>(0.0),
                                  vec2<f32>(1.0)) * 255.0));
    let base_srgb = linear_to_srgb(surf.base_color);
    var emissive_srgb = vec3<f32>(0.0);
    if any(surf.emissive > vec3<f32>(0.0)) {
        emissive_srgb = linear_to_srgb(surf.emissive);
    }
    gbuffer_a[pixel] = vec2<u32>(pack_rgba(base_srgb)
                                     & (0x00ffffffu | (u32(round(clamp(base_color.a, 0.0, 1.0)
                                                                  * 255.0)) << 24u)),
                                 pack_octahedral(shading_n));
    gbuffer_b[pixel] = vec2<u32>(q.x | (q.y << 8u) | (min(m, 0xffffu) << 16u),
                                 (pack_rgba(emissive_srgb) & 0x00ffffffu)
                                 | (u32(round(clamp(surf.occlusion, 0.0, 1.0) * 255.0)) << 24u));
    // The debug view picks the colour with selects, never a switch or an if on frame.debug_view:
    // lavapipe (Mesa 22.3) inlines a uniform that alone decides a branch, recompiles the shader
    // at every dispatch and never frees the variant: ~0.43 MB of native memory a frame (measured
    // with tools/soak.py) and an LLVM compile a dispatch. Views 1, 2, 3, 6 and 8 hash one key.
    let view = frame.debug_view;
    let hashed = select(select(select(select(pt.instance + 1u,
                                             rec_u(base, CLUSTER_GROUP) * 31u + pt.instance,
                                             view == 3u),
                                      (cluster << 7u) + t, view == 2u),
                               cluster * 7919u + pt.instance, view == 1u),
                        m * 2654435761u + 17u, view == 8u);
    let hashes = (view == 1u) | (view == 2u) | (view == 3u) | (view == 6u) | (view == 8u);
    // the id views show their albedo times a scalar camera light (a key from above and behind
    // the camera, a fill from it), written as is: a pixel's chromaticity is its albedo's
    let key = normalize(to_eye + vec3<f32>(0.3, 0.8, 0.2));
    let flat = 0.12 + 0.7 * max(dot(n, key), 0.0) + 0.25 * max(dot(n, to_eye), 0.0);
    var albedo = hash_color(hashed);
    albedo = select(albedo, level_color(level), view == 4u);
    albedo = select(albedo, select(vec3<f32>(0.3, 0.55, 0.95), vec3<f32>(0.95, 0.45, 0.25),
                                   hw == 1u), view == 5u);
    var out = albedo * flat;
    out = select(out, linear_to_srgb(lit), view == 0u);
    out = select(out, base_srgb, view == 7u);
    out = select(out, vec3<f32>(fract(st), 0.0), view == 9u);
    out = select(out, shading_n * 0.5 + 0.5, view == 10u);
    color[pixel] = pack_rgba(out);
}
