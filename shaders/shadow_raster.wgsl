// Writing the shadow map (the SHADOW variants of raster_sw.wgsl and raster_hw.wgsl): a texel of
// a page drawn this frame keeps the nearest depth to the sun, atomicMin of the float's bits.
// Needs `shadow_map: array<atomic<u32>>` (the table and the pool) and, for the SW pass,
// `shadow_hpm` (read: its finest mip holds the physical page + 1 of each page drawn this frame),
// besides shadow.wgsl's.

#ifdef SHADOW_SW
// texel (x, y) of level v's window, if its page is drawn this frame
fn shadow_write(v: u32, x: i32, y: i32, depth: f32) {
    let phys = shadow_hpm[hpm_index(v, 0u, x >> SHADOW_PAGE_SHIFT, y >> SHADOW_PAGE_SHIFT)];
    if phys == 0u {
        return;
    }
    let m = i32(SHADOW_PAGE) - 1;
    shadow_write_page(phys - 1u, u32(x & m), u32(y & m), depth);
}
#endif

// texel (x, y) of physical page `phys`
fn shadow_write_page(phys: u32, x: u32, y: u32, depth: f32) {
    atomicMin(&shadow_map[pool_word(phys, x, y)], bitcast<u32>(max(depth, 0.0)));
}
