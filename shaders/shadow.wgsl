// The sun's virtual shadow map, shared by every pass that reads or draws it (docs/ARCHITECTURE.md
// "Shadows"). Needs the uniforms `shadow` (ShadowInfo) and `shadow_views` (a ShadowView a level).
// The buffer `shadow_map` holds the page table (SHADOW_TABLE_WORDS: 4 words an entry: physical
// page, tag, flags, 0) and then the physical pages (SHADOW_PAGE^2 depth words each): one
// binding, read through shadow_table.wgsl (plain) or shadow_raster.wgsl (atomic).
//
// A level (view) v is a window of SHADOW_PAGES^2 pages of SHADOW_PAGE^2 texels, texel size
// texel0 * 2^v, centred on the camera and snapped to its page grid (renderer/shadows.py). Its
// view_proj maps world points to the window as a camera's maps them to the screen: texel
// (x, y) = ((ndc.x + 1) / 2, (1 - ndc.y) / 2) * window texels, so the rasterizers draw a level
// like a frame, and every pass finds a point's texel with the same arithmetic. Depth is 0
// nearest the sun, 1 farthest (the scene's depth range along the sun); the pool keeps the
// nearest with atomicMin of the float's bits (non-negative floats order as their bits).
// Absolute page coordinates (the window's origin plus the page in it) name a page as the window
// scrolls; the table wraps around: entry (v, ax mod SHADOW_PAGES, ay mod SHADOW_PAGES), with the
// absolute coordinates it holds as its tag.

const SHADOW_TEXELS: f32 = 16384.0;  // SHADOW_PAGES * SHADOW_PAGE texels a window side
const PAGE_VALID: u32 = 1u;  // the physical page holds this entry's depth (drawn, still true)
const PAGE_DRAW: u32 = 2u;  // drawn this frame: cleared, and the rasterizers write it

// the window texel of a world point in level v (x right, y down), and its depth
fn shadow_texel(v: u32, p: vec3<f32>) -> vec3<f32> {
    let c = shadow_views[v].view_proj * vec4<f32>(p, 1.0);
    return vec3<f32>((c.x * 0.5 + 0.5) * SHADOW_TEXELS, (0.5 - c.y * 0.5) * SHADOW_TEXELS, c.z);
}

// the level whose texel is about a pixel's footprint at distance `dist` from the eye: the
// coarsest whose texel is no larger than the footprint (one texel a pixel or finer)
fn shadow_level(dist: f32) -> u32 {
    let footprint = dist / shadow.footprint.x * shadow.footprint.y;
    let l = floor(log2(max(footprint / shadow.depth.z, 1.0)));
    return u32(clamp(l, 0.0, f32(shadow.counts.x - 1u)));
}

// the table entry and tag of window page (px, py) of level v
fn shadow_entry(v: u32, px: i32, py: i32) -> u32 {
    let o = shadow_views[v].origin;
    let sx = u32(o.x + px) & (SHADOW_PAGES - 1u);
    let sy = u32(o.y + py) & (SHADOW_PAGES - 1u);
    return (v * SHADOW_PAGES + sy) * SHADOW_PAGES + sx;
}

fn shadow_tag(v: u32, px: i32, py: i32) -> u32 {
    let o = shadow_views[v].origin;
    return (u32(o.x + px) & 0xffffu) | (u32(o.y + py) << 16u);
}

// the window page (px, py) of level v that table entry `e` (in v) stands for now
fn shadow_entry_page(v: u32, e: u32) -> vec2<i32> {
    let o = shadow_views[v].origin.xy;
    let s = vec2<i32>(i32(e % SHADOW_PAGES), i32((e / SHADOW_PAGES) % SHADOW_PAGES));
    let n = i32(SHADOW_PAGES);
    // the page of the window [o, o + n) congruent to s
    return ((s - o) % n + n) % n;
}

// word of texel (x, y) of physical page `phys` in `shadow_map`
fn pool_word(phys: u32, x: u32, y: u32) -> u32 {
    return SHADOW_TABLE_WORDS + (phys << (2u * SHADOW_PAGE_SHIFT)) + (y << SHADOW_PAGE_SHIFT) + x;
}

// the hierarchical page mask (`shadow_hpm`): per level, mips of SHADOW_PAGES^2 .. 1 flags, a
// texel set where a page below is drawn this frame (the shadow views' culling tests bounds
// against it, as the main view's against the HZB); the finest mip's word is the drawn page's
// physical page + 1
// HPM_MIPS (128^2 .. 1^2) and HPM_STRIDE (words a level) come from renderer/limits.py

fn hpm_offset(m: u32) -> u32 {
    let offsets = array<u32, 8>(0u, 16384u, 20480u, 21504u, 21760u, 21824u, 21840u, 21844u);
    return offsets[m];
}

fn hpm_index(v: u32, m: u32, x: i32, y: i32) -> u32 {
    return v * HPM_STRIDE + hpm_offset(m) + u32(y) * (SHADOW_PAGES >> m) + u32(x);
}

// the window pages a world sphere covers in level v: (x0, y0, x1, y1), empty (x0 > x1) if none
fn shadow_page_rect(v: u32, s: vec4<f32>) -> vec4<i32> {
    let t = shadow_texel(v, s.xyz);
    let r = s.w * shadow_views[v].texel.y;
    let n = f32(SHADOW_PAGES);
    let lo = clamp(floor((t.xy - r) / f32(SHADOW_PAGE)), vec2<f32>(-1.0), vec2<f32>(n));
    let hi = clamp(floor((t.xy + r) / f32(SHADOW_PAGE)), vec2<f32>(-1.0), vec2<f32>(n));
    let a = max(vec2<i32>(lo), vec2<i32>(0));
    let b = min(vec2<i32>(hi), vec2<i32>(i32(SHADOW_PAGES) - 1));
    return vec4<i32>(a, b);
}
