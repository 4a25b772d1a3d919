// The occlusion test: is a world-space sphere provably behind the hierarchical depth buffer?
// Needs `frame` and `hzb` (array<u32>: every mip of the HZB, each texel the farthest, i.e. the
// smallest reversed-Z depth bits, of the pixels it covers; shaders/hzb.wgsl builds it).
//
// The main pass tests against the previous frame's HZB with the previous frame's camera
// (`post` false), the post pass against this frame's (`post` true). The test is conservative:
// - a sphere's screen rectangle is bounded exactly (Mara and McGuire 2013, "2D Polyhedral
//   Bounds of a Clipped, Perspective-Projected 3D Sphere"), a box's by its projected corners;
//   grown by one pixel;
// - the mip is chosen so the rectangle spans at most 2x2 texels, and the farthest of them is
//   compared with the sphere's nearest depth;
// - a bound reaching the near plane is visible; the part of a rectangle outside the view is
//   dropped (in the main pass the previous view: what it hides there is only deferred to the post
//   pass, which tests it against this frame's HZB); an empty pixel has depth 0 (infinitely far)
//   and hides nothing.
// BVH nodes and instances are tested by their boxes (8 projected corners), clusters by their
// bounding spheres.

fn hzb_texel(mip: u32, x: u32, y: u32) -> u32 {
    let w = (frame.hzb_size.x + (1u << mip) - 1u) >> mip;
    return hzb[frame.hzb_mips[mip / 4u][mip % 4u] + y * w + x];
}

// the camera a test uses: the previous frame's (main pass) or this frame's (post pass); w of
// the projection is 0 when there is no HZB to test against
fn occlusion_view(post: bool) -> mat4x4<f32> {
    if post {
        return frame.view;
    }
    return frame.prev_view;
}

fn occlusion_proj(post: bool) -> vec4<f32> {
    if (frame.flags & FLAG_OCCLUSION) == 0u {
        return vec4<f32>(0.0);
    }
    if post {
        return frame.proj;
    }
    return frame.prev_proj;
}

// a screen rectangle in NDC (x0, y0, x1, y1; y up) whose nearest point has reversed-Z depth
// `nearest`: is it behind every pixel of the HZB under it?
fn hzb_occludes(ndc: vec4<f32>, nearest: f32, post: bool) -> bool {
    // to pixels (y down), one pixel of margin
    let size = frame.viewport.xy;
    var lo = vec2<f32>((ndc.x * 0.5 + 0.5) * size.x, (0.5 - ndc.w * 0.5) * size.y) - 1.0;
    var hi = vec2<f32>((ndc.z * 0.5 + 0.5) * size.x, (0.5 - ndc.y * 0.5) * size.y) + 1.0;
    lo = clamp(lo, vec2<f32>(0.0), size - 1.0);
    hi = clamp(hi, vec2<f32>(0.0), size - 1.0);
    if any(hi < lo) {
        return false;
    }
    // the mip where the rectangle spans at most 2 texels each way: texels of mip k cover
    // 2^(k+1) pixels, and a span no longer than a texel touches at most two
    let extent = max(hi.x - lo.x, hi.y - lo.y);
    var mip = 0u;
    if extent > 2.0 {
        mip = min(u32(ceil(log2(extent))) - 1u, frame.hzb_size.z - 1u);
    }
    // log2 may round down at exact powers of two: step up until the span fits
    loop {
        let t0 = vec2<u32>(lo) >> vec2<u32>(mip + 1u);
        let t1 = vec2<u32>(hi) >> vec2<u32>(mip + 1u);
        if all(t1 - t0 <= vec2<u32>(1u)) || mip + 1u >= frame.hzb_size.z {
            break;
        }
        mip += 1u;
    }
    let t0 = vec2<u32>(lo) >> vec2<u32>(mip + 1u);
    let t1 = vec2<u32>(hi) >> vec2<u32>(mip + 1u);
    let far = min(min(hzb_texel(mip, t0.x, t0.y), hzb_texel(mip, t1.x, t0.y)),
                  min(hzb_texel(mip, t0.x, t1.y), hzb_texel(mip, t1.x, t1.y)));
    return bitcast<u32>(nearest) < far;  // reversed Z: larger is nearer
}

// a world-space sphere (cluster bounds)
fn occlusion_visible(s: vec4<f32>, post: bool) -> bool {
    let proj = occlusion_proj(post);
    if proj.w == 0.0 {
        return true;
    }
    let v = (occlusion_view(post) * vec4<f32>(s.xyz, 1.0)).xyz;
    let c = vec3<f32>(v.x, v.y, -v.z);  // +z ahead
    let r = s.w;
    let znear = proj.z;
    if c.z < r + znear {
        return true;
    }
    let cx = -c.xz;
    let vx = vec2<f32>(sqrt(max(dot(cx, cx) - r * r, 0.0)), r);
    let minx = vec2<f32>(vx.x * cx.x - vx.y * cx.y, vx.y * cx.x + vx.x * cx.y);
    let maxx = vec2<f32>(vx.x * cx.x + vx.y * cx.y, -vx.y * cx.x + vx.x * cx.y);
    let cy = -c.yz;
    let vy = vec2<f32>(sqrt(max(dot(cy, cy) - r * r, 0.0)), r);
    let miny = vec2<f32>(vy.x * cy.x - vy.y * cy.y, vy.y * cy.x + vy.x * cy.y);
    let maxy = vec2<f32>(vy.x * cy.x + vy.y * cy.y, -vy.y * cy.x + vy.x * cy.y);
    let ndc = vec4<f32>(minx.x / minx.y * proj.x, miny.x / miny.y * proj.y,
                        maxx.x / maxx.y * proj.x, maxy.x / maxy.y * proj.y);
    return !hzb_occludes(ndc, znear / (c.z - r), post);
}

// an object-space box under an instance transform (BVH nodes, instances): its 8 corners
fn occlusion_visible_box(inst: Instance, lo: vec3<f32>, hi: vec3<f32>, post: bool) -> bool {
    let proj = occlusion_proj(post);
    if proj.w == 0.0 {
        return true;
    }
    let m = occlusion_view(post) * inst.world;
    var ndc = vec4<f32>(HUGE, HUGE, -HUGE, -HUGE);
    var zmin = HUGE;
    for (var k = 0u; k < 8u; k++) {
        let corner = select(lo, hi, vec3<bool>((k & 1u) != 0u, (k & 2u) != 0u, (k & 4u) != 0u));
        let v = (m * vec4<f32>(corner, 1.0)).xyz;
        let z = -v.z;  // +z ahead
        if z < proj.z {
            return true;  // reaches the near plane
        }
        let p = vec2<f32>(v.x / z * proj.x, v.y / z * proj.y);
        ndc = vec4<f32>(min(ndc.xy, p), max(ndc.zw, p));
        zmin = min(zmin, z);
    }
    return !hzb_occludes(ndc, proj.z / zmin, post);
}
