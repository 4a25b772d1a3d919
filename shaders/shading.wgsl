// Lighting of a G-buffer surface: one directional light (the sun, fixed in the world:
// RenderOptions.sun; resolve adds spot and point lights with `direct_light`) and an ambient
// term, with a physically
// based BRDF (glTF's metallic-roughness model: GGX distribution, height-correlated Smith
// visibility, Schlick Fresnel, Lambert diffuse; the ambient term takes Karis' analytic fit of
// the split-sum environment BRDF, so metals are not black without an environment map). Shared by
// the resolve pass and the reference renderer (renderer/oracles/reference.py): both light the
// same surface the same way, so that their images differ only where their surfaces do.
// Needs nothing but its arguments.

const PI: f32 = 3.14159265;
const LIGHT_IRRADIANCE: f32 = 2.6;  // a white Lambert surface facing the light reflects 0.83
const AMBIENT_RADIANCE: f32 = 0.3;

struct Surface {
    base_color: vec3<f32>,  // linear
    metallic: f32,
    roughness: f32,  // perceptual (squared for GGX)
    occlusion: f32,  // 1: none
    emissive: vec3<f32>,  // linear
    normal: vec3<f32>,  // world, unit, facing the viewer's side
}

// outgoing linear radiance towards `v` (unit, surface to eye) under the light from `l`
fn shade(s: Surface, v: vec3<f32>, l: vec3<f32>) -> vec3<f32> {
    return shade_shadowed(s, v, l, 1.0);
}

// the same, with the light's visibility at the surface (0 in shadow .. 1 lit): the direct term
// fades, the ambient and emissive terms stay (an emissive surface glows in shadow)
fn shade_shadowed(s: Surface, v: vec3<f32>, l: vec3<f32>, visibility: f32) -> vec3<f32> {
    let n = s.normal;
    let nv = max(dot(n, v), 1e-4);
    let r = clamp(s.roughness, 0.045, 1.0);
    let f0 = mix(vec3<f32>(0.04), s.base_color, s.metallic);
    let diffuse = (1.0 - s.metallic) * s.base_color;
    let direct = direct_light(s, v, l) * visibility;
    // ambient: Lambert plus the environment BRDF's analytic fit (Karis 2014)
    let c0 = vec4<f32>(-1.0, -0.0275, -0.572, 0.022);
    let c1 = vec4<f32>(1.0, 0.0425, 1.04, -0.04);
    let q = r * c0 + c1;
    let a004 = min(q.x * q.x, exp2(-9.28 * nv)) * q.x + q.y;
    let ab = vec2<f32>(-1.04, 1.04) * a004 + q.zw;
    let ambient = (diffuse + f0 * ab.x + ab.y) * AMBIENT_RADIANCE * s.occlusion;
    return direct + ambient + s.emissive;
}

// the radiance towards `v` that the sun's irradiance from `l` reflects (no ambient, no
// emission): the sun's direct term, and a local light's times its reach
fn direct_light(s: Surface, v: vec3<f32>, l: vec3<f32>) -> vec3<f32> {
    let n = s.normal;
    let nv = max(dot(n, v), 1e-4);
    let nl = max(dot(n, l), 0.0);
    let h = normalize(v + l);
    let nh = max(dot(n, h), 0.0);
    let vh = max(dot(v, h), 0.0);
    let r = clamp(s.roughness, 0.045, 1.0);
    let a = r * r;
    let a2 = a * a;
    let f0 = mix(vec3<f32>(0.04), s.base_color, s.metallic);
    let d = a2 / (PI * pow(nh * nh * (a2 - 1.0) + 1.0, 2.0));
    let vis = 0.5 / max(nl * (nv * (1.0 - a) + a) + nv * (nl * (1.0 - a) + a), 1e-5);
    let f = f0 + (1.0 - f0) * pow(1.0 - vh, 5.0);
    let diffuse = (1.0 - s.metallic) * s.base_color;
    return ((1.0 - f) * diffuse / PI + d * vis * f) * LIGHT_IRRADIANCE * nl;
}

fn linear_to_srgb(c: vec3<f32>) -> vec3<f32> {
    let x = clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
    return select(1.055 * pow(x, vec3<f32>(1.0 / 2.4)) - 0.055, x * 12.92,
                  x <= vec3<f32>(0.0031308));
}

fn unpack_rgba8(w: u32) -> vec4<f32> {
    return vec4<f32>(f32(w & 0xffu), f32((w >> 8u) & 0xffu), f32((w >> 16u) & 0xffu),
                     f32(w >> 24u)) / 255.0;
}

// `n` bent by a tangent-space normal-map texel (`texel`: the map's rgb, 0..1) in the frame
// whose tangent and bitangent are dP/du and dP/dv of two directions on the surface (dp1, dp2)
// and their uv changes (duv1, duv2): a triangle's edges (resolve) or one pixel's screen
// derivatives (the shaded reference), the same frame on a planar triangle with linear uvs.
// The tangent is made orthogonal to n; `flip` -1 on a double-sided back face. `n` itself where
// the uvs are degenerate.
fn apply_normal_map(n: vec3<f32>, dp1: vec3<f32>, dp2: vec3<f32>, duv1: vec2<f32>,
                    duv2: vec2<f32>, texel: vec3<f32>, scale: f32, flip: f32) -> vec3<f32> {
    let r = duv1.x * duv2.y - duv2.x * duv1.y;
    if !(abs(r) > 1e-20) {
        return n;
    }
    let tu = (dp1 * duv2.y - dp2 * duv1.y) / r;
    let tv = (dp2 * duv1.x - dp1 * duv2.x) / r;
    let tg = tu - n * dot(n, tu);
    if !(dot(tg, tg) > 0.0) {
        return n;
    }
    let handed = select(-1.0, 1.0, dot(cross(n, tg), tv) >= 0.0);
    let tn = normalize(tg);
    let bn = cross(n, tn) * handed;
    let q = texel * 2.0 - 1.0;
    let xy = q.xy * scale;
    let mapped = normalize(tn * xy.x + bn * xy.y * flip + n * max(q.z, 1e-3));
    return select(n, mapped, dot(mapped, mapped) > 0.5);
}

// octahedral encoding of a unit vector in 2 x 16-bit snorm (the pages' normal encoding)
fn pack_octahedral(n: vec3<f32>) -> u32 {
    var p = n.xy / (abs(n.x) + abs(n.y) + abs(n.z));
    if n.z < 0.0 {
        p = (1.0 - abs(p.yx)) * select(vec2<f32>(-1.0), vec2<f32>(1.0), p >= vec2<f32>(0.0));
    }
    let q = vec2<i32>(round(clamp(p, vec2<f32>(-1.0), vec2<f32>(1.0)) * 32767.0));
    return (u32(q.x) & 0xffffu) | (u32(q.y) << 16u);
}
