// Reading BVH nodes (raw words, layout generated from NODE_DTYPE). Needs `nodes`.

fn node_sphere(n: u32) -> vec4<f32> {
    let b = n * NODE_WORDS + NODE_SPHERE;
    return vec4<f32>(bitcast<f32>(nodes[b]), bitcast<f32>(nodes[b + 1u]),
                     bitcast<f32>(nodes[b + 2u]), bitcast<f32>(nodes[b + 3u]));
}

// the box of every triangle below (frustum and occlusion; node_sphere is for LOD)
fn node_box_min(n: u32) -> vec3<f32> {
    let b = n * NODE_WORDS + NODE_BOX_MIN;
    return vec3<f32>(bitcast<f32>(nodes[b]), bitcast<f32>(nodes[b + 1u]),
                     bitcast<f32>(nodes[b + 2u]));
}

fn node_box_max(n: u32) -> vec3<f32> {
    let b = n * NODE_WORDS + NODE_BOX_MAX;
    return vec3<f32>(bitcast<f32>(nodes[b]), bitcast<f32>(nodes[b + 1u]),
                     bitcast<f32>(nodes[b + 2u]));
}
