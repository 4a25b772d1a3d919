// reference.wgsl: the brute-force reference renderer (renderer/oracles/reference.py).
//
// Draws the original full-resolution triangles, non-indexed, with vertex pulling:
// reads   group(0): `frame` (view_proj, world -> clip) and `worlds` (one world matrix per
//                   instance, indexed by @builtin(instance_index), i.e. the draw's first_instance);
//         group(1): `positions` (x, y, z float triples), `indices` (three u32 position ids per
//                   triangle, bound at the chunk's offset) and `chunk` (the chunk's first triangle).
// writes  color 0 (r32uint): triangle id + 1, color 1 (r32uint): instance id + 1 (0 = empty);
//         depth (depth32float): reversed-Z NDC depth near / distance, nearest surface kept by the
//         pipeline's "greater" depth test.

struct Frame {
    view_proj: mat4x4<f32>,
}

struct Chunk {
    first_triangle: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// The bindings are generated in front of this file from renderer/oracles/reference.py's
// FRAME_BINDINGS (group 0) and MESH_BINDINGS (group 1).

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) @interpolate(flat) triangle: u32,
    @location(1) @interpolate(flat) instance: u32,
}

@vertex
fn vs_main(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance: u32) -> VsOut {
    let p = indices[vertex];
    let local = vec4<f32>(positions[3u * p], positions[3u * p + 1u], positions[3u * p + 2u], 1.0);
    var out: VsOut;
    out.clip = frame.view_proj * (worlds[instance] * local);
    out.triangle = chunk.first_triangle + vertex / 3u;
    out.instance = instance;
    return out;
}

struct FsOut {
    @location(0) triangle: u32,
    @location(1) instance: u32,
}

@fragment
fn fs_main(in: VsOut) -> FsOut {
    return FsOut(in.triangle + 1u, in.instance + 1u);
}
