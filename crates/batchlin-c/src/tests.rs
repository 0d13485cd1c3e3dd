//! Rust-side checks of the C API. The C test program (tests/c/test_batchlin.c, run by
//! scripts/test-c) checks the numerics and every error path through the real libraries.

use super::*;
use batchlin_core::Error;
use std::ffi::CStr;
use std::path::Path;

fn text(p: *const c_char) -> String {
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
}

/// The checked-in header must be the one cbindgen generates from these sources.
/// `BATCHLIN_BLESS_HEADER=1 cargo test -p batchlin-c header` updates it.
#[test]
fn header_is_current() {
    let fresh = include_str!(concat!(env!("OUT_DIR"), "/batchlin.h"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/batchlin.h");
    if std::env::var_os("BATCHLIN_BLESS_HEADER").is_some() {
        std::fs::write(&path, fresh).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "{} is not the header cbindgen generates from src/: regenerate it with \
         `BATCHLIN_BLESS_HEADER=1 cargo test -p batchlin-c header` and commit it",
        path.display()
    );
}

#[test]
fn version_matches_the_package() {
    assert_eq!(text(batchlin_version()), env!("CARGO_PKG_VERSION"));
    let want =
        format!("{BATCHLIN_VERSION_MAJOR}.{BATCHLIN_VERSION_MINOR}.{BATCHLIN_VERSION_PATCH}");
    assert_eq!(
        want,
        env!("CARGO_PKG_VERSION"),
        "bump the BATCHLIN_VERSION_* constants"
    );
}

#[test]
fn every_error_kind_has_its_status_and_name() {
    let kinds = [
        Error::Shape(String::new()),
        Error::DType(String::new()),
        Error::Argument(String::new()),
        Error::Output(String::new()),
        Error::Overflow(String::new()),
        Error::Unavailable(String::new()),
        Error::Device(String::new()),
    ];
    for e in kinds {
        let status = imp::status_of(&e);
        assert_ne!(status, batchlin_status::BATCHLIN_OK);
        assert_eq!(text(batchlin_status_name(status as i32)), e.kind());
    }
    assert_eq!(text(batchlin_status_name(0)), "ok");
    assert_eq!(
        text(batchlin_status_name(
            batchlin_status::BATCHLIN_ERROR_INTERNAL as i32
        )),
        "internal"
    );
    assert_eq!(text(batchlin_status_name(-1)), "unknown");
}

#[test]
fn a_panic_becomes_an_internal_error() {
    let status = imp::guard(|| panic!("deliberate"));
    assert_eq!(status, batchlin_status::BATCHLIN_ERROR_INTERNAL);
    let msg = text(batchlin_last_error());
    assert!(
        msg.contains("deliberate") && msg.contains("internal"),
        "{msg}"
    );
    // The next successful call clears it.
    assert_eq!(imp::guard(|| Ok(())), batchlin_status::BATCHLIN_OK);
    assert_eq!(text(batchlin_last_error()), "");
}

#[test]
fn qr_through_the_c_entry_point() {
    // Two 3x2 matrices, row-major.
    let a: [f64; 12] = [1., 2., 3., 4., 5., 6., 2., 0., 0., 1., 1., 1.];
    let (mut q, mut r, mut info) = ([0f64; 12], [0f64; 8], [7u32; 2]);
    let st = unsafe {
        batchlin_dqr(
            a.as_ptr(),
            2,
            3,
            2,
            BATCHLIN_QR_REDUCED,
            q.as_mut_ptr(),
            r.as_mut_ptr(),
            info.as_mut_ptr(),
        )
    };
    assert_eq!(
        st,
        batchlin_status::BATCHLIN_OK,
        "{}",
        text(batchlin_last_error())
    );
    assert_eq!(info, [0, 0]);
    for b in 0..2 {
        for i in 0..3 {
            for j in 0..2 {
                let qr: f64 = (0..2)
                    .map(|p| q[b * 6 + i * 2 + p] * r[b * 4 + p * 2 + j])
                    .sum();
                assert!((qr - a[b * 6 + i * 2 + j]).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn bad_arguments_are_statuses() {
    let mut r = [0f32; 4];
    let st = unsafe {
        batchlin_sqr(
            std::ptr::null(),
            1,
            2,
            2,
            BATCHLIN_QR_R,
            std::ptr::null_mut(),
            r.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(st, batchlin_status::BATCHLIN_ERROR_ARGUMENT);
    assert!(text(batchlin_last_error()).contains("NULL"));
    assert!(batchlin_backend_for(99, BATCHLIN_FLOAT32, 1, 2, 2).is_null());
    assert!(text(batchlin_last_error()).contains("operation"));
}
