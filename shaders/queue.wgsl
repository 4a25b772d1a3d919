// The culling queue: an entry is two atomic words, item + 1 then instance + 1, so that 0 means
// "not written yet" (a reader in another workgroup may see one word before the other). Pushing
// counts the entry as outstanding (unless the caller already did) before reserving its slot; an
// entry past the capacity is dropped, flagged, and no longer outstanding. Needs `frame`,
// `state` and `queue`.

// a queue item with this bit is a group part, else a BVH node
const PART_BIT: u32 = 0x80000000u;

fn push(item: u32, inst: u32, counted: bool) {
    if !counted {
        atomicAdd(&state[S_OUTSTANDING], 1u);
    }
    let slot = atomicAdd(&state[S_QUEUE_WRITE], 1u);
    if slot < frame.queue_capacity {
        atomicStore(&queue[2u * slot + 1u], inst + 1u);
        atomicStore(&queue[2u * slot], item + 1u);
    } else {
        atomicOr(&state[S_OVERFLOW], OVERFLOW_QUEUE);
        atomicSub(&state[S_OUTSTANDING], 1u);
    }
}
