// Materials and textures, read from the scene's `materials` buffer (renderer.scene.material_data:
// a header, MATERIAL records, TEXTURE records, texels; layout in preprocess/tess/records.py).
// Textures are sampled by hand from the buffer, trilinear, repeating, with the mip chosen from
// the uv derivatives across one pixel: WebGPU has no bindless textures, and one storage buffer
// holds every texture of every asset whatever their sizes. sRGB texels are decoded before they
// are filtered, as a GPU's sRGB formats do. A texture's words are RGBA8 texels or Direct3D's
// BC1/BC3/BC4/BC5 blocks (`TEXTURE_FORMATS` in preprocess/tess/records.py), each texel decoded
// from its block as the texture unit of a GPU with `texture-compression-bc` does (one
// difference: a BC1 sRGB texel's interpolated codes are rounded to whole codes before the sRGB
// table). Needs the binding `materials: array<u32>` and shading.wgsl (colour conversions)
// included before it.

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
    offset: u32,  // first word of mip 0, in the whole buffer
    size: vec2<u32>,
    mips: u32,
    srgb: bool,
    format: u32,  // TEXTURE_FORMAT_*
    block_words: u32,  // words a 4 x 4 block (0: RGBA8, a word a texel)
}

fn texture_info(t: u32) -> TextureInfo {
    let base = materials[0] + t * TEXTURE_WORDS;
    let format = materials[base + TEXTURE_FORMAT];
    let small = format == TEXTURE_FORMAT_BC1 || format == TEXTURE_FORMAT_BC4;  // 8-byte blocks
    return TextureInfo(materials[1] + materials[base + TEXTURE_OFFSET],
                       vec2<u32>(materials[base + TEXTURE_WIDTH], materials[base + TEXTURE_HEIGHT]),
                       materials[base + TEXTURE_MIPS],
                       (materials[base + TEXTURE_FLAGS] & TEXTURE_SRGB) != 0u, format,
                       select(select(4u, 2u, small), 0u, format == TEXTURE_FORMAT_RGBA8));
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

// texel (x, y) of the mip whose words start at `first` (x, y wrapped already), linear
fn texel(tex: TextureInfo, first: u32, size: vec2<u32>, x: u32, y: u32) -> vec4<f32> {
    if tex.block_words != 0u {
        return block_texel(tex, first, size, x, y);
    }
    let w = materials[first + y * size.x + x];
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

// texel (x, y) of a block-compressed mip starting at word `first`, linear
fn block_texel(tex: TextureInfo, first: u32, size: vec2<u32>, x: u32, y: u32) -> vec4<f32> {
    let b = first + ((y >> 2u) * ((size.x + 3u) >> 2u) + (x >> 2u)) * tex.block_words;
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

// bilinear sample of one mip at uv (repeat); uv's origin is the lower left (v up, as trimesh
// and OpenGL have it), the texels' row 0 the top
fn sample_mip(tex: TextureInfo, lvl: u32, uv: vec2<f32>) -> vec4<f32> {
    var first = tex.offset;
    var size = tex.size;
    for (var i = 0u; i < lvl; i++) {
        first += mip_words(tex, size);
        size = max(size / 2u, vec2<u32>(1u));
    }
    let n = vec2<f32>(size);
    let st = vec2<f32>(uv.x, 1.0 - uv.y) * n - 0.5;
    let f = fract(st);
    // wrapped with float arithmetic: integer division is slow on CPU adapters
    let i0 = floor(st);
    let w0 = vec2<u32>(clamp(i0 - n * floor(i0 / n), vec2<f32>(0.0), n - 1.0));
    let x0 = w0.x;
    let y0 = w0.y;
    let x1 = select(x0 + 1u, 0u, x0 + 1u >= size.x);
    let y1 = select(y0 + 1u, 0u, y0 + 1u >= size.y);
    let a = mix(texel(tex, first, size, x0, y0), texel(tex, first, size, x1, y0), f.x);
    let b = mix(texel(tex, first, size, x0, y1), texel(tex, first, size, x1, y1), f.x);
    return mix(a, b, f.y);
}

// trilinear sample: the mip from the larger of the two uv footprints across one pixel, as a
// GPU's texture unit chooses it (isotropic)
fn sample_texture(t: u32, uv: vec2<f32>, duv_dx: vec2<f32>, duv_dy: vec2<f32>) -> vec4<f32> {
    let tex = texture_info(t);
    let sz = vec2<f32>(tex.size);
    let rho2 = max(dot(duv_dx * sz, duv_dx * sz), dot(duv_dy * sz, duv_dy * sz));
    let lod = clamp(0.5 * log2(max(rho2, 1e-12)), 0.0, f32(tex.mips - 1u));
    let l0 = u32(floor(lod));
    let l1 = min(l0 + 1u, tex.mips - 1u);
    let a = sample_mip(tex, l0, uv);
    if l1 == l0 {
        return a;
    }
    return mix(a, sample_mip(tex, l1, uv), lod - f32(l0));
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
