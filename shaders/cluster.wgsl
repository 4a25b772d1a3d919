// Reading clusters out of the page buffer: a visible cluster is (instance, page << SLOT_BITS |
// slot); its record sits at a fixed place in its page and its streams at the byte offsets the
// record gives (layout in preprocess/tess/records.py). Needs the bindings `frame` (its
// `page_words`: the scene's page size), `pages`, `instances`, `assets`.

fn cluster_base(cref: u32) -> u32 {
    return (cref >> SLOT_BITS) * frame.page_words + PAGE_HEADER_WORDS
        + (cref & ((1u << SLOT_BITS) - 1u)) * CLUSTER_WORDS;
}

fn page_start(cref: u32) -> u32 {
    return (cref >> SLOT_BITS) * frame.page_words;
}

fn rec_u(base: u32, field: u32) -> u32 {
    return pages[base + field];
}

fn rec_f(base: u32, field: u32) -> f32 {
    return bitcast<f32>(pages[base + field]);
}

fn rec_v4(base: u32, field: u32) -> vec4<f32> {
    return vec4<f32>(rec_f(base, field), rec_f(base, field + 1u), rec_f(base, field + 2u),
                     rec_f(base, field + 3u));
}

// byte b of the page starting at word `page`
fn page_byte(page: u32, b: u32) -> u32 {
    return (pages[page + (b >> 2u)] >> ((b & 3u) * 8u)) & 0xffu;
}

// 16-bit value at byte offset b (b even)
fn page_u16(page: u32, b: u32) -> u32 {
    return (pages[page + (b >> 2u)] >> ((b & 2u) * 8u)) & 0xffffu;
}

// what decoding a cluster's triangles and positions needs from its record, read once
struct ClusterStreams {
    page: u32,  // first word of the page
    indices: u32,  // byte offset of the index stream in the page
    positions: u32,  // byte offset of the position stream
    pmin: vec3<i32>,  // grid coordinates of the cluster's corner
    wide: bool,  // positions stored as 32-bit offsets (else 16-bit)
}

fn cluster_streams(page: u32, base: u32) -> ClusterStreams {
    return ClusterStreams(
        page, rec_u(base, CLUSTER_INDEX_OFFSET), rec_u(base, CLUSTER_POSITION_OFFSET),
        vec3<i32>(bitcast<i32>(rec_u(base, CLUSTER_POS_MIN)),
                  bitcast<i32>(rec_u(base, CLUSTER_POS_MIN + 1u)),
                  bitcast<i32>(rec_u(base, CLUSTER_POS_MIN + 2u))),
        (rec_u(base, CLUSTER_MODE) & MODE_POSITION_MASK) != 0u);
}

// local corner indices of triangle t
fn stream_triangle(s: ClusterStreams, t: u32) -> vec3<u32> {
    let o = s.indices + 3u * t;
    return vec3<u32>(page_byte(s.page, o), page_byte(s.page, o + 1u), page_byte(s.page, o + 2u));
}

// object-space position of local vertex v (exact grid coordinates times the power-of-two step)
fn stream_position(s: ClusterStreams, v: u32, step: f32) -> vec3<f32> {
    var off: vec3<u32>;
    if !s.wide {
        let b = s.positions + 6u * v;
        off = vec3<u32>(page_u16(s.page, b), page_u16(s.page, b + 2u), page_u16(s.page, b + 4u));
    } else {
        let w = s.page + (s.positions >> 2u) + 3u * v;
        off = vec3<u32>(pages[w], pages[w + 1u], pages[w + 2u]);
    }
    return vec3<f32>(s.pmin + bitcast<vec3<i32>>(off)) * step;
}

fn cluster_triangle(page: u32, base: u32, t: u32) -> vec3<u32> {
    return stream_triangle(cluster_streams(page, base), t);
}

fn cluster_position(page: u32, base: u32, v: u32, step: f32) -> vec3<f32> {
    return stream_position(cluster_streams(page, base), v, step);
}

fn cluster_normal(page: u32, base: u32, v: u32) -> vec3<f32> {
    let q = pages[page + (rec_u(base, CLUSTER_NORMAL_OFFSET) >> 2u) + v];
    let x = f32(bitcast<i32>(q << 16u) >> 16u) / 32767.0;
    let y = f32(bitcast<i32>(q) >> 16u) / 32767.0;
    let z = 1.0 - abs(x) - abs(y);
    let t = max(-z, 0.0);
    let n = vec3<f32>(x - select(-t, t, x >= 0.0), y - select(-t, t, y >= 0.0), z);
    return normalize(n);
}

// uv of local vertex v (MODE_HAS_UV): 16-bit unorm pairs mapped onto the asset's uv box, or
// two float32 (MODE_UV_FLOAT)
fn cluster_uv(page: u32, base: u32, v: u32, uv_box: vec4<f32>) -> vec2<f32> {
    let at = page + (rec_u(base, CLUSTER_UV_OFFSET) >> 2u);
    if (rec_u(base, CLUSTER_MODE) & MODE_UV_FLOAT) != 0u {
        return vec2<f32>(bitcast<f32>(pages[at + 2u * v]), bitcast<f32>(pages[at + 2u * v + 1u]));
    }
    let q = pages[at + v];
    let t = vec2<f32>(f32(q & 0xffffu), f32(q >> 16u)) / 65535.0;
    return uv_box.xy + t * (uv_box.zw - uv_box.xy);
}

// the RGBA8 word of local vertex v's colour (MODE_HAS_COLOR): right after the uvs, or the
// normals (RGB sRGB-encoded)
fn cluster_color_word(page: u32, base: u32, v: u32) -> u32 {
    let mode = rec_u(base, CLUSTER_MODE);
    let nv = rec_u(base, CLUSTER_VERTEX_COUNT);
    let uv_words = select(0u, select(1u, 2u, (mode & MODE_UV_FLOAT) != 0u),
                          (mode & MODE_HAS_UV) != 0u);
    let streams = 1u + uv_words;
    return pages[page + (rec_u(base, CLUSTER_NORMAL_OFFSET) >> 2u) + streams * nv + v];
}

// triangle t's byte of the material stream (MODE_HAS_MATERIAL): material | double-sided bit
fn material_byte(page: u32, base: u32, t: u32) -> u32 {
    let nt = rec_u(base, CLUSTER_TRIANGLE_COUNT);
    return page_byte(page, rec_u(base, CLUSTER_INDEX_OFFSET) + ((3u * nt + 3u) & ~3u) + t);
}

// the asset material of triangle t: the cluster's (mode bits) or its byte after the indices
fn cluster_material(page: u32, base: u32, t: u32) -> u32 {
    let mode = rec_u(base, CLUSTER_MODE);
    if (mode & MODE_HAS_MATERIAL) == 0u {
        return (mode >> MODE_MATERIAL_SHIFT) & 0xffu;
    }
    return material_byte(page, base, t) & ~MATERIAL_BYTE_DOUBLE_SIDED;
}

// whether triangle t's back face is drawn (its material is double-sided)
fn triangle_double_sided(page: u32, base: u32, t: u32) -> bool {
    let mode = rec_u(base, CLUSTER_MODE);
    if (mode & MODE_DOUBLE_SIDED) == 0u {
        return false;
    }
    return (mode & MODE_HAS_MATERIAL) == 0u
        || (material_byte(page, base, t) & MATERIAL_BYTE_DOUBLE_SIDED) != 0u;
}
