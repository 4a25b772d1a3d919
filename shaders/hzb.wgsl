// The hierarchical depth buffer: mip 0 holds, for each 2x2 block of pixels, the farthest depth
// (the smallest reversed-Z value; empty pixels are 0, infinitely far); each further mip the
// farthest of 2x2 texels of the one below. Texels past the edge of an odd-sized level take only
// the texels that exist. A dispatch writes up to three levels (`MIP` .. `MIP + LEVELS - 1`; MIP 0
// reads the visibility buffer, a further one the level below it): a lane owns one texel of the
// coarsest and the 2x2 and 4x4 blocks under it, so no lane waits for another (fewer dispatches:
// the encoding of a frame costs per call). Offsets and sizes come from the frame (frame.hzb_*).

#include "layout.wgsl"

override MIP: u32 = 0u;
override LEVELS: u32 = 3u;  // 1, 2 or 3
const PAST_EDGE: u32 = 0xffffffffu;  // a texel past the edge of its level: the identity of min

fn mip_width(k: u32) -> u32 {
    return (frame.hzb_size.x + (1u << k) - 1u) >> k;
}

fn mip_height(k: u32) -> u32 {
    return (frame.hzb_size.y + (1u << k) - 1u) >> k;
}

fn pixel_depth(x: u32, y: u32) -> u32 {
    let i = y * u32(frame.viewport.x) + x;
#ifdef VIS64
    return vis[i].y;  // the high word of depth << 32 | payload
#else
    return vis_depth[i];
#endif
}

// MIP - 1 (written so that the unused MIP = 0 case does not underflow)
override BELOW: u32 = max(MIP, 1u) - 1u;

// what a texel of level MIP takes: a pixel (MIP 0) or a texel of level MIP - 1, PAST_EDGE
// outside the image or the level
fn source(x: u32, y: u32) -> u32 {
    if MIP == 0u {
        if x < u32(frame.viewport.x) && y < u32(frame.viewport.y) {
            return pixel_depth(x, y);
        }
    } else if x < mip_width(BELOW) && y < mip_height(BELOW) {
        return hzb[frame.hzb_mips[BELOW / 4u][BELOW % 4u] + y * mip_width(BELOW) + x];
    }
    return PAST_EDGE;
}

fn store(k: u32, x: u32, y: u32, v: u32) {
    if x < mip_width(k) && y < mip_height(k) {
        hzb[frame.hzb_mips[k / 4u][k % 4u] + y * mip_width(k) + x] = v;
    }
}

@compute @workgroup_size(PIXEL_TILE, PIXEL_TILE)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = 1u << (LEVELS - 1u);  // side of this lane's block at level MIP
    // level MIP: an n x n block (row-major in t), PAST_EDGE where past the edge
    var t: array<u32, 16>;
    for (var j = 0u; j < n; j++) {
        for (var i = 0u; i < n; i++) {
            let x = gid.x * n + i;
            let y = gid.y * n + j;
            var far = PAST_EDGE;
            for (var k = 0u; k < 4u; k++) {
                far = min(far, source(2u * x + (k & 1u), 2u * y + (k >> 1u)));
            }
            store(MIP, x, y, far);
            t[j * 4u + i] = far;
        }
    }
    // the coarser levels, from the block below (a texel past the edge takes only PAST_EDGE)
    var m = n;
    for (var level = MIP + 1u; level < MIP + LEVELS; level++) {
        m = m / 2u;
        for (var j = 0u; j < m; j++) {
            for (var i = 0u; i < m; i++) {
                let far = min(min(t[2u * j * 4u + 2u * i], t[2u * j * 4u + 2u * i + 1u]),
                              min(t[(2u * j + 1u) * 4u + 2u * i],
                                  t[(2u * j + 1u) * 4u + 2u * i + 1u]));
                store(level, gid.x * m + i, gid.y * m + j, far);
                t[j * 4u + i] = far;  // rows j < m are read no more at this level
            }
        }
    }
}
