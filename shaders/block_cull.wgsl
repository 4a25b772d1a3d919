// Block cull: the top of the instance hierarchy. Instance slots come in blocks of INSTANCE_BLOCK
// (one asset each, in k-d order within the asset: renderer/instances.py), each with a world box
// around its instances' bounding spheres (`block_bounds`: vec4 lo (w: its instance count), vec4
// hi). One lane per block tests its box against the frustum and lists it in `blocks` when it
// touches the view; the instance cull then runs a workgroup per listed block
// (instance_cull.wgsl), so that instances out of view cost a block's test, not a lane each.
// Occlusion stays per instance (the deferred entries of the post pass are instances).
// Aggregate proxies (renderer/aggregates.py): the blocks are the leaves of a tree of proxy nodes
// (`aggregates`: vec4 sphere, vec4<u32> (error bits, parent, first block, proxy slot)), each
// node's error never below its children's and its sphere holding theirs, so "projects <= tau"
// holds for a node's descendants whenever it holds for the node. A block's lane walks up from
// its own node while that holds: the highest such node stands for the block, and the lane of
// its first block lists its proxy slot (PROXY_ENTRY), which the instance cull queues as the box
// asset's root; a block with no such node lists itself. Every instance is drawn once: by itself
// or by the one proxy over it.
#include "layout.wgsl"
#include "math.wgsl"

// the identity transform: block boxes are in world space
fn world_instance() -> Instance {
    var out: Instance;
    out.world = mat4x4<f32>(vec4<f32>(1.0, 0.0, 0.0, 0.0), vec4<f32>(0.0, 1.0, 0.0, 0.0),
                            vec4<f32>(0.0, 0.0, 1.0, 0.0), vec4<f32>(0.0, 0.0, 0.0, 1.0));
    out.asset = 0u;
    out.scale = 1.0;
    out.coverage = 1.0;
    return out;
}

// node n's error projects <= tau (world units; its sphere's nearest point to the eye)
fn node_fine(n: u32) -> bool {
    let s = bitcast<vec4<f32>>(aggregates[2u * n]);
    return projected_error(bitcast<f32>(aggregates[2u * n + 1u].x), s, 1.0) <= frame.tau;
}

@compute @workgroup_size(WORKGROUP)
fn cs_blocks(@builtin(global_invocation_id) gid: vec3<u32>) {
    let b = gid.x + gid.y * (MAX_DISPATCH * WORKGROUP);
    if b >= frame.proxies.x / INSTANCE_BLOCK {
        return;
    }
    let lo = block_bounds[2u * b];
    let hi = block_bounds[2u * b + 1u];
    atomicAdd(&state[S_INSTANCES_TESTED], u32(lo.w));
    if lo.w == 0.0 {
        return;
    }
    if frame.proxies.y != 0u && node_fine(b) {
        var n = b;  // block b's own node is node b
        loop {
            let up = aggregates[2u * n + 1u].y;
            if up == NO_NODE || !node_fine(up) {
                break;
            }
            n = up;
        }
        let info = aggregates[2u * n + 1u];
        atomicAdd(&state[S_PROXIED_INSTANCES], u32(lo.w));
        if info.z == b && sphere_in_frustum(bitcast<vec4<f32>>(aggregates[2u * n])) {
            atomicAdd(&state[S_PROXIES_DRAWN], 1u);
            blocks[atomicAdd(&state[S_BLOCKS_VISIBLE], 1u)] = PROXY_ENTRY | info.w;
        }
        return;
    }
    if !box_in_frustum(world_instance(), lo.xyz, hi.xyz) {
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
