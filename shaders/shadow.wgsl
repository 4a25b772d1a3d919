// The virtual shadow maps, shared by every pass that reads or draws them (docs/ARCHITECTURE.md
// "Shadows"). Needs the uniforms `shadow` (ShadowInfo) and `shadow_views` (SHADOW_VIEWS
// ShadowViews). The buffer `shadow_map` holds the page table (shadow.views.z words: 4 words an
// entry: physical page, tag, flags, 0) and then the physical pages (SHADOW_PAGE^2 depth words
// each): one binding, read through shadow_table.wgsl (plain) or shadow_raster.wgsl (atomic).
//
// A view v is a window of n^2 pages of SHADOW_PAGE^2 texels (n = 1 << table.y), with its
// entries from table.x: the sun's views are its clipmap levels (n = SHADOW_PAGES, texel texel0 *
// 2^v, centred on the camera and snapped to the page grid, orthographic), a local light's are
// the mips of each face (n = LOCAL_PAGES >> mip, perspective from the light, window fixed:
// origin 0). Its view_proj maps world points to the window as a camera's maps them to the
// screen: texel (x, y) = ((ndc.x + 1) / 2, (1 - ndc.y) / 2) * window texels, so the rasterizers
// draw a view like a frame, and every pass finds a point's texel with the same arithmetic.
// Depth is 0 nearest the light, 1 farthest (the sun: the scene's depth range along it; a face:
// its near and far planes, perspective depth); the pool keeps the nearest with atomicMin of the
// float's bits (non-negative floats order as their bits).
// Absolute page coordinates (the window's origin plus the page in it) name a page as a sun
// level's window scrolls; its table wraps around: entry (ax mod n, ay mod n) of the view, with
// the absolute coordinates it holds as its tag.

const PAGE_VALID: u32 = 1u;  // the physical page holds this entry's depth (drawn, still true)
const PAGE_DRAW: u32 = 2u;  // drawn this frame: cleared, and the rasterizers write it

// pages a side of view v's window, and texels
fn view_pages(v: u32) -> u32 {
    return 1u << shadow_views[v].table.y;
}

fn view_texels(v: u32) -> f32 {
    return f32(view_pages(v) * SHADOW_PAGE);
}

fn view_is_face(v: u32) -> bool {
    return shadow_views[v].eye.w != 0.0;
}

// the window texel of a world point in view v (x right, y down), and its depth
fn shadow_texel(v: u32, p: vec3<f32>) -> vec3<f32> {
    let c = shadow_views[v].view_proj * vec4<f32>(p, 1.0);
    let n = c.xyz / c.w;
    let t = view_texels(v);
    return vec3<f32>((n.x * 0.5 + 0.5) * t, (0.5 - n.y * 0.5) * t, n.z);
}

// the sun's level whose texel is about a pixel's footprint at distance `dist` from the eye: the
// coarsest whose texel is no larger than the footprint (one texel a pixel or finer)
fn shadow_level(dist: f32) -> u32 {
    let footprint = dist / shadow.footprint.x * shadow.footprint.y;
    let l = floor(log2(max(footprint / shadow.depth.z, 1.0)));
    return u32(clamp(l, 0.0, f32(shadow.counts.x - 1u)));
}

// the same for a local light's face whose finest mip is view `v0`, at distance `z` from the
// light along the face's axis: its mip (the views v0 .. v0 + LOCAL_MIPS - 1)
fn face_mip(v0: u32, z: f32, dist: f32) -> u32 {
    let footprint = dist / shadow.footprint.x * shadow.footprint.y;
    let texel = z / shadow_views[v0].texel.y;  // the finest mip's texel at z
    let m = floor(log2(max(footprint / texel, 1.0)));
    return u32(clamp(m, 0.0, f32(LOCAL_MIPS - 1u)));
}

// the face of light `l` (its first view and faces as Light.views) a point lies in: a spot's
// only one, or a point light's along the largest axis of the light to the point (+x, -x, +y,
// -y, +z, -z)
fn light_face(views: vec4<u32>, d: vec3<f32>) -> u32 {
    if views.y < 6u {
        return views.x;
    }
    let a = abs(d);
    var f = select(4u, 2u, a.y > a.z);
    var s = select(d.z, d.y, a.y > a.z);
    if a.x > max(a.y, a.z) {
        f = 0u;
        s = d.x;
    }
    return views.x + (f + select(0u, 1u, s < 0.0)) * LOCAL_MIPS;
}

// a view's entries in the table: entry (sx, sy) of view v is table.x + sy * n + sx
fn shadow_local(v: u32, px: i32, py: i32) -> u32 {
    let o = shadow_views[v].origin;
    let n = view_pages(v);
    let sx = u32(o.x + px) & (n - 1u);
    let sy = u32(o.y + py) & (n - 1u);
    return sy * n + sx;
}

// the table entry of window page (px, py) of view v
fn shadow_entry(v: u32, px: i32, py: i32) -> u32 {
    return shadow_views[v].table.x + shadow_local(v, px, py);
}

fn shadow_tag(v: u32, px: i32, py: i32) -> u32 {
    let o = shadow_views[v].origin;
    return (u32(o.x + px) & 0xffffu) | (u32(o.y + py) << 16u);
}

// the window page (px, py) of view v that its entry `local` (from table.x) stands for now
fn shadow_entry_page(v: u32, local: u32) -> vec2<i32> {
    let o = shadow_views[v].origin.xy;
    let n = i32(view_pages(v));
    let s = vec2<i32>(i32(local) % n, i32(local) / n);
    // the page of the window [o, o + n) congruent to s
    return ((s - o) % n + n) % n;
}

// a page's name in the draw list and the owner table: its view and its entry in the view
fn page_id(v: u32, local: u32) -> u32 {
    return (v << 16u) | local;
}

fn id_view(id: u32) -> u32 {
    return id >> 16u;
}

fn id_entry(id: u32) -> u32 {
    return shadow_views[id >> 16u].table.x + (id & 0xffffu);
}

// word of texel (x, y) of physical page `phys` in `shadow_map`
fn pool_word(phys: u32, x: u32, y: u32) -> u32 {
    return shadow.views.z + (phys << (2u * SHADOW_PAGE_SHIFT)) + (y << SHADOW_PAGE_SHIFT) + x;
}

// the hierarchical page mask (`shadow_hpm`): per view, mips of its n^2 .. 1 flags, a texel set
// where a page below is drawn this frame (the shadow views' culling tests bounds against it,
// as the main view's against the HZB); the finest mip's word is the drawn page's physical
// page + 1. View v's mask starts at word table.z.

fn hpm_mips(v: u32) -> u32 {
    return shadow_views[v].table.y + 1u;
}

fn hpm_index(v: u32, m: u32, x: i32, y: i32) -> u32 {
    // mips 0 .. m - 1 hold (4^(L+1) - 4^(L+1-m)) / 3 words, n = 2^L
    let l = shadow_views[v].table.y + 1u;
    let before = ((1u << (2u * l)) - (1u << (2u * (l - m)))) / 3u;
    return shadow_views[v].table.z + before + u32(y) * (view_pages(v) >> m) + u32(x);
}

// the window pages a world sphere covers in view v: (x0, y0, x1, y1), empty (x0 > x1) if none
fn shadow_page_rect(v: u32, s: vec4<f32>) -> vec4<i32> {
    let n = f32(view_pages(v));
    var lo: vec2<f32>;
    var hi: vec2<f32>;
    if view_is_face(v) {
        // perspective: the sphere's box in the face's axes, its corners projected (a box
        // reaching the near plane covers the window)
        let c = shadow_views[v].view_proj * vec4<f32>(s.xyz, 1.0);
        let a = shadow_views[v].texel.y * 2.0 / view_texels(v);  // NDC per unit at distance 1
        let w0 = c.w - s.w;
        if w0 <= shadow_views[v].texel.z {
            lo = vec2<f32>(0.0);
            hi = vec2<f32>(n - 1.0);
        } else {
            let w1 = c.w + s.w;
            let x = vec4<f32>(c.x - a * s.w, c.x + a * s.w, c.x - a * s.w, c.x + a * s.w)
                / vec4<f32>(w0, w0, w1, w1);
            let y = vec4<f32>(c.y - a * s.w, c.y + a * s.w, c.y - a * s.w, c.y + a * s.w)
                / vec4<f32>(w0, w0, w1, w1);
            let nx = vec2<f32>(min(min(x.x, x.y), min(x.z, x.w)), max(max(x.x, x.y), max(x.z, x.w)));
            let ny = vec2<f32>(min(min(y.x, y.y), min(y.z, y.w)), max(max(y.x, y.y), max(y.z, y.w)));
            // texel y points down: the largest NDC y is the smallest texel y
            let t0 = vec2<f32>(nx.x * 0.5 + 0.5, 0.5 - ny.y * 0.5) * n;
            let t1 = vec2<f32>(nx.y * 0.5 + 0.5, 0.5 - ny.x * 0.5) * n;
            lo = clamp(floor(t0), vec2<f32>(-1.0), vec2<f32>(n));
            hi = clamp(floor(t1), vec2<f32>(-1.0), vec2<f32>(n));
        }
    } else {
        let t = shadow_texel(v, s.xyz);
        let r = s.w * shadow_views[v].texel.y;
        lo = clamp(floor((t.xy - r) / f32(SHADOW_PAGE)), vec2<f32>(-1.0), vec2<f32>(n));
        hi = clamp(floor((t.xy + r) / f32(SHADOW_PAGE)), vec2<f32>(-1.0), vec2<f32>(n));
    }
    let a = max(vec2<i32>(lo), vec2<i32>(0));
    let b = min(vec2<i32>(hi), vec2<i32>(i32(n) - 1));
    return vec4<i32>(a, b);
}

// a face's stored depth (0 near .. 1 far, perspective) as a distance along its axis
fn face_distance(v: u32, depth: f32) -> f32 {
    let near = shadow_views[v].texel.z;
    let far = shadow_views[v].texel.w;
    return near * far / max(far - depth * (far - near), 1e-30);
}
