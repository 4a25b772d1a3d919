// BVH and cluster culling: LOD selection by projected error, frustum culling, and the SW/HW bins.
//
// Reads: frame, instances, assets, nodes, groups, parts, pages (the page pool), residency (scene
// page -> pool slot), effective (per group), hzb. Writes: requests and request_stamp (streaming:
// groups wanted finer than resident), slot_used (the frame each pool slot was last used), and the queue (consumes
// and re-zeroes its entries, pushes children), state (counts, statistics), visible (the chosen
// clusters: SW from slot 0 up, HW from visible_capacity / 2 up), occluded (main pass: what the
// previous frame's HZB hides, for the post pass: occlusion.wgsl, occluded.wgsl).
//
// A queue item is a BVH node (global index) or a group part (PART_BIT | global part index).
// - node: skipped if its bounds are outside the frustum (or, with occlusion, behind the HZB), or
//   if its largest error below projects <= tau from its LOD sphere; else
//   each child node is pushed, and each child group whose error projects > tau pushes its parts
//   (its members may be drawn: their parent error is the group's error);
// - part: each member cluster whose own error projects <= tau and whose bounds touch the frustum
//   is drawn.
// Two entry points traverse the same way: `cs_persistent` (one dispatch of persistent workgroups
// pulling from the queue until no work is outstanding) and `cs_level` (the items of the current
// level, dispatched once per BVH level by the host, sized by prepare.wgsl's `cs_level_begin` in
// between).
#include "layout.wgsl"
#include "instance.wgsl"
#include "math.wgsl"
#include "queue.wgsl"
#include "nodes.wgsl"
#include "cluster.wgsl"
#include "visible.wgsl"
#ifdef SHADOW
#include "shadow.wgsl"
#include "shadow_cull.wgsl"
// no HZB for the shadow views (and no hzb or occluded binding: OpenGL binds 16 storage buffers
// a stage): the page mask culls instead
fn occlusion_visible(s: vec4<f32>, post: bool) -> bool {
    return true;
}
fn occlusion_visible_box(inst: Instance, lo: vec3<f32>, hi: vec3<f32>, post: bool) -> bool {
    return true;
}
fn defer_node(n: u32, ii: u32) -> bool {
    return false;
}
fn defer_cluster(ii: u32, cref: u32) -> bool {
    return false;
}
#else
#include "occlusion.wgsl"
#include "occluded.wgsl"
#endif

// With SHADOW, the same traversal draws the levels of the sun's shadow map (renderer/shadows.py)
// in one pass: an item's instance word carries its view (instance | view << VIEW_SHIFT), set
// by the shadow instance cull; bounds are tested against the view's window and its page mask
// (what is drawn this frame) instead of the HZB, errors project in texels; a SW cluster is
// listed once (the rasterizer writes only pages drawn this frame), a HW cluster once per page it
// covers that is drawn (the HW pass draws each into its page). Visible entries are then
// (instance | view << VIEW_SHIFT, cluster, physical page, window page x | y << 16) (the page
// words of HW items only).
// false: the main pass (occlusion against the previous frame's HZB; occluded candidates are
// deferred); true: the post pass (against this frame's HZB; occluded candidates are dropped)
override POST: bool = false;
// a descended node visits its wanted groups' parts itself instead of queueing them (the
// per-level traversal: a part takes no round of its own; the persistent one queues them
// so that idle lanes share the work)
override INLINE_PARTS: bool = false;

const NONE: u32 = 0xffffffffu;
// OVERFLOW_INCOMPLETE (renderer.results.INCOMPLETE): a loop of this shader ended before its
// condition did. Lavapipe ends every loop of an invocation once its loops made 65,535
// iterations in all, silently; the loops that decide what is drawn check where they stopped.
fn cut_short() {
    atomicOr(&state[S_OVERFLOW], OVERFLOW_INCOMPLETE);
}

fn group_sphere(g: u32) -> vec4<f32> {
    let b = g * GROUP_WORDS + GROUP_SPHERE;
    return vec4<f32>(bitcast<f32>(groups[b]), bitcast<f32>(groups[b + 1u]),
                     bitcast<f32>(groups[b + 2u]), bitcast<f32>(groups[b + 3u]));
}

// streaming: a group wanted finer but not effective (its pages, or an ancestor's, are not
// resident) asks for its pages, once per frame however many instances want it
fn request_pages(gi: u32, priority: f32) {
    let stamp = frame.frame_index + 1u;
    if atomicExchange(&request_stamp[gi], stamp) == stamp {
        return;
    }
    let k = atomicAdd(&state[S_PAGE_REQUESTS], 1u);
    if k < frame.request_capacity {
        requests[k] = vec2<u32>(gi, bitcast<u32>(priority));
    }
}

// does child group g (asset-local) want its parts visited? Its members may be drawn when its
// error projects > tau and it is effective (streaming.py: its pages and its ancestors' are
// resident); wanted but not effective, it requests its pages and its source-side clusters, a
// level coarser, stay drawn
fn group_wanted(inst: Instance, a: AssetInfo, g: u32) -> bool {
    atomicAdd(&state[S_GROUPS_TESTED], 1u);
    let gi = a.group_base + g;
    let err = bitcast<f32>(groups[gi * GROUP_WORDS + GROUP_ERROR]);
    let pe = projected_error(err, world_sphere(inst, group_sphere(gi)), inst.scale);
    if pe <= frame.tau {
        return false;
    }
    if effective[gi] == 0u {
        request_pages(gi, pe);
        return false;
    }
    return true;
}

fn visit_node(n: u32, ii: u32, inst: Instance, a: AssetInfo) {
    atomicAdd(&state[S_NODES_VISITED], 1u);
    let lo = node_box_min(n);
    let hi = node_box_max(n);
    if !box_in_frustum(inst, lo, hi) {
        return;
    }
#ifdef SHADOW
    if !shadow_wanted(cur_view, box_sphere(inst, lo, hi)) {
        return;
    }
#endif
    let err = bitcast<f32>(nodes[n * NODE_WORDS + NODE_MAX_ERROR]);
    if projected_error(err, world_sphere(inst, node_sphere(n)), inst.scale) <= frame.tau {
        return;
    }
    if !occlusion_visible_box(inst, lo, hi, POST) {
        if POST {
            atomicAdd(&state[S_POST_REJECTED], 1u);
            return;
        }
        if defer_node(n, ii) {
            atomicAdd(&state[S_OCCLUDED_NODES], 1u);
            return;
        }
    }
    // count first, so that `outstanding` grows once before any child can finish
    var wanted = 0u;
    var take = 0u;  // bit k: child k is wanted
    var k = 0u;
    for (; k < BVH_FANOUT; k++) {
        let c = nodes[n * NODE_WORDS + NODE_CHILDREN + k];
        var t = false;
        if c == CHILD_EMPTY {
            t = false;
        } else if (c & CHILD_GROUP) != 0u {
            t = group_wanted(inst, a, c & ~CHILD_GROUP);
            if t && !INLINE_PARTS {
                wanted += groups[(a.group_base + (c & ~CHILD_GROUP)) * GROUP_WORDS
                                 + GROUP_PART_COUNT];
            }
        } else {
            t = true;
            wanted += 1u;
        }
        take |= select(0u, 1u << k, t);
    }
    // cut short before an unread child (children are packed first): it would be lost unseen
    if k < BVH_FANOUT && nodes[n * NODE_WORDS + NODE_CHILDREN + k] != CHILD_EMPTY {
        cut_short();
    }
    atomicAdd(&state[S_OUTSTANDING], wanted);
    for (k = 0u; k < BVH_FANOUT; k++) {
        if (take & (1u << k)) == 0u {
            continue;
        }
        take &= ~(1u << k);
        let c = nodes[n * NODE_WORDS + NODE_CHILDREN + k];
        if (c & CHILD_GROUP) != 0u {
            let gi = a.group_base + (c & ~CHILD_GROUP);
            let first = groups[gi * GROUP_WORDS + GROUP_FIRST_PART];
            let count = groups[gi * GROUP_WORDS + GROUP_PART_COUNT];
            var p = 0u;
            for (; p < count; p++) {
                if INLINE_PARTS {
                    visit_part(a.part_base + first + p, ii, inst, a);
                } else {
                    push(PART_BIT | (a.part_base + first + p), ii, true);
                }
            }
            if p < count {
                cut_short();
            }
        } else {
            push(a.node_base + c, ii, true);
        }
    }
    if take != 0u {  // a wanted child was never pushed or visited
        cut_short();
    }
}

fn emit_hw(ii: u32, cref: u32, triangles: u32, page: vec2<u32>) {
    let half = frame.visible_capacity / 2u;
    let k = atomicAdd(&state[S_HW_COUNT], 1u);
    if k < half {
        visible[half + k] = visible_entry(ii, cref, page);
        atomicAdd(&state[S_HW_CLUSTERS], 1u);
        atomicAdd(&state[S_HW_TRIANGLES], triangles);
    } else {
        atomicOr(&state[S_OVERFLOW], OVERFLOW_VISIBLE);
    }
}

#ifdef SHADOW
// a HW cluster of a shadow view, once per page drawn this frame that its bounds cover: the
// pages of its rectangle, or the draw list where that is shorter
fn emit_shadow_hw(ii: u32, cref: u32, triangles: u32, b: vec4<f32>) {
    let v = ii >> VIEW_SHIFT;
    let r = shadow_page_rect(v, b);
    if r.x > r.z || r.y > r.w {
        return;
    }
    let area = u32((r.z - r.x + 1) * (r.w - r.y + 1));
    let drawn = min(atomicLoad(&state[S_SHADOW_DRAWN]), arrayLength(&shadow_draw));
    if area <= max(drawn, 16u) {
        for (var y = r.y; y <= r.w; y++) {
            for (var x = r.x; x <= r.z; x++) {
                let phys = shadow_hpm[hpm_index(v, 0u, x, y)];  // + 1: drawn this frame
                if phys != 0u {
                    emit_hw(ii, cref, triangles, vec2<u32>(phys - 1u, u32(x) | (u32(y) << 16u)));
                }
            }
        }
        return;
    }
    for (var d = 0u; d < drawn; d++) {
        let id = shadow_draw[d];
        if id_view(id) == v {
            let pg = shadow_entry_page(v, id & 0xffffu);
            if all(pg >= r.xy) && all(pg <= r.zw) {
                let phys = shadow_hpm[hpm_index(v, 0u, pg.x, pg.y)] - 1u;
                emit_hw(ii, cref, triangles, vec2<u32>(phys, u32(pg.x) | (u32(pg.y) << 16u)));
            }
        }
    }
}
#endif

fn emit(ii: u32, cref: u32, hw: bool, triangles: u32, b: vec4<f32>) {
    if POST {
        atomicAdd(&state[S_POST_CLUSTERS], 1u);
    }
    if hw {
#ifdef SHADOW
        emit_shadow_hw(ii, cref, triangles, b);
#else
        emit_hw(ii, cref, triangles, vec2<u32>(0u));
#endif
    } else {
        emit_sw(ii, cref, triangles);
    }
}

fn visit_part(p: u32, ii: u32, inst: Instance, a: AssetInfo) {
    // the pool slot holding the part's page (resident: its group is effective)
    let slot = residency[a.page_base + parts[p * PART_WORDS + PART_PAGE]];
    if slot == NOT_RESIDENT {
        return;
    }
    slot_used[slot] = frame.frame_index;
    let first = parts[p * PART_WORDS + PART_FIRST_CLUSTER];
    let count = parts[p * PART_WORDS + PART_CLUSTER_COUNT];
    var i = 0u;
    for (; i < count; i++) {
        atomicAdd(&state[S_CLUSTERS_TESTED], 1u);
        let cref = (slot << SLOT_BITS) | (first + i);
        let base = cluster_base(cref);
        let own = world_sphere(inst, rec_v4(base, CLUSTER_SELF_SPHERE));
        // drawn if fine enough, or if the finer clusters its source group stands for cannot be
        // drawn (that group is not effective: streaming)
        let src = rec_u(base, CLUSTER_SOURCE_GROUP);
        if projected_error(rec_f(base, CLUSTER_SELF_ERROR), own, inst.scale) > frame.tau
           && (src == NO_GROUP || effective[a.group_base + src] != 0u) {
            continue;
        }
        let b = world_sphere(inst, rec_v4(base, CLUSTER_BOUNDS));
        if !sphere_in_frustum(b) {
            continue;
        }
#ifdef SHADOW
        if !shadow_wanted(cur_view, b) {
            continue;
        }
#endif
        if !occlusion_visible(b, POST) {
            if POST {
                atomicAdd(&state[S_POST_REJECTED], 1u);
                continue;
            }
            if defer_cluster(ii, cref) {
                atomicAdd(&state[S_OCCLUDED_CLUSTERS], 1u);
                continue;
            }
        }
        let tris = rec_u(base, CLUSTER_TRIANGLE_COUNT);
        emit(ii, cref, wants_hardware(b, tris, rec_u(base, CLUSTER_MODE)), tris, b);
    }
    if i < count {
        cut_short();
    }
}

fn visit(item: u32, ii: u32) {
#ifdef SHADOW
    cur_view = ii >> VIEW_SHIFT;
#endif
    var inst = instance(ii & INSTANCE_MASK);
    // the box's part queued for an instance: its asset's box (instance.wgsl `instance_box`)
    if (item & PART_BIT) != 0u && draws_box_of(ii & INSTANCE_MASK, item & ~PART_BIT,
                                               frame.proxies.z) {
        inst = instance_box(inst, ii);
    }
    let a = assets[inst.asset];
    if (item & PART_BIT) != 0u {
        visit_part(item & ~PART_BIT, ii, inst, a);
    } else {
        visit_node(item, ii, inst, a);
    }
}

var<workgroup> wg_done: u32;

@compute @workgroup_size(WORKGROUP)
fn cs_persistent(@builtin(local_invocation_index) lid: u32) {
    var slot = NONE;
    // lavapipe may end this loop early (see cut_short): harmless unless the lane holds a claimed
    // item, which then stays outstanding (the host sees it); a cut visit flags itself
    loop {
        // claim the next slot with one atomicAdd (no compare-exchange: 8k lanes retrying one
        // CAS serialize, ~1 us per item on an H100). A claimed slot may not be written yet, or
        // ever (past the last push, or past the capacity): the lane polls it on later iterations
        // and leaves with the others once nothing is outstanding, so the read counter runs at
        // most one slot per lane past the write counter.
        if slot == NONE {
            slot = atomicAdd(&state[S_QUEUE_READ], 1u);
        }
        if slot < frame.queue_capacity {
            let item = atomicLoad(&queue[2u * slot]);
            let ii = atomicLoad(&queue[2u * slot + 1u]);
            if item != 0u && ii != 0u {
                atomicStore(&queue[2u * slot], 0u);
                atomicStore(&queue[2u * slot + 1u], 0u);
                visit(item - 1u, ii - 1u);
                atomicSub(&state[S_OUTSTANDING], 1u);
                slot = NONE;
            }
        }
        // the loop is workgroup-uniform: every lane leaves together once nothing is outstanding
        if lid == 0u {
            wg_done = select(0u, 1u, atomicLoad(&state[S_OUTSTANDING]) == 0u);
        }
        if workgroupUniformLoad(&wg_done) == 1u {
            break;
        }
    }
}

// the items of one level (what the previous one pushed: prepare.wgsl's `cs_level_begin` sets
// the range and sizes this dispatch), each lane taking every (lanes)-th item: at most
// LEVEL_ITEMS of them
@compute @workgroup_size(WORKGROUP)
fn cs_level(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let end = atomicLoad(&state[S_LEVEL_END]);
    let lanes = nwg.x * nwg.y * WORKGROUP;
    let lane = gid.x + gid.y * nwg.x * WORKGROUP;
    var i = atomicLoad(&state[S_LEVEL_START]) + lane;
    for (; i < end; i += lanes) {
        let item = atomicLoad(&queue[2u * i]);
        let ii = atomicLoad(&queue[2u * i + 1u]);
        atomicStore(&queue[2u * i], 0u);
        atomicStore(&queue[2u * i + 1u], 0u);
        visit(item - 1u, ii - 1u);
        atomicSub(&state[S_OUTSTANDING], 1u);
    }
    if i < end {
        cut_short();
    }
}

#ifndef SHADOW
// The post pass's first step (POST pipeline), one lane per entry of the occluded list: deferred
// nodes go back into the queue (the traversal that follows tests them against this frame's HZB),
// deferred clusters are tested here and drawn if visible.
@compute @workgroup_size(WORKGROUP)
fn cs_post_seed(@builtin(global_invocation_id) gid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WORKGROUP;
    let cap = frame.occluded_capacity;
    let total = min(atomicLoad(&state[S_OCCLUDED_TOTAL]), cap);
    let nodes_n = min(atomicLoad(&state[S_OCCLUDED_NODES_COUNT]), total);
    if i < nodes_n {
        let e = occluded[i];
        push(e.x, e.y, false);
        return;
    }
    let j = i - nodes_n;
    if j >= min(atomicLoad(&state[S_OCCLUDED_CLUSTERS_COUNT]), total - nodes_n) {
        return;
    }
    let e = occluded[cap - 1u - j];
    let inst = entry_instance(e.x, e.y);
    let base = cluster_base(e.y);
    let b = world_sphere(inst, rec_v4(base, CLUSTER_BOUNDS));
    if !occlusion_visible(b, true) {
        atomicAdd(&state[S_POST_REJECTED], 1u);
        return;
    }
    let tris = rec_u(base, CLUSTER_TRIANGLE_COUNT);
    emit(e.x, e.y, wants_hardware(b, tris, rec_u(base, CLUSTER_MODE)), tris, b);
}
#endif
