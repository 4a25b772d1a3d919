// Instance cull: one lane per instance. Reads the instances, the asset table and the root node
// spheres; tests the root sphere against the frustum; a visible instance pushes its BVH root into
// the culling queue (cull.wgsl; entries in queue.wgsl).
#include "layout.wgsl"
#include "math.wgsl"
#include "queue.wgsl"
#include "nodes.wgsl"

@compute @workgroup_size(64)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= frame.instance_count {
        return;
    }
    atomicAdd(&state[S_INSTANCES_TESTED], 1u);
    let inst = instances[i];
    let root = assets[inst.asset].node_base;
    if !sphere_in_frustum(world_sphere(inst, node_sphere(root))) {
        return;
    }
    atomicAdd(&state[S_INSTANCES_VISIBLE], 1u);
    push(root, i, false);
}
