// reference_shaded.wgsl: the shaded reference renderer (renderer/oracles/shaded_reference.py).
//
// Draws a mesh's original triangles with a plain vertex/fragment pipeline, one draw per
// material, and shades each fragment with the material model of the resolve pass through the
// GPU's own texture units: hardware trilinear sampling of real mipmapped textures (sRGB formats
// for colour), the mip from the quad's derivatives, the normal map in the tangent frame of the
// screen-space derivatives of position and uv (for a planar triangle with linear uvs the same
// frame the resolve pass takes from its edges), `shading.wgsl` for the light.
// reads   group(0): `u` (view_proj, world, view, camera, the view to draw);
//         group(1): `mat` (factors and which textures exist), five textures and a sampler.
// writes  color (rgba8unorm): the lit image, sRGB-encoded (or the base colour: view 7);
//         depth (depth32float, reversed Z, "greater").
#include "shading.wgsl"

struct Uniforms {
    view_proj: mat4x4<f32>,
    world: mat4x4<f32>,
    view: mat4x4<f32>,
    camera: vec4<f32>,
    params: vec4<u32>,  // x: debug view (0 lit, 7 base colour)
    sun: vec4<f32>,  // xyz: unit direction towards the sun (the renderer's RenderOptions.sun)
}

struct MaterialU {
    base_color: vec4<f32>,
    emissive: vec4<f32>,  // w: unused
    factors: vec4<f32>,  // metallic, roughness, normal scale, occlusion strength
    flags: vec4<u32>,  // x: textures present (bit i: base, mr, normal, emissive, occlusion),
                       // y: double-sided, z: alpha mask (cutoff in emissive.w)
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(1) @binding(0) var<uniform> mat: MaterialU;
@group(1) @binding(1) var smp: sampler;
@group(1) @binding(2) var t_base: texture_2d<f32>;
@group(1) @binding(3) var t_mr: texture_2d<f32>;
@group(1) @binding(4) var t_normal: texture_2d<f32>;
@group(1) @binding(5) var t_emissive: texture_2d<f32>;
@group(1) @binding(6) var t_occlusion: texture_2d<f32>;

struct VOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world_pos: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) color: vec4<f32>,
}

@vertex
fn vs_main(@location(0) pos: vec3<f32>, @location(1) normal: vec3<f32>,
           @location(2) uv: vec2<f32>, @location(3) color: vec4<f32>) -> VOut {
    var o: VOut;
    let wp = u.world * vec4<f32>(pos, 1.0);
    o.clip = u.view_proj * wp;
    o.world_pos = wp.xyz;
    o.normal = (u.world * vec4<f32>(normal, 0.0)).xyz;
    o.uv = uv;
    o.color = color;
    return o;
}

@fragment
fn fs_main(in: VOut, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    let st = vec2<f32>(in.uv.x, 1.0 - in.uv.y);  // texel row 0 is the top; uv's origin the bottom
    let has = mat.flags.x;
    // sample every texture in uniform control flow (derivatives), then choose
    let base_t = textureSample(t_base, smp, st);
    let mr_t = textureSample(t_mr, smp, st);
    let normal_t = textureSample(t_normal, smp, st);
    let emissive_t = textureSample(t_emissive, smp, st);
    let occlusion_t = textureSample(t_occlusion, smp, st);
    let dp1 = dpdx(in.world_pos);
    let dp2 = dpdy(in.world_pos);
    let duv1 = dpdx(in.uv);
    let duv2 = dpdy(in.uv);
    let one = vec4<f32>(1.0);
    let base_color = mat.base_color * in.color * select(one, base_t, (has & 1u) != 0u);
    if mat.flags.z != 0u && base_color.a < mat.emissive.w {
        discard;  // alpha cut-out
    }
    let mr = select(one, mr_t, (has & 2u) != 0u);
    let emissive = mat.emissive.rgb * select(one, emissive_t, (has & 8u) != 0u).rgb;
    let occlusion_texel = select(one, occlusion_t, (has & 16u) != 0u).r;
    var n = normalize(in.normal);
    let flip = select(1.0, -1.0, !front && mat.flags.y != 0u);
    n *= flip;
    var shading_n = n;
    if (has & 4u) != 0u {
        shading_n = apply_normal_map(n, dp1, dp2, duv1, duv2, normal_t.xyz, mat.factors.z, flip);
    }
    var s: Surface;
    s.base_color = base_color.rgb;
    s.metallic = clamp(mat.factors.x * mr.b, 0.0, 1.0);
    s.roughness = clamp(mat.factors.y * mr.g, 0.0, 1.0);
    s.occlusion = 1.0 + mat.factors.w * (occlusion_texel - 1.0);
    s.emissive = emissive;
    s.normal = shading_n;
    let to_eye = normalize(u.camera.xyz - in.world_pos);
    let lit = shade(s, to_eye, u.sun.xyz);
    let out = select(lit, s.base_color, u.params.x == 7u);
    return vec4<f32>(linear_to_srgb(out), 1.0);
}
