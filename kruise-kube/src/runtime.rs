//! The tokio runtime kruise-manager runs on.
//!
//! [`runtime`] builds the multi-thread tokio runtime with [`warm_thread_heap`] run on each of
//! its threads as it starts.
//!
//! Why: glibc gives each thread its own heap (an "arena"), and the first time that heap reaches
//! a size it grows it by just what the allocation needs (a page, for small ones), with an
//! `mprotect` call each time. A scale-out of 1,000 pods grows the manager's heaps by about
//! 15 MiB at once (its pod cache, the creations in flight), and those calls took 10–15% of its
//! CPU during the scale-out. Warming a thread's heap once at start moves that cost to the
//! start (about 1.6 ms per thread): the memory is given back at once (glibc returns freed pages
//! at the top of a heap with `MADV_DONTNEED`, which keeps them mapped), so the resident size
//! does not grow. Where glibc unmaps them instead (`vm.overcommit_memory` 2) or under another
//! allocator, it is a few allocations and frees, and changes nothing.

/// How much of each runtime thread's heap [`runtime`] warms: above the 15 MiB a scale-out of
/// 1,000 pods grows the manager's heaps by, and within the 64 MiB glibc reserves per heap.
pub const THREAD_HEAP_WARMUP: usize = 32 << 20;

/// Blocks of this size stay below glibc's threshold for serving an allocation from its own
/// `mmap` (128 KiB), so they come from the thread's heap.
const BLOCK: usize = 64 << 10;

/// Allocates `bytes` on the calling thread's heap in blocks of 64 KiB, touching one byte of
/// each, then frees them.
pub fn warm_thread_heap(bytes: usize) {
    let blocks: Vec<Vec<u8>> = (0..bytes / BLOCK)
        .map(|_| {
            let mut block = Vec::with_capacity(BLOCK);
            block.push(0);
            block
        })
        .collect();
    // Kept until here, so that no block is freed (and reused) before the last is allocated.
    std::hint::black_box(&blocks);
}

/// A multi-thread tokio runtime (all features) whose threads warm their heaps as they start
/// ([`warm_thread_heap`] with [`THREAD_HEAP_WARMUP`]).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(|| warm_thread_heap(THREAD_HEAP_WARMUP))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_with_warmed_threads_runs_tasks() {
        let runtime = runtime().expect("runtime");
        let sum = runtime.block_on(async {
            let tasks: Vec<_> = (0..8u64).map(|i| tokio::spawn(async move { i * 2 })).collect();
            let mut sum = 0;
            for task in tasks {
                sum += task.await.expect("task");
            }
            sum
        });
        assert_eq!(sum, 56);
    }
}
