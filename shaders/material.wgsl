// Materials and textures, read from the scene's `materials` buffer (laid out by
// renderer/texture_pool.py: a header, MATERIAL records, GPU_TEXTURE records, the tile table and
// stamps, the mip tails, the tile pool; renderer/layout.py says the header). Textures are sampled
// by hand from the buffer, trilinear, repeating, with the mip chosen from the uv derivatives
// across one pixel: WebGPU has no bindless textures, and one storage buffer holds every texture
// of every asset whatever their sizes. A mip above a texture's tail is read through its tiles
// (16 KiB each, in the pool where resident); a mip whose tiles under a sample are not all
// resident gives way to the finest coarser one whose are (the tail at worst). sRGB texels are
// decoded before they are filtered, as a GPU's sRGB formats do. A texture's words are RGBA8
// texels or Direct3D's BC1/BC3/BC4/BC5 blocks (`TEXTURE_FORMATS` in preprocess/tess/records.py),
// each texel decoded from its block as the texture unit of a GPU with `texture-compression-bc`
// does (one difference: a BC1 sRGB texel's interpolated codes are rounded to whole codes before
// the sRGB table). Needs the binding `materials: array<u32>` (read-write, and the `frame`
// uniform, with TEXTURE_FEEDBACK: the BasePass stamps the tiles it wants) and shading.wgsl
// (colour conversions) included before it.

struct MaterialInfo {
    base_color: vec4<f32>,
    emissive: vec3<f32>,
    alpha_cutoff: f32,
    metallic: f32,
    roughness: f32,
    normal_scale: f32,
    occlusion_strength: f32,
    flags: u32,
}

fn material_word(m: u32, field: u32) -> u32 {
    return materials[MATERIALS_HEADER_WORDS + m * MATERIAL_WORDS + field];
}

fn material_f(m: u32, field: u32) -> f32 {
    return bitcast<f32>(material_word(m, field));
}

fn material_info(m: u32) -> MaterialInfo {
    return MaterialInfo(
        vec4<f32>(material_f(m, MATERIAL_BASE_COLOR), material_f(m, MATERIAL_BASE_COLOR + 1u),
                  material_f(m, MATERIAL_BASE_COLOR + 2u), material_f(m, MATERIAL_BASE_COLOR + 3u)),
        vec3<f32>(material_f(m, MATERIAL_EMISSIVE), material_f(m, MATERIAL_EMISSIVE + 1u),
                  material_f(m, MATERIAL_EMISSIVE + 2u)),
        material_f(m, MATERIAL_ALPHA_CUTOFF), material_f(m, MATERIAL_METALLIC),
        material_f(m, MATERIAL_ROUGHNESS), material_f(m, MATERIAL_NORMAL_SCALE),
        material_f(m, MATERIAL_OCCLUSION_STRENGTH), material_word(m, MATERIAL_FLAGS));
}

struct TextureInfo {
    tail: u32,  // the word of the tail's first mip in the buffer
    size: vec2<u32>,
    mips: u32,
    srgb: bool,
    format: u32,  // TEXTURE_FORMAT_*
    block_words: u32,  // words a 4 x 4 block (0: RGBA8, a word a texel)
    tail_mip: u32,  // the first mip of the tail (whole, always resident)
    table: u32,  // the word of mip 0's first tile in the tile table
    shift: vec2<u32>,  // log2 of a tile's width and height in texels (texture_pool.tile_shift)
}

fn texture_info(t: u32) -> TextureInfo {
    let base = materials[MATERIALS_TEXTURES] + t * TEXTURE_WORDS;
    let format = materials[base + TEXTURE_FORMAT];
    let small = format == TEXTURE_FORMAT_BC1 || format == TEXTURE_FORMAT_BC4;  // 8-byte blocks
    let rgba8 = format == TEXTURE_FORMAT_RGBA8;
    return TextureInfo(materials[base + TEXTURE_TAIL],
                       vec2<u32>(materials[base + TEXTURE_WIDTH], materials[base + TEXTURE_HEIGHT]),
                       materials[base + TEXTURE_MIPS],
                       (materials[base + TEXTURE_FLAGS] & TEXTURE_SRGB) != 0u, format,
                       select(select(4u, 2u, small), 0u, rgba8),
                       materials[base + TEXTURE_TAIL_MIP], materials[base + TEXTURE_TABLE],
                       select(vec2<u32>(select(7u, 8u, small), 7u), vec2<u32>(6u), rgba8));
}

// words of one mip of `size` texels
fn mip_words(tex: TextureInfo, size: vec2<u32>) -> u32 {
    if tex.block_words == 0u {
        return size.x * size.y;
    }
    return tex.block_words * ((size.x + 3u) >> 2u) * ((size.y + 3u) >> 2u);
}

// the linear value of an 8-bit sRGB code, from the table in the buffer's header
fn srgb_code(code: u32) -> f32 {
    return bitcast<f32>(materials[SRGB_TABLE + code]);
}

// texel (x, y) of the texels whose words start at `first`, `row` texels a row (a tile's width,
// or a tail mip's), linear
fn texel(tex: TextureInfo, first: u32, row: u32, x: u32, y: u32) -> vec4<f32> {
    if tex.block_words != 0u {
        return block_texel(tex, first, row, x, y);
    }
    let w = materials[first + y * row + x];
    if tex.srgb {
        return vec4<f32>(srgb_code(w & 0xffu), srgb_code((w >> 8u) & 0xffu),
                         srgb_code((w >> 16u) & 0xffu), f32(w >> 24u) / 255.0);
    }
    return unpack_rgba8(w);
}

// an RGB565 endpoint as 8-bit codes (the top bits repeated below, as the formats define)
fn rgb565(c: u32) -> vec3<f32> {
    let r = (c >> 11u) & 31u;
    let g = (c >> 5u) & 63u;
    let b = c & 31u;
    return vec3<f32>(f32((r << 3u) | (r >> 2u)), f32((g << 2u) | (g >> 4u)),
                     f32((b << 3u) | (b >> 2u)));
}

// texel i (row-major in its block) of a BC1 colour block (words w0, w1): RGB in 8-bit code
// units, alpha 0 or 1. `punch`: BC1's rule (colour0 <= colour1: three colours and transparent
// black); BC3's colour half always has four colours
fn bc1_texel(w0: u32, w1: u32, i: u32, punch: bool) -> vec4<f32> {
    let c0 = w0 & 0xffffu;
    let c1 = w0 >> 16u;
    let k = (w1 >> (2u * i)) & 3u;
    let four = c0 > c1 || !punch;
    // the share of colour1: 0, 1, then 1/3 and 2/3 (four colours) or 1/2 and transparent
    let third = select(2.0 / 3.0, 1.0 / 3.0, k == 2u);
    let t = select(select(0.5, third, four), f32(k), k < 2u);
    let rgb = mix(rgb565(c0), rgb565(c1), t);
    return select(vec4<f32>(rgb, 1.0), vec4<f32>(0.0), !four && k == 3u);
}

// texel i of a BC4 block (words w0, w1), 0..1: two 8-bit endpoints and 3-bit indices from bit
// 16 (eight values between them, or six and the ends 0 and 1 when red0 <= red1)
fn bc4_texel(w0: u32, w1: u32, i: u32) -> f32 {
    let r0 = f32(w0 & 0xffu);
    let r1 = f32((w0 >> 8u) & 0xffu);
    let p = 16u + 3u * i;  // 16..61: in w0, across both words, or in w1
    let bits = select((w0 >> (p & 31u)) | (w1 << ((32u - p) & 31u)), w1 >> ((p - 32u) & 31u),
                      p >= 32u);
    let k = bits & 7u;
    let eight = r0 > r1;
    let share = f32(max(k, 1u) - 1u) / select(5.0, 7.0, eight);
    var v = select(mix(r0, r1, share), select(r0, r1, k == 1u), k < 2u) / 255.0;
    if !eight && k >= 6u {
        v = f32(k - 6u);  // 6: 0, 7: 1
    }
    return v;
}

// texel (x, y) of block-compressed texels starting at word `first`, `row` texels a row, linear
fn block_texel(tex: TextureInfo, first: u32, row: u32, x: u32, y: u32) -> vec4<f32> {
    let b = first + ((y >> 2u) * ((row + 3u) >> 2u) + (x >> 2u)) * tex.block_words;
    let i = ((y & 3u) << 2u) | (x & 3u);
    let w0 = materials[b];
    let w1 = materials[b + 1u];
    if tex.format == TEXTURE_FORMAT_BC1 || tex.format == TEXTURE_FORMAT_BC3 {
        let bc3 = tex.format == TEXTURE_FORMAT_BC3;
        // BC3: the alpha block (BC4's) first, then the colour block
        let c = bc1_texel(select(w0, materials[b + 2u], bc3), select(w1, materials[b + 3u], bc3),
                          i, !bc3);
        let a = select(c.a, bc4_texel(w0, w1, i), bc3);
        if tex.srgb {
            let code = vec3<u32>(round(c.rgb));
            return vec4<f32>(srgb_code(code.x), srgb_code(code.y), srgb_code(code.z), a);
        }
        return vec4<f32>(c.rgb / 255.0, a);
    }
    let r = bc4_texel(w0, w1, i);
    if tex.format == TEXTURE_FORMAT_BC4 {
        return vec4<f32>(r, r, r, 1.0);
    }
    let g = bc4_texel(materials[b + 2u], materials[b + 3u], i);
    if tex.format == TEXTURE_FORMAT_BC5_NORMAL {  // z: the rest of a unit vector
        let n = vec2<f32>(r, g) * 2.0 - 1.0;
        return vec4<f32>(r, g, 0.5 + 0.5 * sqrt(max(1.0 - dot(n, n), 0.0)), 1.0);
    }
    return vec4<f32>(0.0, r, g, 1.0);  // BC5_GB: a metallic-roughness texture's G and B
}

// Where the texels of mip `lvl` of a texture are: a tail mip's first word (`words.x`, and
// `row`, its width), or the first words of the tiles of a bilinear footprint's four texels
// (x0 y0, x1 y0, x0 y1, x1 y1; TILE_MISSING where not resident), `row` a tile's width
struct MipWords {
    words: vec4<u32>,
    row: u32,
    tiled: bool,
}

fn mip_size(tex: TextureInfo, lvl: u32) -> vec2<u32> {
    return max(tex.size >> vec2<u32>(lvl), vec2<u32>(1u));
}

// mip lvl's (< tex.tail_mip) first tile-table word and tiles a row
fn level_tiles(tex: TextureInfo, lvl: u32) -> vec2<u32> {
    var e = tex.table;
    let round = (vec2<u32>(1u) << tex.shift) - 1u;
    for (var i = 0u; i < lvl; i++) {
        let n = (mip_size(tex, i) + round) >> tex.shift;
        e += n.x * n.y;
    }
    return vec2<u32>(e, (mip_size(tex, lvl).x + round.x) >> tex.shift.x);
}

// the words of texels x (x0, x1) by y (y0, y1) of mip lvl. `stamp`: (streaming) the BasePass
// marks the tiles as wanted by this frame (TEXTURE_FEEDBACK; renderer/texture_pool.py)
fn mip_words_at(tex: TextureInfo, lvl: u32, x: vec2<u32>, y: vec2<u32>, stamp: bool
                ) -> MipWords {
    if lvl >= tex.tail_mip {
        var first = tex.tail;
        for (var i = tex.tail_mip; i < lvl; i++) {
            first += mip_words(tex, mip_size(tex, i));
        }
        return MipWords(vec4<u32>(first), mip_size(tex, lvl).x, false);
    }
    let tx = x >> vec2<u32>(tex.shift.x);
    let ty = y >> vec2<u32>(tex.shift.y);
    let lt = level_tiles(tex, lvl);
    let r0 = lt.x + ty.x * lt.y;
    let r1 = lt.x + ty.y * lt.y;
    let e = vec4<u32>(r0 + tx.x, r0 + tx.y, r1 + tx.x, r1 + tx.y);
#ifdef TEXTURE_FEEDBACK
    if stamp && materials[MATERIALS_STREAMING] != 0u {
        let delta = materials[MATERIALS_STAMP_DELTA];
        let tag = frame.frame_index + 1u;
        materials[e.x + delta] = tag;
        if e.y != e.x {
            materials[e.y + delta] = tag;
        }
        if e.z != e.x {
            materials[e.z + delta] = tag;
            materials[e.w + delta] = tag;  // (e.z again where e.y is e.x)
        }
    }
#endif
    return MipWords(vec4<u32>(materials[e.x], materials[e.y], materials[e.z], materials[e.w]),
                    1u << tex.shift.x, true);
}

// A bilinear footprint in mip `lvl`: its texels x (x0, x1) by y (y0, y1), the filter's weights
// toward x1 and y1, and where their words are (`mip_words_at`)
struct Footprint {
    m: MipWords,
    x: vec2<u32>,
    y: vec2<u32>,
    f: vec2<f32>,
    lvl: u32,
}

#ifdef HW_TILES
// Texel (x, y) of the tile in `slot` of its format's pool texture (texture_pool.hw_place),
// decoded by the texture unit (textureLoad of BC blocks: `texture-compression-bc`), then read
// as the buffer's decoder reads it (`block_texel`: sRGB codes through the table, BC4 as grey,
// BC5's normal z or metallic-roughness G and B). Needs the bindings tiles_rgba8, tiles_bc1,
// tiles_bc3, tiles_bc4, tiles_bc5 (texture_2d_array<f32>).
fn hw_texel(tex: TextureInfo, slot: u32, x: u32, y: u32) -> vec4<f32> {
    let f = tex.format;
    var c = 0u;
    if f == TEXTURE_FORMAT_BC1 {
        c = 1u;
    } else if f == TEXTURE_FORMAT_BC3 {
        c = 2u;
    } else if f == TEXTURE_FORMAT_BC4 {
        c = 3u;
    } else if f == TEXTURE_FORMAT_BC5_NORMAL || f == TEXTURE_FORMAT_BC5_GB {
        c = 4u;
    }
    let rows = materials[MATERIALS_TILE_ROWS + c];  // log2
    let layer = i32(slot >> (rows + 4u));
    let at = slot & ((16u << rows) - 1u);
    let p = vec2<i32>(vec2<u32>(((at & 15u) << tex.shift.x) | x, ((at >> 4u) << tex.shift.y) | y));
    var v = vec4<f32>(0.0);
    switch c {
        case 0u: { v = textureLoad(tiles_rgba8, p, layer, 0); }
        case 1u: { v = textureLoad(tiles_bc1, p, layer, 0); }
        case 2u: { v = textureLoad(tiles_bc3, p, layer, 0); }
        case 3u: { v = textureLoad(tiles_bc4, p, layer, 0); }
        default: { v = textureLoad(tiles_bc5, p, layer, 0); }
    }
    if c == 3u {
        return vec4<f32>(v.rrr, 1.0);
    }
    if f == TEXTURE_FORMAT_BC5_NORMAL {
        let n = v.rg * 2.0 - 1.0;
        return vec4<f32>(v.rg, 0.5 + 0.5 * sqrt(max(1.0 - dot(n, n), 0.0)), 1.0);
    }
    if f == TEXTURE_FORMAT_BC5_GB {
        return vec4<f32>(0.0, v.rg, 1.0);
    }
    if tex.srgb {
        let code = vec3<u32>(round(v.rgb * 255.0));
        return vec4<f32>(srgb_code(code.x), srgb_code(code.y), srgb_code(code.z), v.a);
    }
    return v;
}
#endif

// texel `tap` of a footprint (0: x0 y0, 1: x1 y0, 2: x0 y1, 3: x1 y1), linear
fn tap_texel(tex: TextureInfo, fp: Footprint, tap: u32) -> vec4<f32> {
    let x = select(fp.x.x, fp.x.y, (tap & 1u) != 0u);
    let y = select(fp.y.x, fp.y.y, (tap & 2u) != 0u);
    if !fp.m.tiled {
        return texel(tex, fp.m.words.x, fp.m.row, x, y);
    }
    let mask = (vec2<u32>(1u) << tex.shift) - 1u;
#ifdef HW_TILES
    return hw_texel(tex, fp.m.words[tap], x & mask.x, y & mask.y);
#else
    return texel(tex, fp.m.words[tap], fp.m.row, x & mask.x, y & mask.y);
#endif
}

// the footprint at uv (repeat) in mip lvl; uv's origin is the lower left (v up, as trimesh and
// OpenGL have it), the texels' row 0 the top
fn footprint(tex: TextureInfo, lvl: u32, uv: vec2<f32>, stamp: bool) -> Footprint {
    let size = mip_size(tex, lvl);
    let n = vec2<f32>(size);
    let st = vec2<f32>(uv.x, 1.0 - uv.y) * n - 0.5;
    // wrapped with float arithmetic: integer division is slow on CPU adapters
    let i0 = floor(st);
    let w0 = vec2<u32>(clamp(i0 - n * floor(i0 / n), vec2<f32>(0.0), n - 1.0));
    let x = vec2<u32>(w0.x, select(w0.x + 1u, 0u, w0.x + 1u >= size.x));
    let y = vec2<u32>(w0.y, select(w0.y + 1u, 0u, w0.y + 1u >= size.y));
    return Footprint(mip_words_at(tex, lvl, x, y, stamp), x, y, fract(st), lvl);
}

// the footprint in the finest mip from `lvl` whose tiles under it are all resident (the tail's
// always are), stamping the tiles of the mips up to `wanted` (the BasePass asks for those)
fn resident_footprint(tex: TextureInfo, lvl: u32, uv: vec2<f32>, wanted: u32) -> Footprint {
    var fp = footprint(tex, lvl, uv, true);
    for (var k = lvl + 1u; k < tex.mips && any(fp.m.words == vec4<u32>(TILE_MISSING)); k++) {
        fp = footprint(tex, k, uv, k <= wanted);
    }
    return fp;
}

// trilinear sample: the mip from the larger of the two uv footprints across one pixel, as a
// GPU's texture unit chooses it (isotropic); where a wanted tile is not resident, the finest
// coarser mip whose tiles are (bilinear, no blend). One texel fetch in a loop over the eight
// taps, not eight inlined: a CPU adapter (lavapipe) pays for the code's size on every pixel
fn sample_texture(t: u32, uv: vec2<f32>, duv_dx: vec2<f32>, duv_dy: vec2<f32>) -> vec4<f32> {
    let tex = texture_info(t);
    let sz = vec2<f32>(tex.size);
    let rho2 = max(dot(duv_dx * sz, duv_dx * sz), dot(duv_dy * sz, duv_dy * sz));
    let lod = clamp(0.5 * log2(max(rho2, 1e-12)), 0.0, f32(tex.mips - 1u));
    let l0 = u32(floor(lod));
    let l1 = min(l0 + 1u, tex.mips - 1u);
    let a = resident_footprint(tex, l0, uv, l1);
    var b = a;
    var blend = 0.0;
    var taps = 4u;
    if l1 != l0 && a.lvl == l0 {
        b = resident_footprint(tex, l1, uv, l1);
        blend = lod - f32(l0);
        taps = 8u;
    }
    var sum = vec4<f32>(0.0);
    for (var i = 0u; i < taps; i++) {
        var fp = a;
        var w = 1.0 - blend;
        if i >= 4u {
            fp = b;
            w = blend;
        }
        let tap = i & 3u;
        let f = select(1.0 - fp.f, fp.f, vec2<bool>((tap & 1u) != 0u, (tap & 2u) != 0u));
        sum += w * f.x * f.y * tap_texel(tex, fp, tap);
    }
    return sum;
}

// the textures of material m at uv, in the order of the record's texture fields (base colour,
// metallic-roughness, normal, emissive, occlusion), white where it has none
struct MaterialTexels {
    t: array<vec4<f32>, 5>,
}

// A loop over the textures the material has, no more, with no dynamic indexing: a CPU adapter
// (lavapipe) runs both sides of a divergent `if` with masked lanes and keeps dynamically
// indexed arrays in memory, so five `if present { sample }` cost five samples on every pixel,
// textured or not; a loop whose lanes all start done costs nothing.
fn material_textures(m: u32, uv: vec2<f32>, duv_dx: vec2<f32>, duv_dy: vec2<f32>
                     ) -> MaterialTexels {
    var present = 0u;
    for (var i = 0u; i < 5u; i++) {
        present |= select(0u, 1u << i, material_word(m, MATERIAL_BASE_COLOR_TEXTURE + i)
                                      != NO_TEXTURE);
    }
    var t0 = vec4<f32>(1.0);
    var t1 = vec4<f32>(1.0);
    var t2 = vec4<f32>(1.0);
    var t3 = vec4<f32>(1.0);
    var t4 = vec4<f32>(1.0);
    while present != 0u {
        let i = firstTrailingBit(present);
        present &= present - 1u;
        let s = sample_texture(material_word(m, MATERIAL_BASE_COLOR_TEXTURE + i), uv, duv_dx,
                               duv_dy);
        t0 = select(t0, s, i == 0u);
        t1 = select(t1, s, i == 1u);
        t2 = select(t2, s, i == 2u);
        t3 = select(t3, s, i == 3u);
        t4 = select(t4, s, i == 4u);
    }
    return MaterialTexels(array<vec4<f32>, 5>(t0, t1, t2, t3, t4));
}
