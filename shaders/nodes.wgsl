// Reading BVH nodes (raw words, layout generated from NODE_DTYPE). Needs `nodes`.

fn node_sphere(n: u32) -> vec4<f32> {
    let b = n * NODE_WORDS + NODE_SPHERE;
    return vec4<f32>(bitcast<f32>(nodes[b]), bitcast<f32>(nodes[b + 1u]),
                     bitcast<f32>(nodes[b + 2u]), bitcast<f32>(nodes[b + 3u]));
}
