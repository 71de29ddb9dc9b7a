//! How the process's allocator gives memory back. A request of several MiB is read into
//! buffers of that size; glibc's malloc serves such sizes from `mmap` at first, but raises its
//! threshold after the first few are freed, and from then on keeps them in its heap, where a
//! flood of large requests leaves hundreds of MB resident long after it ended. A fixed
//! threshold keeps every large buffer in `mmap`, returned to the system when freed.

/// Allocations from this size up are mapped on their own and unmapped when freed.
pub const LARGE_ALLOCATION_BYTES: usize = 256 << 10;

/// Fixes the allocator's mapping threshold at [`LARGE_ALLOCATION_BYTES`] (glibc only; other
/// allocators are left as they are). Process-wide, so for a program that is an evaluator
/// (`ale serve`) to call once, at start; not called by [`super::start_with`], as it changes
/// the cost of every large allocation in the program.
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator tuning; any value is accepted or refused.
        let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_ALLOCATION_BYTES as i32) };
        if set != 1 {
            tracing::warn!(
                "cannot fix the allocator's mmap threshold; large requests may leave memory resident"
            );
        }
    }
}
