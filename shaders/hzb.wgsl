// The hierarchical depth buffer: mip 0 holds, for each 2x2 block of pixels, the farthest depth
// (the smallest reversed-Z value; empty pixels are 0, infinitely far); each further mip the
// farthest of 2x2 texels of the one below. Texels past the edge of an odd-sized level take only
// the texels that exist. One lane per texel; one dispatch per mip (`MIP`, 0 reads the
// visibility buffer). Offsets and sizes come from the frame (frame.hzb_*).

#include "layout.wgsl"

override MIP: u32 = 0u;

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

fn below(x: u32, y: u32) -> u32 {
    return hzb[frame.hzb_mips[BELOW / 4u][BELOW % 4u] + y * mip_width(BELOW) + x];
}

@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = mip_width(MIP);
    let h = mip_height(MIP);
    if gid.x >= w || gid.y >= h {
        return;
    }
    var far = 0xffffffffu;
    if MIP == 0u {
        let sw = u32(frame.viewport.x);
        let sh = u32(frame.viewport.y);
        for (var k = 0u; k < 4u; k++) {
            let x = 2u * gid.x + (k & 1u);
            let y = 2u * gid.y + (k >> 1u);
            if x < sw && y < sh {
                far = min(far, pixel_depth(x, y));
            }
        }
    } else {
        let bw = mip_width(BELOW);
        let bh = mip_height(BELOW);
        for (var k = 0u; k < 4u; k++) {
            let x = 2u * gid.x + (k & 1u);
            let y = 2u * gid.y + (k >> 1u);
            if x < bw && y < bh {
                far = min(far, below(x, y));
            }
        }
    }
    hzb[frame.hzb_mips[MIP / 4u][MIP % 4u] + gid.y * w + gid.x] = far;
}
