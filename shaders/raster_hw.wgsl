// Hardware rasterizer: one indirect draw, an instance per visible HW cluster and 3 x 128 vertices
// per instance, vertices pulled from the page data (triangles past the cluster's count collapse to
// a point and are dropped). The fixed-function rasterizer clips at the near plane and
// interpolates depth; the fragment shader writes the visibility buffer like the software
// rasterizer does. Back faces are culled here, not by the pipeline, since double-sided materials
// keep theirs: each vertex decodes its triangle's three corners and tests the sign of the
// homogeneous determinant of (x, y, w), the triangle's orientation on screen even where a corner
// lies behind the eye (Olano and Greer 1997). Reads visible (HW half), pages, instances, assets,
// frame.
#include "layout.wgsl"
#include "cluster.wgsl"
#include "visbuffer.wgsl"

struct VertexOut {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) payload: u32,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) k: u32) -> VertexOut {
    var out: VertexOut;
    let idx = frame.visible_capacity / 2u + state[S_HW_FIRST] + k;
    let entry = visible[idx];
    let inst = instances[entry.x];
    let page = page_start(entry.y);
    let base = cluster_base(entry.y);
    let t = vi / 3u;
    if t >= rec_u(base, CLUSTER_TRIANGLE_COUNT) {
        out.position = vec4<f32>(0.0, 0.0, -1.0, 1.0);  // behind the depth range: clipped
        out.payload = 0u;
        return out;
    }
    let c = cluster_triangle(page, base, t);
    let step = assets[inst.asset].step;
    var clip: array<vec4<f32>, 3>;
    for (var k = 0u; k < 3u; k++) {
        clip[k] = frame.view_proj
            * (inst.world * vec4<f32>(cluster_position(page, base, c[k], step), 1.0));
    }
    // counter-clockwise on screen (a front face) is a positive determinant
    let det = determinant(mat3x3<f32>(clip[0].xyw, clip[1].xyw, clip[2].xyw));
    if det <= 0.0 && !triangle_double_sided(page, base, t) {
        out.position = vec4<f32>(0.0, 0.0, -1.0, 1.0);  // a single-sided back face: dropped
        out.payload = 0u;
        return out;
    }
    out.position = clip[vi % 3u];
    out.payload = (idx << TRIANGLE_BITS) | t;
    return out;
}

@fragment
fn fs_main(in: VertexOut) {
    let x = u32(in.position.x);
    let y = u32(in.position.y);
    vis_write(y * u32(frame.viewport.x) + x, in.position.z, in.payload);
}
