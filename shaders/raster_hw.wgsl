// Hardware rasterizer: one indirect draw, an instance per visible HW cluster and 3 x 128 vertices
// per instance, vertices pulled from the page data (triangles past the cluster's count collapse to
// a point and are dropped). The fixed-function rasterizer clips at the near plane, culls back
// faces and interpolates depth; the fragment shader writes the visibility buffer like the
// software rasterizer does. Reads visible (HW half), pages, instances, assets, frame.
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
    let v = c[vi % 3u];
    let p = cluster_position(page, base, v, assets[inst.asset].step);
    out.position = frame.view_proj * (inst.world * vec4<f32>(p, 1.0));
    out.payload = (idx << TRIANGLE_BITS) | t;
    return out;
}

@fragment
fn fs_main(in: VertexOut) {
    let x = u32(in.position.x);
    let y = u32(in.position.y);
    vis_write(y * u32(frame.viewport.x) + x, in.position.z, in.payload);
}
