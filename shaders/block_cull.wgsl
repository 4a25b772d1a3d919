// Block cull: the top of the instance hierarchy. Instance slots come in blocks of INSTANCE_BLOCK
// (one asset each, Morton-ordered within the asset: renderer/instances.py), each with a world box
// around its instances' bounding spheres (`block_bounds`: vec4 lo (w: its instance count), vec4
// hi). One lane per block tests its box against the frustum and lists it in `blocks` when it
// touches the view; the instance cull then runs a workgroup per listed block
// (instance_cull.wgsl), so that instances out of view cost a block's test, not a lane each.
// Occlusion stays per instance (the deferred entries of the post pass are instances).
#include "layout.wgsl"
#include "math.wgsl"

// the identity transform: block boxes are in world space
fn world_instance() -> Instance {
    var out: Instance;
    out.world = mat4x4<f32>(vec4<f32>(1.0, 0.0, 0.0, 0.0), vec4<f32>(0.0, 1.0, 0.0, 0.0),
                            vec4<f32>(0.0, 0.0, 1.0, 0.0), vec4<f32>(0.0, 0.0, 0.0, 1.0));
    out.asset = 0u;
    out.scale = 1.0;
    return out;
}

@compute @workgroup_size(WORKGROUP)
fn cs_blocks(@builtin(global_invocation_id) gid: vec3<u32>) {
    let b = gid.x + gid.y * (MAX_DISPATCH * WORKGROUP);
    if b >= frame.instance_count / INSTANCE_BLOCK {
        return;
    }
    let lo = block_bounds[2u * b];
    let hi = block_bounds[2u * b + 1u];
    atomicAdd(&state[S_INSTANCES_TESTED], u32(lo.w));
    if lo.w == 0.0 || !box_in_frustum(world_instance(), lo.xyz, hi.xyz) {
        return;
    }
    blocks[atomicAdd(&state[S_BLOCKS_VISIBLE], 1u)] = b;
}

// the instance cull's dispatch: a workgroup per listed block
@compute @workgroup_size(1)
fn cs_block_args() {
    let n = atomicLoad(&state[S_BLOCKS_VISIBLE]);
    args[A_BLOCKS_X] = min(n, MAX_DISPATCH);
    args[A_BLOCKS_Y] = (n + MAX_DISPATCH - 1u) / MAX_DISPATCH;
    args[A_BLOCKS_Z] = 1u;
}
