// The words of `shadow_pool_state` beyond the first four (free-list top, pressure now, pressure
// next, 0): each view's count of marked entries; and writing the table.
// Needs `shadow_map: array<u32>` (shadow_table.wgsl).
const MARKED_COUNT: u32 = 4u;

fn table_store(e: u32, ent: vec4<u32>) {
    let b = 4u * e;
    shadow_map[b] = ent.x;
    shadow_map[b + 1u] = ent.y;
    shadow_map[b + 2u] = ent.z;
}
