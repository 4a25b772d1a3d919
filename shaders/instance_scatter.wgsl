// Instance scatter: one lane per moved instance writes its rows now into its slot of the
// instance buffer (renderer/passes/instance_scatter.py), so that moving k instances uploads k
// entries of the moved table, not k runs of the instance buffer.
#include "layout.wgsl"
#include "moved.wgsl"

@compute @workgroup_size(WORKGROUP)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x + gid.y * (MAX_DISPATCH * WORKGROUP);
    if k >= moved_count() {
        return;
    }
    let e = moved_entry(k);
    let s = moved[e].x;
    for (var r = 0u; r < 3u; r++) {
        instances[3u * s + r] = moved[e + 4u + r];
    }
}
