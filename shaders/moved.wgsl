// The moved table (renderer/instances.py GpuInstances.moved_table): the instances moved since the
// previous frame. vec4 0: (count, 0, 0, 0); entry k, sorted by slot, at 1 + MOVED_VEC4S k:
// (slot, 0, 0, 0), the three transform rows of the previous frame, the three rows now.
// Needs the binding `moved: array<vec4<u32>>`.

fn moved_count() -> u32 {
    return moved[0].x;
}

fn moved_entry(k: u32) -> u32 {
    return 1u + MOVED_VEC4S * k;
}

// the entry of slot `s`, or moved_count() when it did not move (binary search)
fn moved_find(s: u32) -> u32 {
    var lo = 0u;
    var hi = moved_count();
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let key = moved[moved_entry(mid)].x;
        if key == s {
            return mid;
        }
        if key < s {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return moved_count();
}
