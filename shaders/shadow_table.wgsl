// The page table of `shadow_map` (shadow.wgsl) as plain words: the page passes, the clear and
// resolve. Needs `shadow_map: array<u32>`.

fn table_entry(e: u32) -> vec4<u32> {
    let b = 4u * e;
    return vec4<u32>(shadow_map[b], shadow_map[b + 1u], shadow_map[b + 2u], 0u);
}
