// An instance from the instance buffer (renderer/instances.py): slot s is the three rows of its
// 3 x 4 affine transform, words 12 s .. 12 s + 11 (`instances`, as vec4<u32>: 3 s .. 3 s + 2);
// after the last slot (frame.instance_count of them) the block table, one asset index for each
// INSTANCE_BLOCK slots, four to a vec4. Padding slots hold zeros (no instance is singular).
// Slots from frame.proxies.x on are aggregate proxies (renderer/aggregates.py): the proxies' box
// asset (the unit cube) mapped onto a node's box, axis-aligned or turned: rows (ux, uy, uz, tx),
// (vx, vy, vz, ty), (sz, content, 0, tz), u and v the box's first two edges (their lengths its
// sizes), the third u x v scaled to sz, t its corner, content its instances' mean projected area
// (world units squared).
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
    out.coverage = 1.0;
    if s >= frame.proxies.x {
        // a proxy: its box's projected area along the view from the frame's camera
        let size = vec3<f32>(length(r0.xyz), length(r1.xyz), r2.x);
        let u = r0.xyz / size.x;
        let v = r1.xyz / size.y;
        let w = normalize(cross(u, v));
        out.world = mat4x4<f32>(vec4<f32>(r0.xyz, 0.0), vec4<f32>(r1.xyz, 0.0),
                                vec4<f32>(w * size.z, 0.0), vec4<f32>(r0.w, r1.w, r2.w, 1.0));
        out.asset = instance_asset(s);
        out.scale = max(size.x, max(size.y, size.z));
        let centre = vec3<f32>(r0.w, r1.w, r2.w) + 0.5 * (r0.xyz + r1.xyz + w * size.z);
        let d = normalize(centre - frame.camera.xyz);
        let area = abs(dot(d, u)) * size.y * size.z + abs(dot(d, v)) * size.x * size.z
            + abs(dot(d, w)) * size.x * size.y;
        // instances scattered at random cover 1 - exp(-their area / the box's) of it (they
        // hide one another: the Poisson model of a field of small occluders)
        out.coverage = 1.0 - exp(-r2.y / max(area, 1e-30));
        return out;
    }
    // column-major: column k is (r0[k], r1[k], r2[k], k == 3)
    out.world = mat4x4<f32>(vec4<f32>(r0.x, r1.x, r2.x, 0.0), vec4<f32>(r0.y, r1.y, r2.y, 0.0),
                            vec4<f32>(r0.z, r1.z, r2.z, 0.0), vec4<f32>(r0.w, r1.w, r2.w, 1.0));
    out.asset = instance_asset(s);
    out.scale = sqrt(max(max(dot(out.world[0].xyz, out.world[0].xyz),
                             dot(out.world[1].xyz, out.world[1].xyz)),
                         dot(out.world[2].xyz, out.world[2].xyz)));
    return out;
}

// whether a proxy of `coverage` keeps pixel `pixel` this frame: a hash of the pixel, the proxy's
// slot and the frame index under the coverage (1: always), so that overlapping proxies keep
// independent pixels and successive frames (temporal accumulation) average to the coverage
fn proxy_keep(coverage: f32, pixel: u32, slot: u32) -> bool {
    if coverage >= 1.0 {
        return true;
    }
    var h = (pixel * 0x9e3779b1u) ^ (slot * 0x85ebca77u) ^ (frame.frame_index * 0xc2b2ae3du);
    h ^= h >> 16u;
    h *= 0x7feb352du;
    h ^= h >> 15u;
    h *= 0x846ca68bu;
    h ^= h >> 16u;
    return f32(h >> 8u) * (1.0 / 16777216.0) < coverage;
}
