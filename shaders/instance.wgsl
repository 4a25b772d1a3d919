// An instance from the instance buffer (renderer/instances.py): slot s is the three rows of its
// 3 x 4 affine transform, words 12 s .. 12 s + 11 (`instances`, as vec4<u32>: 3 s .. 3 s + 2);
// after the last slot (frame.instance_count of them) the block table, one asset index for each
// INSTANCE_BLOCK slots, four to a vec4. Padding slots hold zeros (no instance is singular).
// Slots from frame.proxies.x on are aggregate proxies (renderer/aggregates.py): the proxies' box
// asset (the unit cube) mapped onto a node's box, axis-aligned or turned: rows (ux, uy, uz, tx),
// (vx, vy, vz, ty), (sz, content, 0, tz), u and v the box's first two edges (their lengths its
// sizes), the third u x v scaled to sz, t its corner, content its instances' mean projected area
// (world units squared).
// An instance word (a queue's or the visible list's) is the slot, and in a shadow view the view
// above VIEW_SHIFT. An instance slot drawing the proxies' box's one cluster (frame.proxies.w) or
// part (frame.proxies.z) is drawn as its asset's box (`instance_box`, chosen by
// instance_cull.wgsl `push_root`): `entry_instance` says what a visible entry draws.
// Needs the bindings `frame`, `instances: array<vec4<u32>>` and `assets` (with SHADOW, `shadow`
// and `shadow_views` too).

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

// the unit cube onto asset row `a`'s box (object space)
fn box_matrix(a: u32) -> mat4x4<f32> {
    let lo = assets[a].box_min.xyz;
    let size = assets[a].box_size.xyz;
    return mat4x4<f32>(vec4<f32>(size.x, 0.0, 0.0, 0.0), vec4<f32>(0.0, size.y, 0.0, 0.0),
                       vec4<f32>(0.0, 0.0, size.z, 0.0), vec4<f32>(lo, 1.0));
}

// instance `inst` drawn as its asset's box: the proxies' box asset (the unit cube, with the
// asset's first material: row `box_row`) on the asset's box, keeping the share of its pixels
// that the asset covers of the box along the view, all in the asset's frame (an affine map
// keeps the ratio of two shadows along matching directions; the view direction taken there as
// its columns were orthogonal: rotations and axis scales). Seen along an axis, the share it
// covers of that face (`box_fill`, measured); between, its shadow estimated from the axes'
// shadows A_k |d_k| as w L1 + (1 - w) L2 (L1, their sum, is a box's shadow; L2, their norm,
// an ellipsoid's; w fitted to its shadows along the diagonals), over the box's L1
fn instance_box(inst: Instance, word: u32) -> Instance {
    let a = assets[inst.asset];
    var out = inst;
    out.world = inst.world * box_matrix(inst.asset);
    out.asset = a.box_row;
    out.scale = inst.scale * max(a.box_size.x, max(a.box_size.y, a.box_size.z));
    let d = view_along(word, (out.world * vec4<f32>(0.5, 0.5, 0.5, 1.0)).xyz);
    let c0 = inst.world[0].xyz;
    let c1 = inst.world[1].xyz;
    let c2 = inst.world[2].xyz;
    let dl = abs(vec3<f32>(dot(c0, d) / dot(c0, c0), dot(c1, d) / dot(c1, c1),
                           dot(c2, d) / dot(c2, c2)));
    let s = a.box_size.xyz;
    let faces = dl * vec3<f32>(s.y * s.z, s.x * s.z, s.x * s.y);  // the box's faces' shadows
    let k = faces * a.box_fill.xyz;  // the asset's, along the axes
    let shadow = a.box_fill.w * (k.x + k.y + k.z) + (1.0 - a.box_fill.w) * length(k);
    out.coverage = min(shadow / max(faces.x + faces.y + faces.z, 1e-30), 1.0);
    return out;
}

// the direction the view of instance word `word` looks at point p along: from the camera, or
// in a shadow view from its light (a face's position; the sun's direction)
fn view_along(word: u32, p: vec3<f32>) -> vec3<f32> {
#ifdef SHADOW
    let sv = shadow_views[word >> VIEW_SHIFT];
    if sv.eye.w != 0.0 {
        return p - sv.eye.xyz;
    }
    return shadow.sun.xyz;
#else
    return p - frame.camera.xyz;
#endif
}

// whether slot `s` drawing `id` draws its asset's box: `id` the box's own (`box`: its part,
// frame.proxies.z, or its one cluster, .w; NO_NODE: no box) for an instance (a proxy's slot
// draws the box as itself)
fn draws_box_of(s: u32, id: u32, box: u32) -> bool {
    return id == box && box != NO_NODE && s < frame.proxies.x;
}

// whether slot `s` drawing cluster `cref` draws its asset's box
fn draws_box(s: u32, cref: u32) -> bool {
    return draws_box_of(s, cref, frame.proxies.w);
}

// what the visible entry (instance word `word`, cluster `cref`) draws: its slot's instance, or
// that instance's box (`draws_box`)
fn entry_instance(word: u32, cref: u32) -> Instance {
    let s = word & INSTANCE_MASK;
    if draws_box(s, cref) {
        return instance_box(instance(s), word);
    }
    return instance(s);
}

// a shadow texel's key for `proxy_keep`: (x, y) in its view's window (up to 16,384 a side)
fn texel_key(x: u32, y: u32) -> u32 {
    return (y << 14u) ^ x;
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
