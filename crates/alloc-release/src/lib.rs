//! `release_freed`: the one call into mimalloc gridd makes besides allocating, kept in its own
//! crate so that gridd itself keeps `unsafe_code = "forbid"`.
//!
//! mimalloc returns the pages a thread freed to the OS only on a later allocation by that same
//! thread (its delayed purge). A thread that freed a lot and then sleeps (a snapshot writer
//! after its image is written) keeps them resident; calling `release_freed` on it at that point
//! gives them back.

/// Frees the calling thread's empty pages and returns its freed memory to the OS now (mimalloc's
/// `mi_collect(true)`). Costs a walk over the thread's heap: call it after large frees, not per
/// request.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointer and has no precondition; mimalloc documents it as
    // callable from any thread at any time, and it only acts on the calling thread's heap and
    // on memory no thread owns.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn releasing_after_large_frees_leaves_the_allocator_usable() {
        let blocks: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 1 << 20]).collect();
        drop(blocks);
        super::release_freed();
        let again = vec![7u8; 1 << 20];
        assert!(again.iter().all(|&b| b == 7));
    }
}
