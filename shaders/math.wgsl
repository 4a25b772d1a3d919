// Culling math shared by the culling passes (no buffer access): spheres under an instance
// transform, the frustum test, the LOD projection of an error, and the SW/HW choice. The numpy
// twin of every function here is in renderer/oracles/cpu_cull.py; keep the two in step.

const TINY_DISTANCE: f32 = 1e-12;
const HUGE: f32 = 3.0e38;

// The view being culled: the camera's (`frame`), or with SHADOW a shadow view
// (`shadow_views[cur_view]`, set by the pass for each item; shaders/shadow.wgsl): a level of the
// sun's clipmap, orthographic, its LOD scale in texels per world unit at any distance, or a mip
// of a local light's face, perspective from the light.
#ifdef SHADOW
var<private> cur_view: u32;

fn view_plane(i: u32) -> vec4<f32> {
    return shadow_views[cur_view].planes[i];
}
#else
fn view_plane(i: u32) -> vec4<f32> {
    return frame.planes[i];
}
#endif

// an object-space sphere (xyz centre, w radius) in world space
fn world_sphere(inst: Instance, s: vec4<f32>) -> vec4<f32> {
    let c = inst.world * vec4<f32>(s.xyz, 1.0);
    return vec4<f32>(c.xyz, s.w * inst.scale);
}

// true when the world-space sphere touches the frustum (conservative near the corners)
fn sphere_in_frustum(s: vec4<f32>) -> bool {
    var inside = true;
    for (var i = 0u; i < 5u; i++) {
        let p = view_plane(i);
        inside = inside && (dot(p.xyz, s.xyz) + p.w >= -s.w);
    }
    return inside;
}

// true when an object-space box under an instance transform touches the frustum: each plane
// against the box's centre and its half extents along the transformed axes (exact for a box)
fn box_in_frustum(inst: Instance, lo: vec3<f32>, hi: vec3<f32>) -> bool {
    let c = (inst.world * vec4<f32>(0.5 * (lo + hi), 1.0)).xyz;
    let h = 0.5 * (hi - lo);
    let ax = inst.world[0].xyz * h.x;
    let ay = inst.world[1].xyz * h.y;
    let az = inst.world[2].xyz * h.z;
    var inside = true;
    for (var i = 0u; i < 5u; i++) {
        let p = view_plane(i);
        let r = abs(dot(p.xyz, ax)) + abs(dot(p.xyz, ay)) + abs(dot(p.xyz, az));
        inside = inside && (dot(p.xyz, c) + p.w >= -r);
    }
    return inside;
}

// the error (object units, scaled by the instance) seen from the camera, in pixels: at the
// nearest point of the sphere, as preprocess.cut.projected_error; the root error never projects
// below any threshold
fn projected_error(err: f32, s: vec4<f32>, scale: f32) -> f32 {
    if err >= ROOT_ERROR {
        return HUGE;
    }
#ifdef SHADOW
    let sv = shadow_views[cur_view];
    if sv.eye.w != 0.0 {  // a local light's face: perspective from the light, in texels
        let d = distance(sv.eye.xyz, s.xyz) - s.w;
        return err * scale * sv.texel.y / max(d, TINY_DISTANCE);
    }
    return err * scale * sv.texel.y;  // the sun's: orthographic, texels
#else
    let d = distance(frame.camera.xyz, s.xyz) - s.w;
    return err * scale * frame.camera.w / max(d, TINY_DISTANCE);
#endif
}

// hardware raster for clusters that reach the near plane, or whose typical triangle edge is long
// on screen (software raster loops over a triangle's box on one lane)
fn wants_hardware(b: vec4<f32>, triangles: u32, mode: u32) -> bool {
    if (mode & MODE_ALPHA_MASK) != 0u {
        return true;  // alpha cut-outs: the HW fragment shader tests the alpha
    }
#ifdef SHADOW
    // the HW pass clips each page's draw to the page; the sun's views are orthographic, with no
    // near plane; a face's are a camera's
    let sv = shadow_views[cur_view];
    var r_texels = b.w * sv.texel.y;
    if sv.eye.w != 0.0 {
        let p = sv.planes[4];
        if dot(p.xyz, b.xyz) + p.w < b.w {
            return true;
        }
        r_texels /= max(distance(sv.eye.xyz, b.xyz) - b.w, TINY_DISTANCE);
    }
    let edge_texels = 2.0 * r_texels / sqrt(f32(max(triangles, 1u)));
    return edge_texels > frame.sw_max_edge;
#else
    let p = frame.planes[4];
    let ahead = dot(p.xyz, b.xyz) + p.w;
    if ahead < b.w {
        return true;
    }
    let d = distance(frame.camera.xyz, b.xyz);
    let r_px = b.w * frame.camera.w / max(d - b.w, TINY_DISTANCE);
    let edge_px = 2.0 * r_px / sqrt(f32(max(triangles, 1u)));
    return edge_px > frame.sw_max_edge;
#endif
}

fn hash_u32(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

fn hash_color(x: u32) -> vec3<f32> {
    let h = hash_u32(x);
    return vec3<f32>(f32(h & 255u), f32((h >> 8u) & 255u), f32((h >> 16u) & 255u)) / 255.0 * 0.8
        + 0.2;
}
