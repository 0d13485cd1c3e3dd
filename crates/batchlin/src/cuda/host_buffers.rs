//! Host buffers the caller made known: pinned once, used in place by GPU calls on host
//! data.
//!
//! Pinning memory (`cuMemHostRegister`) costs time per megabyte, so it is done once per
//! buffer rather than per call, as the seed's "known buffers" were. A registered range
//! is page-locked for every context (`CU_MEMHOSTREGISTER_PORTABLE`), so a GPU call on
//! host data copies straight between it and the device (true DMA) instead of going
//! through the backend's own pinned staging buffer.
//!
//! The registry is a map from start address to length under one mutex, held only to
//! register, unregister and look up (never while a GPU call runs). A lookup returns an
//! [`InUse`] token; while any token for a range is alive, [`unregister`] refuses it, so a
//! call's copies never run from memory that was unpinned under them. Freeing a buffer
//! without unregistering it first is the caller's error, as in CUDA.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use super::driver;
use crate::{Error, Result};

struct Entry {
    len: usize,
    /// One strong count for the entry itself, one more per [`InUse`] token.
    users: Arc<()>,
}

static REGISTRY: Mutex<BTreeMap<usize, Entry>> = Mutex::new(BTreeMap::new());

fn registry() -> std::sync::MutexGuard<'static, BTreeMap<usize, Entry>> {
    // A panic while the lock was held cannot leave the map half-updated (every update is
    // one insert or remove), so a poisoned lock is still good.
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Proof that a caller's range lies inside a registered buffer, which stays registered
/// while this lives.
#[derive(Debug)]
pub struct InUse(#[allow(dead_code)] Arc<()>);

/// The registered range holding `[start, start + len)`, if any: its start and entry.
fn containing(map: &BTreeMap<usize, Entry>, start: usize, len: usize) -> Option<(usize, &Entry)> {
    let end = start.checked_add(len)?;
    let (&s, e) = map.range(..=start).next_back()?;
    (end <= s + e.len).then_some((s, e))
}

/// Pins `[ptr, ptr + bytes)` (host memory the caller owns) for the GPU and remembers it.
///
/// Errors: a null pointer or zero length (`Argument`), a range overlapping one already
/// registered (`Argument`), no CUDA (`Unavailable`), the driver refusing (`Device`).
///
/// # Safety
/// `ptr` must point to `bytes` bytes of host memory that stay allocated until
/// [`unregister`] is called with the same pointer.
pub unsafe fn register(ptr: *mut c_void, bytes: usize) -> Result<()> {
    let start = ptr as usize;
    if ptr.is_null() {
        return Err(Error::Argument("cannot register a NULL pointer".into()));
    }
    if bytes == 0 {
        return Err(Error::Argument(
            "cannot register an empty range (bytes = 0)".into(),
        ));
    }
    let end = start.checked_add(bytes).ok_or_else(|| {
        Error::Overflow(format!(
            "{start:#x} + {bytes} bytes overflows the address space"
        ))
    })?;
    let dev = super::device(0)?;
    let mut map = registry();
    let before = map
        .range(..end)
        .next_back()
        .filter(|(&s, e)| s + e.len > start);
    if let Some((&s, e)) = before {
        return Err(Error::Argument(format!(
            "[{start:#x}, {end:#x}) overlaps the registered buffer [{s:#x}, {:#x}): \
             unregister it first",
            s + e.len
        )));
    }
    // Portable: page-locked for every device's context, whichever is current.
    let _ctx = dev.dev.enter()?;
    driver::host_register(ptr, bytes)?;
    map.insert(
        start,
        Entry {
            len: bytes,
            users: Arc::new(()),
        },
    );
    Ok(())
}

/// Unpins a buffer registered with [`register`] (`ptr` as given there).
///
/// Errors: `ptr` not the start of a registered buffer, or the buffer in use by a GPU call
/// running now (`Argument`); the driver refusing (`Device`; the buffer is forgotten all
/// the same).
pub fn unregister(ptr: *mut c_void) -> Result<()> {
    let start = ptr as usize;
    let mut map = registry();
    let Some(e) = map.get(&start) else {
        return Err(Error::Argument(format!(
            "{start:#x} is not the start of a registered host buffer"
        )));
    };
    if Arc::strong_count(&e.users) > 1 {
        return Err(Error::Argument(format!(
            "the host buffer at {start:#x} is in use by a GPU call still running"
        )));
    }
    map.remove(&start);
    // Registered means CUDA was available, so this cannot fail here.
    let dev = super::device(0)?;
    let _ctx = dev.dev.enter()?;
    // SAFETY: `start` was registered by `register` and no call is using it; the driver
    // only unpins the pages, it reads and writes nothing.
    unsafe { driver::host_unregister(start as *mut c_void) }
}

/// A token keeping `[ptr, ptr + bytes)` registered, when it lies inside one registered
/// buffer; None when it does not (or `bytes` is 0).
pub fn lookup(ptr: *const c_void, bytes: usize) -> Option<InUse> {
    if bytes == 0 {
        return None;
    }
    let map = registry();
    containing(&map, ptr as usize, bytes).map(|(_, e)| InUse(Arc::clone(&e.users)))
}

/// Whether any buffer is registered (a call on host data asks before looking its
/// buffers up).
pub fn any() -> bool {
    !registry().is_empty()
}

/// Remember `[ptr, ptr + bytes)` as registered without pinning it: for tests of what
/// follows from registration on machines without CUDA. `forget` undoes it.
#[cfg(test)]
pub(crate) fn remember_unpinned(ptr: *const c_void, bytes: usize) {
    let users = Arc::new(());
    registry().insert(ptr as usize, Entry { len: bytes, users });
}

#[cfg(test)]
pub(crate) fn forget(ptr: *const c_void) {
    registry().remove(&(ptr as usize));
}

/// Whether `[ptr, ptr + bytes)` lies inside one registered buffer.
pub fn is_registered(ptr: *const c_void, bytes: usize) -> bool {
    lookup(ptr, bytes).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range arithmetic, on a map filled by hand (no CUDA needed).
    #[test]
    fn containing_ranges() {
        let mut map = BTreeMap::new();
        for (s, l) in [(1000usize, 100usize), (2000, 50)] {
            map.insert(
                s,
                Entry {
                    len: l,
                    users: Arc::new(()),
                },
            );
        }
        assert_eq!(containing(&map, 1000, 100).map(|x| x.0), Some(1000));
        assert_eq!(containing(&map, 1050, 50).map(|x| x.0), Some(1000));
        assert!(containing(&map, 1050, 51).is_none());
        assert!(containing(&map, 999, 2).is_none());
        assert!(containing(&map, 1100, 1).is_none());
        assert_eq!(containing(&map, 2049, 1).map(|x| x.0), Some(2000));
        assert!(containing(&map, usize::MAX, 2).is_none());
        assert!(containing(&map, 10, 1).is_none());
    }

    /// A call's buffers count as pinned where each lies inside a registered range (the
    /// planner then prices a GPU's copies from registered memory).
    #[test]
    fn a_calls_registered_buffers_are_seen_as_pinned() {
        use crate::entry::{assemble, Request};
        use crate::problem::{Operation, QrMode};
        use crate::view::{BatchMut, BatchRef};
        let a = vec![1.0f32; 2 * 4 * 3];
        let (mut q, mut r) = (vec![0.0f32; 2 * 4 * 3], vec![0.0f32; 2 * 3 * 3]);
        let op = Operation::Qr(QrMode::Reduced);
        let ask = |q: &mut [f32], r: &mut [f32]| {
            let views = vec![
                BatchMut::contiguous(q, &[2, 4, 3]).unwrap(),
                BatchMut::contiguous(r, &[2, 3, 3]).unwrap(),
            ];
            let req = Request {
                operation: op,
                a: BatchRef::contiguous(&a, &[2, 4, 3]).unwrap(),
                out: assemble(op, views).unwrap(),
                info: None,
                place: crate::Place::Host,
            };
            super::super::pinned(&req)
        };
        let (qp, rp) = (q.as_ptr().cast::<c_void>(), r.as_ptr().cast::<c_void>());
        let ap = a.as_ptr().cast::<c_void>();
        // The ranges forgotten however the test ends: the buffers are freed after it.
        struct Forget([*const c_void; 3]);
        impl Drop for Forget {
            fn drop(&mut self) {
                self.0.iter().for_each(|&p| forget(p));
            }
        }
        let _forget = Forget([ap, qp, rp]);
        assert_eq!(ask(&mut q, &mut r), Default::default());
        remember_unpinned(ap, 4 * a.len());
        let p = ask(&mut q, &mut r);
        assert!(p.input && !p.outputs, "{p:?}");
        remember_unpinned(qp, 4 * q.len());
        assert!(!ask(&mut q, &mut r).outputs, "R is not registered");
        remember_unpinned(rp, 4 * r.len() - 4);
        assert!(!ask(&mut q, &mut r).outputs, "R reaches past its range");
        forget(rp);
        remember_unpinned(rp, 4 * r.len());
        let p = ask(&mut q, &mut r);
        assert!(p.input && p.outputs, "{p:?}");
        for x in [ap, qp, rp] {
            forget(x);
        }
        assert_eq!(ask(&mut q, &mut r), Default::default());
    }

    #[test]
    fn errors_without_registering() {
        let mut buf = [0u8; 64];
        let p = buf.as_mut_ptr() as *mut c_void;
        let e = unsafe { register(std::ptr::null_mut(), 8) }.unwrap_err();
        assert_eq!(e.kind(), "argument");
        let e = unsafe { register(p, 0) }.unwrap_err();
        assert_eq!(e.kind(), "argument");
        let e = unsafe { register(usize::MAX as *mut c_void, 2) }.unwrap_err();
        assert_eq!(e.kind(), "overflow");
        let e = unregister(p).unwrap_err();
        assert_eq!(e.kind(), "argument");
        assert!(!is_registered(p, 8));
        match unsafe { register(p, buf.len()) } {
            Err(e) => assert_eq!(e.kind(), "unavailable", "{e}"),
            Ok(()) => {
                // A machine with CUDA: the range is known until unregistered.
                assert!(is_registered(p, 64) && is_registered(buf[8..].as_ptr().cast(), 8));
                assert!(!is_registered(p, 65));
                let e = unsafe { register(buf[32..].as_mut_ptr().cast(), 64) }.unwrap_err();
                assert_eq!(e.kind(), "argument");
                {
                    let _t = lookup(p, 8).unwrap();
                    assert_eq!(unregister(p).unwrap_err().kind(), "argument");
                }
                unregister(p).unwrap();
                assert!(!is_registered(p, 8));
            }
        }
    }
}
