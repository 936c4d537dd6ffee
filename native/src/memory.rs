//! Giving back to the OS the memory the C allocator holds free after a burst of load.
//!
//! glibc's malloc keeps what the process freed: pages of its heaps stay resident (counted as the
//! process's anonymous memory) until the top of a heap is free past `M_TRIM_THRESHOLD`, which a
//! heap fragmented by a burst rarely is. `malloc_trim(0)` walks every arena's free chunks and
//! hands their whole pages back (`madvise(MADV_DONTNEED)`), and shrinks the main heap's top. It
//! takes the arenas' locks while it walks them, so the service calls it only once it has gone
//! quiet after a load (`src/memory/give-back.ts`), never on a request's path.
//!
//! Other C libraries (musl, macOS) have no such call: there it does nothing and says so.

/// Hand the allocator's free pages back to the OS. True when glibc released some (it returns 1
/// when any page went back), false when there was nothing to release or the C library has no
/// such call.
pub fn trim_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: no pointers; malloc_trim locks each arena itself and is thread-safe.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Whether this build can give memory back (glibc): false where `trim_free_memory` does nothing.
pub const CAN_TRIM: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

#[cfg(test)]
mod tests {
    use super::*;

    /// Free chunks held below a live allocation cannot go back by themselves (the heap's top is
    /// not free); the trim hands their pages back. It walks every arena, so whichever one the
    /// thread's allocations came from, 32 MiB of free 16 KiB chunks are in its bins.
    #[test]
    fn trim_gives_back_pages_freed_below_a_live_allocation() {
        if !CAN_TRIM {
            assert!(!trim_free_memory());
            return;
        }
        std::thread::spawn(|| {
            // 16 KiB chunks: above the thread cache's sizes and below the mmap threshold, so
            // they come from the arena's heap and go back to its bins when freed.
            let blocks: Vec<Vec<u8>> = (0..2048).map(|i| vec![i as u8; 16 * 1024]).collect();
            let pin = vec![1u8; 16 * 1024];
            drop(blocks);
            assert!(
                trim_free_memory(),
                "32 MiB freed below a live block: some pages must go back"
            );
            assert_eq!(pin[0], 1);
        })
        .join()
        .unwrap();
    }
}
