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
//   normal_xy and normal_z), ids (ids_a: instance, cluster; ids_b: triangle, level << 1 | hw |
//   the sun's visibility (8 bits) << 24; all 0xffffffff where nothing was drawn).
// No image buffer holds more than the visibility buffer's 8 bytes a pixel: one storage binding
// holds 128 MiB on some adapters (renderer.limits.IMAGE_BUFFER_BYTES).
#include "layout.wgsl"
#include "math.wgsl"
#include "pixel_triangle.wgsl"
#include "shading.wgsl"
#include "material.wgsl"
#include "shadow.wgsl"
#include "shadow_table.wgsl"

// The sun's shadow (SHADOWS; else every point sees the sun): the point, pushed off its surface
// by `shadow.depth.w` texels along its normal, is looked up in the level whose texel is about
// the pixel's footprint, as the mark pass chose it, or the first coarser level whose pages are
// all there; bilinear percentage-closer filtering of the 2 x 2 texels around it (a shadow edge
// soft over a texel, about a pixel: the texel is about the pixel's footprint), each comparison
// against the receiver's plane at that texel (receiver-plane depth bias: no acne on tilted
// surfaces without pushing shadows off their casters) less `shadow.depth.w` texels. A surface
// facing away from the sun does not see it (0), and is not looked up.
override SHADOWS: bool = true;
// a scene with spot or point lights (the pipeline without: no loop over none)
override LIGHTS: bool = true;

fn shadow_page(v: u32, px: i32, py: i32) -> u32 {
    if any(vec2<i32>(px, py) < vec2<i32>(0)) || any(vec2<i32>(px, py) >= vec2<i32>(i32(view_pages(v)))) {
        return NO_PAGE;
    }
    let ent = table_entry(shadow_entry(v, px, py));
    if (ent.z & PAGE_VALID) == 0u || ent.y != shadow_tag(v, px, py) {
        return NO_PAGE;
    }
    return ent.x;
}

// the pages of the 2 x 2 texels from texel b of view v (all there, or NO_PAGE somewhere): a
// neighbour page is looked up only where the filter straddles a page border
fn filter_pages(v: u32, b: vec2<i32>) -> vec4<u32> {
    let lo = b >> vec2<u32>(SHADOW_PAGE_SHIFT);
    let hi = (b + 1) >> vec2<u32>(SHADOW_PAGE_SHIFT);
    let first = shadow_page(v, lo.x, lo.y);
    if all(hi == lo) {
        return vec4<u32>(first);
    }
    return vec4<u32>(first, shadow_page(v, hi.x, lo.y), shadow_page(v, lo.x, hi.y),
                     shadow_page(v, hi.x, hi.y));
}

// the stored depth of texel `tap` of a 2 x 2 filter from texel b (its `pages`: filter_pages)
fn filter_depth(pages: vec4<u32>, b: vec2<i32>, tap: vec2<i32>) -> f32 {
    let side = (tap >> vec2<u32>(SHADOW_PAGE_SHIFT)) != (b >> vec2<u32>(SHADOW_PAGE_SHIFT));
    let phys = select(select(pages.x, pages.y, side.x), select(pages.z, pages.w, side.x), side.y);
    let m = i32(SHADOW_PAGE) - 1;
    return bitcast<f32>(shadow_map[pool_word(phys, u32(tap.x & m), u32(tap.y & m))]);
}

struct SunShadow {
    visibility: f32,  // 0 shadowed .. 1 lit
    level: u32,  // the level sampled (SHADOW_LEVELS: none)
}

fn sun_shadow(p: vec3<f32>, n: vec3<f32>, dist: f32) -> SunShadow {
    let first = shadow_level(dist);
    for (var v = first; v < shadow.counts.x; v++) {
        let texel = shadow_views[v].texel.x;
        // a little off the surface, less where the sun grazes it: there a point raised h is lit
        // like one h / tan(elevation) nearer its caster (light under contact)
        let push = shadow.depth.w * texel * clamp(dot(n, shadow.sun.xyz), 0.0, 1.0);
        let t = shadow_texel(v, p + n * push);
        let s = t.xy - 0.5;
        let b = vec2<i32>(floor(s));
        // the (at most 2 x 2) pages the filter's texels lie in: all there, or a coarser level
        let pages = filter_pages(v, b);
        if any(pages == vec4<u32>(NO_PAGE)) {
            continue;
        }
        // the receiver's plane in the map: its depth at each tap's texel centre (a tilted surface
        // is not nearer the sun than itself a few texels away), the slope capped where the
        // surface grazes the light; less a third of a texel for rounding
        let unit = texel * shadow.depth.y;  // a texel's worth of depth
        let nl = max(dot(n, shadow.sun.xyz), 0.2);
        let slope = clamp(vec2<f32>(dot(n, shadow.axis_u.xyz), -dot(n, shadow.axis_v.xyz)) / nl,
                          vec2<f32>(-5.0), vec2<f32>(5.0)) * unit;
        let f = s - floor(s);  // bilinear weights of the 2 x 2 comparisons
        let wx = array<f32, 2>(1.0 - f.x, f.x);
        let wy = array<f32, 2>(1.0 - f.y, f.y);
        var sum = 0.0;
        for (var j = 0; j < 2; j++) {
            for (var i = 0; i < 2; i++) {
                let tap = vec2<i32>(b.x + i, b.y + j);
                let at = dot(slope, vec2<f32>(tap) + 0.5 - t.xy);
                let depth = t.z + at - unit * shadow.depth.w - abs(at) * 0.25;
                // 1 where the stored texel is no nearer the sun than the receiver
                sum += wx[i] * wy[j] * select(0.0, 1.0, filter_depth(pages, b, tap) >= depth);
            }
        }
        return SunShadow(sum, v);
    }
    return SunShadow(1.0, SHADOW_LEVELS);
}

// A spot or point light's shadow at p (normal n, unit direction to the light l, distance `dist`
// from the eye): the face p lies in, at the mip of the pixel's footprint as the mark pass
// chose it or the first coarser one whose pages are there; the point pushed off its surface by
// half a texel along its normal; bilinear percentage-closer filtering of the 2 x 2 texels
// around it, each compared as a distance from the light (the depths are perspective) less a
// bias of a texel and a half, more where the light grazes the surface (slope).
const NORMAL_PUSH: f32 = 0.5;  // texels a receiver is pushed along its normal (a face's)

fn light_shadow(light: Light, p: vec3<f32>, n: vec3<f32>, l: vec3<f32>, dist: f32) -> f32 {
    let v0 = light_face(light.views, p - light.position.xyz);
    let z0 = (shadow_views[v0].view_proj * vec4<f32>(p, 1.0)).w;
    if z0 <= shadow_views[v0].texel.z {
        return 1.0;  // nearer the light than its near plane: nothing casts there
    }
    let nl = clamp(dot(n, l), 0.05, 1.0);
    let slope = min(sqrt(1.0 - nl * nl) / nl, 8.0);  // tan of the light's angle to the normal
    for (var m = face_mip(v0, z0, dist); m < LOCAL_MIPS; m++) {
        let v = v0 + m;
        let texel = z0 / shadow_views[v].texel.y;  // a texel's size at p
        let q = p + n * (NORMAL_PUSH * texel);
        let t = shadow_texel(v, q);
        let s = t.xy - 0.5;
        let b = vec2<i32>(floor(s));
        let pages = filter_pages(v, b);
        if any(pages == vec4<u32>(NO_PAGE)) {
            continue;
        }
        let z = (shadow_views[v].view_proj * vec4<f32>(q, 1.0)).w;
        let reach = z - texel * (1.5 + slope);
        let f = s - floor(s);
        let wx = array<f32, 2>(1.0 - f.x, f.x);
        let wy = array<f32, 2>(1.0 - f.y, f.y);
        var sum = 0.0;
        for (var j = 0; j < 2; j++) {
            for (var i = 0; i < 2; i++) {
                let tap = vec2<i32>(b.x + i, b.y + j);
                let stored = face_distance(v, filter_depth(pages, b, tap));
                sum += wx[i] * wy[j] * select(0.0, 1.0, stored >= reach);
            }
        }
        return sum;
    }
    return 1.0;
}

// a spot or point light as p sees it: xyz the unit direction to it, w its irradiance in suns
// before its colour and shadow: glTF's inverse square falloff windowed to its range, a spot's
// smooth cone edge
fn light_reach(light: Light, p: vec3<f32>) -> vec4<f32> {
    let d = light.position.xyz - p;
    let r2 = max(dot(d, d), 1e-8);
    let l = d * inverseSqrt(r2);
    var falloff = 1.0 / r2;
    if light.position.w > 0.0 {
        let x = r2 / (light.position.w * light.position.w);
        falloff *= clamp(1.0 - x * x, 0.0, 1.0) * clamp(1.0 - x * x, 0.0, 1.0);
    }
    let cone = clamp((dot(-l, light.direction.xyz) - light.direction.w) * light.color.w, 0.0,
                     1.0);
    return vec4<f32>(l, falloff * cone * cone);
}


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

// the page cache view: the page the pixel's point lies in, drawn this frame or cached
fn shadow_cache_color(p: vec3<f32>, v: u32) -> vec3<f32> {
    if v >= SHADOW_LEVELS {
        return vec3<f32>(0.5);
    }
    let t = vec2<i32>(floor(shadow_texel(v, p).xy)) >> vec2<u32>(SHADOW_PAGE_SHIFT);
    let tc = clamp(t, vec2<i32>(0), vec2<i32>(i32(view_pages(v)) - 1));
    let drawn = (table_entry(shadow_entry(v, tc.x, tc.y)).z & PAGE_DRAW) != 0u;
    return select(vec3<f32>(0.3, 0.55, 0.95), vec3<f32>(0.95, 0.55, 0.2), drawn);
}

@compute @workgroup_size(PIXEL_TILE, PIXEL_TILE)
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
    var sun = SunShadow(1.0, SHADOW_LEVELS);
    if SHADOWS {
        // (no branch on a uniform alone, such as the sun's presence: lavapipe would compile a
        // variant of the shader a dispatch, and keep it; the debug views' note below)
        if dot(n, shadow.sun.xyz) > -0.05 && shadow.sun.w != 0.0 {
            // pushed along the normal on the side of the face the sun sees
            let nf = normalize(face) * select(1.0, -1.0, dot(face, shadow.sun.xyz) < 0.0);
            sun = sun_shadow(p, nf, distance(frame.camera.xyz, p));
        } else {
            sun.visibility = 0.0;
        }
    }
    var lit = shade_shadowed(surf, to_eye, shadow.sun.xyz, sun.visibility * shadow.sun.w);
    // spot and point lights: their direct light added (the ambient and emission once, above)
    let dist = distance(frame.camera.xyz, p);
    // (the count through a per-pixel select: a loop bounded by a uniform alone costs lavapipe
    // a compiled variant a dispatch, never freed)
    let light_count = select(0u, shadow.views.y, depth > 0.0);
    for (var i = 0u; LIGHTS && i < light_count; i++) {
        let light = lights[i];
        let reach = light_reach(light, p);
        if reach.w <= 0.0 || dot(n, reach.xyz) <= 0.0 {
            continue;
        }
        var vis = 1.0;
        if SHADOWS && light.views.y != 0u {
            let nf = normalize(face) * select(1.0, -1.0, dot(face, reach.xyz) < 0.0);
            vis = light_shadow(light, p, nf, reach.xyz, dist);
        }
        lit += direct_light(surf, to_eye, reach.xyz) * light.color.rgb * (reach.w * vis);
    }

    let hw = select(0u, 1u, idx >= frame.visible_capacity / 2u);
    let level = rec_u(base, CLUSTER_LEVEL);
    let cluster = rec_u(base, CLUSTER_CLUSTER);
    depth_out[pixel] = depth;
    normal_xy[pixel] = n.xy;
    normal_z[pixel] = n.z;
    ids_a[pixel] = vec2<u32>(pt.instance, cluster);
    // the sun's visibility in 8 bits above the level: resolve binds one storage buffer short of
    // OpenGL's 16 a stage, so the shadow term shares the ids' spare bits
    let sun8 = u32(round(clamp(sun.visibility, 0.0, 1.0) * 255.0));
    ids_b[pixel] = vec2<u32>(t, (level << 1u) | hw | (sun8 << 24u));
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
    // with tools/soak.py) and an LLVM compile a dispatch. The views VIEW_* (renderer/limits.py
    // DEBUG_VIEWS) cluster, triangle, group, instance and material hash one key.
    let view = frame.debug_view;
    let hashed = select(select(select(select(pt.instance + 1u,
                                             rec_u(base, CLUSTER_GROUP) * 31u + pt.instance,
                                             view == VIEW_GROUP),
                                      (cluster << 7u) + t, view == VIEW_TRIANGLE),
                               cluster * 7919u + pt.instance, view == VIEW_CLUSTER),
                        m * 2654435761u + 17u, view == VIEW_MATERIAL);
    let hashes = (view == VIEW_CLUSTER) | (view == VIEW_TRIANGLE) | (view == VIEW_GROUP)
        | (view == VIEW_INSTANCE) | (view == VIEW_MATERIAL);
    // the id views show their albedo times a scalar camera light (a key from above and behind
    // the camera, a fill from it), written as is: a pixel's chromaticity is its albedo's
    let key = normalize(to_eye + vec3<f32>(0.3, 0.8, 0.2));
    let flat = 0.12 + 0.7 * max(dot(n, key), 0.0) + 0.25 * max(dot(n, to_eye), 0.0);
    var albedo = hash_color(hashed);
    albedo = select(albedo, level_color(level), view == VIEW_LEVEL);
    albedo = select(albedo, select(vec3<f32>(0.3, 0.55, 0.95), vec3<f32>(0.95, 0.45, 0.25),
                                   hw == 1u), view == VIEW_RASTER);
    var out = albedo * flat;
    out = select(out, linear_to_srgb(lit), view == VIEW_LIT);
    out = select(out, base_srgb, view == VIEW_BASE_COLOR);
    out = select(out, vec3<f32>(fract(st), 0.0), view == VIEW_UV);
    out = select(out, shading_n * 0.5 + 0.5, view == VIEW_SHADING_NORMAL);
    // shadow views: the sun's visibility over a grey model; the level sampled (grey: none);
    // the page under the pixel drawn this frame (orange) or cached (blue)
    out = select(out, vec3<f32>(0.15 + 0.8 * sun.visibility) * flat, view == VIEW_SHADOW);
    let hue = f32(sun.level) / f32(SHADOW_LEVELS) * 6.0;
    let ramp = clamp(abs(fract(vec3<f32>(hue, hue + 4.0, hue + 2.0) / 6.0) * 6.0 - 3.0) - 1.0,
                     vec3<f32>(0.0), vec3<f32>(1.0));  // a hue a level, 12 levels round
    let lvl_col = select(0.25 + 0.7 * ramp, vec3<f32>(0.5), sun.level >= SHADOW_LEVELS);
    out = select(out, lvl_col * flat, view == VIEW_SHADOW_LEVEL);
    out = select(out, shadow_cache_color(p, sun.level) * flat, view == VIEW_SHADOW_CACHE);
    color[pixel] = pack_rgba(out);
}
