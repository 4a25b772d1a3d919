// Instance cull: one lane per instance slot (padding slots return at once): in the main view
// those of the blocks in view (block_cull.wgsl; a listed aggregate proxy: its box's root), for
// the shadow views every instance slot (no proxy). Reads the instances, the asset table and the
// root node spheres; tests the root's box against the frustum and the previous frame's HZB; a visible
// instance pushes its BVH root into the culling queue (cull.wgsl; entries in queue.wgsl), an
// occluded one defers its root to the post pass (occluded.wgsl).
// A far instance skips its BVH: when the largest error of every group but the root projects
// <= tau from the root node's sphere (which holds every group's sphere, so no group's error
// projects larger), no group but the root is wanted, and the traversal would only walk down to
// the root group. Its parts are pushed instead; the cluster tests are the same. Farther still its
// asset's box stands for it (`push_root`), in the shadow views too.
#include "layout.wgsl"
#include "instance.wgsl"
#include "math.wgsl"
#include "queue.wgsl"
#include "visible.wgsl"
#include "nodes.wgsl"
#include "occlusion.wgsl"
#include "occluded.wgsl"
#ifdef SHADOW
#include "shadow.wgsl"
#include "shadow_cull.wgsl"
#endif

// the instance's root: its parts when only the root group can be wanted, else its BVH root; `vi`
// is the instance word of the queue (the instance, and a shadow view's index above VIEW_SHIFT)
fn push_root(inst: Instance, vi: u32, root: u32) {
    let a = assets[inst.asset];
    // farther still, where its box's error (both ways between the box and the full detail,
    // `Asset.box_gap`) projects <= tau from the box's sphere: the box (instance.wgsl
    // `instance_box`), the box's part (frame.proxies.z; NO_NODE: boxes off) for this instance
    if frame.proxies.z != NO_NODE && a.box_row != NO_NODE {
        let c = (a.box_min.xyz + 0.5 * a.box_size.xyz);
        let s = world_sphere(inst, vec4<f32>(c, 0.5 * length(a.box_size.xyz)));
        if projected_error(a.box_min.w, s, inst.scale) <= frame.tau {
            atomicAdd(&state[S_INSTANCES_BOXED], 1u);  // (a shadow view's: once a view)
            // small on screen and clear of the near plane: straight into the SW half of the
            // visible list as the box's one cluster (frame.proxies.w; the traversal would test
            // its error, 0, and the frustum, occlusion or shadow view's pages, which the root
            // box passed)
            if frame.proxies.w != NO_NODE && !wants_hardware(s, BOX_TRIANGLES, 0u) {
                emit_sw(vi, frame.proxies.w, BOX_TRIANGLES);
                return;
            }
            push(PART_BIT | frame.proxies.z, vi, false);
            return;
        }
    }
    if projected_error(a.far_error, world_sphere(inst, node_sphere(root)), inst.scale)
       <= frame.tau {
        atomicAdd(&state[S_INSTANCES_FAR], 1u);
        for (var p = 0u; p < a.root_part_count; p++) {
            push(PART_BIT | (a.root_first_part + p), vi, false);
        }
        return;
    }
    push(root, vi, false);
}

@compute @workgroup_size(WORKGROUP)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(workgroup_id) wg: vec3<u32>,
           @builtin(local_invocation_index) lane: u32) {
#ifdef SHADOW
    // every instance slot (the shadow views' windows are not the camera's frustum), in 2-D past
    // MAX_DISPATCH workgroups (renderer/passes/instance_cull.py)
    let i = gid.x + gid.y * (MAX_DISPATCH * WORKGROUP);
    if i >= frame.proxies.x || !instance_present(i) {  // (no proxy in a shadow view)
        return;
    }
    atomicAdd(&state[S_INSTANCES_TESTED], 1u);
#else
    // a workgroup per block in view (block_cull.wgsl; WORKGROUP == INSTANCE_BLOCK), a lane a slot;
    // or an aggregate proxy's slot, queued by the first lane as its box asset's root. Past
    // MAX_DISPATCH listed the dispatch is 2-D, rows of MAX_DISPATCH: the last row's workgroups
    // past the list return (they would read earlier frames' entries and draw those blocks again)
    let w = wg.x + wg.y * MAX_DISPATCH;
    if w >= atomicLoad(&state[S_BLOCKS_VISIBLE]) {
        return;
    }
    let entry = blocks[w];
    if (entry & PROXY_ENTRY) != 0u {
        let s = entry & ~PROXY_ENTRY;
        if lane == 0u {
            let proxy = instance(s);
            push_root(proxy, s, assets[proxy.asset].node_base);
        }
        return;
    }
    let i = entry * INSTANCE_BLOCK + lane;
    if !instance_present(i) {
        return;
    }
#endif
    let inst = instance(i);
    let root = assets[inst.asset].node_base;
    let lo = node_box_min(root);
    let hi = node_box_max(root);
#ifdef SHADOW
    // every view with a page to draw this frame whose window and drawn pages the root touches
    for (var v = 0u; v < shadow.views.x; v++) {
        cur_view = v;
        if shadow_hpm[hpm_index(v, hpm_mips(v) - 1u, 0, 0)] == 0u || !box_in_frustum(inst, lo, hi)
           || !shadow_wanted(v, box_sphere(inst, lo, hi)) {
            continue;
        }
        atomicAdd(&state[S_INSTANCES_VISIBLE], 1u);
        push_root(inst, i | (v << VIEW_SHIFT), root);
    }
#else
    if !box_in_frustum(inst, lo, hi) {
        return;
    }
    atomicAdd(&state[S_INSTANCES_VISIBLE], 1u);
    if !occlusion_visible_box(inst, lo, hi, false) && defer_node(root, i) {
        atomicAdd(&state[S_OCCLUDED_INSTANCES], 1u);
        return;
    }
    push_root(inst, i, root);
#endif
}
