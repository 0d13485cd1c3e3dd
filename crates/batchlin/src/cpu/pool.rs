//! The CPU backends' worker threads: a rayon pool batchlin owns, rebuilt in a process
//! forked from one that had built it (see `crate::fork`: the parent's threads do not
//! exist in the child, and waiting on them would hang). Building a fresh pool in the
//! child, rather than running its calls on one thread, keeps a long-lived forked worker
//! (a pre-fork server, a data-loader process) as fast as its parent.
//!
//! A call made from inside a rayon pool (a Rust caller's own) runs on that pool, as
//! before. Where no thread can be started (an address-space limit, a thread limit) the
//! calls run on the calling thread: slower, but an answer rather than an abort.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicPtr, Ordering};

struct Slot {
    generation: usize,
    pool: ThreadPool,
}

/// The current pool, leaked: a parent's pool is never dropped in a child.
static CURRENT: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());

/// This process's pool, built on first use (and again after a fork); None where its
/// threads could not be started.
fn pool() -> Option<&'static ThreadPool> {
    let generation = crate::fork::generation();
    let cur = CURRENT.load(Ordering::Acquire);
    // SAFETY: slots are leaked, never freed.
    if let Some(slot) = unsafe { cur.as_ref() } {
        if slot.generation == generation {
            return Some(&slot.pool);
        }
    }
    let pool = ThreadPoolBuilder::new()
        .thread_name(|i| format!("batchlin-{i}"))
        .build()
        .ok()?;
    let slot = Box::into_raw(Box::new(Slot { generation, pool }));
    match CURRENT.compare_exchange(cur, slot, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just leaked, never freed.
        Ok(_) => Some(unsafe { &(*slot).pool }),
        Err(other) => {
            // Another thread built one first: ours is this process's, safe to drop.
            // SAFETY: `slot` was never published.
            drop(unsafe { Box::from_raw(slot) });
            // SAFETY: slots are leaked, never freed.
            match unsafe { other.as_ref() } {
                Some(s) if s.generation == generation => Some(&s.pool),
                _ => None,
            }
        }
    }
}

/// The threads a parallel CPU call gets: the caller's rayon pool inside one, else
/// batchlin's; 1 where no pool could be built.
pub(crate) fn threads() -> usize {
    if rayon::current_thread_index().is_some() {
        rayon::current_num_threads()
    } else {
        pool().map_or(1, |p| p.current_num_threads())
    }
}

/// Run `f` where rayon's parallel iterators and faer's `Par::rayon` use the threads
/// `threads` counts. Callers run sequentially when `threads()` is 1 (no pool: `f` runs
/// here, and a parallel iterator there would reach rayon's global pool).
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    match pool() {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Copies below this many bytes go on the calling thread: waking the pool costs more.
const PARALLEL_COPY_MIN: usize = 1 << 20;

/// `dst.copy_from_slice(src)` over the pool's threads where large: the staged copies of
/// host data to and from a GPU (into and out of its pinned buffer), which one thread
/// does at about 11 GB/s on the H200 machine (2026-12-05, `batchlin tune`'s copies.csv:
/// staged 9.3 GB/s with the DMA, registered memory 55 GB/s).
pub(crate) fn copy(dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    assert_eq!(dst.len(), src.len(), "pool::copy of unequal lengths");
    let parts = threads();
    if src.len() < PARALLEL_COPY_MIN || parts < 2 {
        dst.copy_from_slice(src);
        return;
    }
    // A piece a thread, in whole 4 KiB pages.
    let piece = src.len().div_ceil(parts).div_ceil(4096) * 4096;
    install(|| {
        dst.par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, s)| d.copy_from_slice(s));
    });
}

#[cfg(test)]
mod tests {
    /// Every byte arrives, at sizes around the threshold and the pieces' page rounding,
    /// from and to offsets that are not page-aligned.
    #[test]
    fn parallel_copy_moves_every_byte() {
        for len in [
            0,
            1,
            4095,
            super::PARALLEL_COPY_MIN - 1,
            super::PARALLEL_COPY_MIN,
            (3 << 20) + 7,
        ] {
            let src: Vec<u8> = (0..len + 3).map(|i| (i * 31 % 251) as u8).collect();
            let mut dst = vec![0u8; len + 5];
            super::copy(&mut dst[5..], &src[3..]);
            assert!(dst[5..] == src[3..], "len {len}");
            assert!(dst[..5].iter().all(|&b| b == 0), "len {len}: wrote before");
        }
    }
}
