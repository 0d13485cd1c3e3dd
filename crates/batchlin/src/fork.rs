//! What a process forked from one that used batchlin may still use.
//!
//! `fork()` copies only the calling thread. The CPU backends' worker threads (a rayon
//! pool) do not exist in the child, and a pool whose threads are gone blocks for ever on
//! the first parallel call (the hang the reliability work fixed). A `pthread_atfork`
//! child handler, registered the first time batchlin builds its pool or starts CUDA,
//! counts forks; the CPU backends build a fresh pool when the count changed
//! (`cpu::pool`), leaking the parent's (its locks may be held by threads that no longer
//! exist, so it is never touched again).
//!
//! The CUDA driver is not usable in a child forked after it was initialised (NVIDIA
//! documents this): every CUDA call there answers `Unavailable` with
//! [`CUDA_AFTER_FORK`] instead of hanging or failing inside the driver. A child forked
//! before CUDA was first used initialises it normally.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Why CUDA is refused in a forked child.
pub const CUDA_AFTER_FORK: &str = "CUDA cannot be used in a process forked after CUDA was \
    initialised (start worker processes with the \"spawn\" or \"forkserver\" method, or \
    initialise CUDA in each child)";

static FORKS: AtomicUsize = AtomicUsize::new(0);
static CUDA_STARTED: AtomicBool = AtomicBool::new(false);
static CUDA_FORKED: AtomicBool = AtomicBool::new(false);
static REGISTER: Once = Once::new();

extern "C" fn child() {
    // Async-signal-safe: atomics only.
    FORKS.fetch_add(1, Ordering::SeqCst);
    if CUDA_STARTED.load(Ordering::SeqCst) {
        CUDA_FORKED.store(true, Ordering::SeqCst);
    }
}

/// Register the fork handler (once a process; a child inherits it).
pub(crate) fn watch() {
    REGISTER.call_once(|| {
        #[cfg(unix)]
        // SAFETY: registers a handler that only touches atomics.
        unsafe {
            libc::pthread_atfork(None, None, Some(child));
        }
    });
}

/// How many times this process's ancestry forked since batchlin started watching: a
/// pool built under another count belongs to a parent.
pub(crate) fn generation() -> usize {
    watch();
    FORKS.load(Ordering::SeqCst)
}

/// Called before the CUDA driver is initialised.
pub(crate) fn note_cuda_start() {
    watch();
    CUDA_STARTED.store(true, Ordering::SeqCst);
}

/// Whether this process was forked from one that had initialised CUDA.
pub fn cuda_forked() -> bool {
    CUDA_FORKED.load(Ordering::SeqCst)
}
