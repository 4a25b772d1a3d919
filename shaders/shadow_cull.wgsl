// Culling against the shadow map's page mask (the shadow views of cull.wgsl and
// instance_cull.wgsl): bounds that cover no page drawn this frame are skipped, as bounds behind
// the HZB are in the main view. Needs `shadow_hpm` (read) besides shadow.wgsl's bindings.

// the sphere around an object-space box under an instance transform
fn box_sphere(inst: Instance, lo: vec3<f32>, hi: vec3<f32>) -> vec4<f32> {
    let c = (inst.world * vec4<f32>(0.5 * (lo + hi), 1.0)).xyz;
    return vec4<f32>(c, 0.5 * length(hi - lo) * inst.scale);
}

// does a world sphere cover a page of view v drawn this frame? The mask's mip where the
// sphere's page rectangle spans at most 2 x 2 texels
fn shadow_wanted(v: u32, s: vec4<f32>) -> bool {
    let r = shadow_page_rect(v, s);
    if r.x > r.z || r.y > r.w {
        return false;
    }
    var m = 0u;
    for (; m + 1u < hpm_mips(v); m++) {
        let span = (r.zw >> vec2<u32>(m)) - (r.xy >> vec2<u32>(m));
        if all(span <= vec2<i32>(1)) {
            break;
        }
    }
    let a = r.xy >> vec2<u32>(m);
    let b = r.zw >> vec2<u32>(m);
    var hit = false;
    for (var y = a.y; y <= b.y; y++) {
        for (var x = a.x; x <= b.x; x++) {
            hit = hit || shadow_hpm[hpm_index(v, m, x, y)] != 0u;
        }
    }
    return hit;
}
