// An instance from the instance buffer (renderer/instances.py): slot s is the three rows of its
// 3 x 4 affine transform, words 12 s .. 12 s + 11 (`instances`, as vec4<u32>: 3 s .. 3 s + 2);
// after the last slot (frame.instance_count of them) the block table, one asset index for each
// INSTANCE_BLOCK slots, four to a vec4. Padding slots hold zeros (no instance is singular).
// Needs the bindings `frame` and `instances: array<vec4<u32>>`.

fn instance_row(s: u32, r: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(instances[3u * s + r]);
}

// whether slot `s` holds an instance (not padding)
fn instance_present(s: u32) -> bool {
    return any(instances[3u * s] != vec4<u32>(0u));
}

fn instance_asset(s: u32) -> u32 {
    let b = s / INSTANCE_BLOCK;
    return instances[3u * frame.instance_count + b / 4u][b % 4u];
}

fn instance(s: u32) -> Instance {
    let r0 = instance_row(s, 0u);
    let r1 = instance_row(s, 1u);
    let r2 = instance_row(s, 2u);
    var out: Instance;
    // column-major: column k is (r0[k], r1[k], r2[k], k == 3)
    out.world = mat4x4<f32>(vec4<f32>(r0.x, r1.x, r2.x, 0.0), vec4<f32>(r0.y, r1.y, r2.y, 0.0),
                            vec4<f32>(r0.z, r1.z, r2.z, 0.0), vec4<f32>(r0.w, r1.w, r2.w, 1.0));
    out.asset = instance_asset(s);
    out.scale = sqrt(max(max(dot(out.world[0].xyz, out.world[0].xyz),
                             dot(out.world[1].xyz, out.world[1].xyz)),
                         dot(out.world[2].xyz, out.world[2].xyz)));
    return out;
}
