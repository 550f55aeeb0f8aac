//! Giving back the memory a burst grew: with thousands of locks on one
//! session, every request of one wave is in flight at once, and queues that
//! keep that high-water mark cost more per held lock than the lock itself.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use bytes::BytesMut;

/// Capacity (in elements or bytes) kept whatever the load: small enough to
/// be negligible, large enough that a steady load never reallocates.
const KEEP: usize = 1024;

/// Shrinks `q` to twice its length once it uses under a quarter of a
/// capacity above [`KEEP`]: amortised O(1) per pop, and a queue at its
/// high-water mark is never shrunk.
pub(crate) fn shrink_deque<T>(q: &mut VecDeque<T>) {
    if q.capacity() > KEEP && q.len() < q.capacity() / 4 {
        q.shrink_to((q.len() * 2).max(KEEP));
    }
}

/// Pops the front of a per-lock queue and frees its memory once it is
/// empty: a lock's queues are drained after every input, and thousands of
/// held locks each keeping an emptied queue's capacity (a few hundred bytes)
/// cost more than the allocation the next burst makes.
pub(crate) fn pop_front_freeing<T>(q: &mut VecDeque<T>) -> Option<T> {
    let front = q.pop_front();
    if q.is_empty() && q.capacity() != 0 {
        *q = VecDeque::new();
    }
    front
}

/// [`shrink_deque`] for a vector.
pub(crate) fn shrink_vec<T>(v: &mut Vec<T>) {
    if v.capacity() > KEEP && v.len() < v.capacity() / 4 {
        v.shrink_to((v.len() * 2).max(KEEP));
    }
}

/// Frees an empty buffer grown past 64 KiB (a burst's frames): for the
/// session's own send buffer, called once it is empty.
pub(crate) fn shrink_buf(buf: &mut BytesMut) {
    if buf.is_empty() && buf.capacity() > 64 * KEEP {
        *buf = BytesMut::new();
    }
}
