// Writing the visibility buffer. A pixel keeps the nearest fragment: with reversed Z the largest
// depth, so `atomicMax` on (depth bits << 32 | payload) where payload = visible index << 7 |
// triangle. Without 64-bit atomics (or when forced), two passes over the same clusters: the first
// keeps the largest depth in a u32 buffer, the second writes the payload of fragments whose depth
// equals it (atomicMax again, so ties resolve to the same payload as the 64-bit path).
// Needs the bindings `vis` (VIS64) or `vis_depth` and `vis_ids`.

override ID_PASS: bool = false;  // fallback only: false = depth pass, true = id pass

fn vis_write(pixel: u32, depth: f32, payload: u32) {
#ifdef VIS64
    atomicMax(&vis[pixel], (u64(bitcast<u32>(depth)) << 32u) | u64(payload));
#else
    if ID_PASS {
        if atomicLoad(&vis_depth[pixel]) == bitcast<u32>(depth) {
            atomicMax(&vis_ids[pixel], payload);
        }
    } else {
        atomicMax(&vis_depth[pixel], bitcast<u32>(depth));
    }
#endif
}
