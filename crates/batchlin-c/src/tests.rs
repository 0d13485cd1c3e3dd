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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("generating batchlin.h: {e}"))
        .write(&mut fresh);
    let fresh = String::from_utf8(fresh).unwrap();
    let path = dir.join("include/batchlin.h");
    if std::env::var_os("BATCHLIN_BLESS_HEADER").is_some() {
        std::fs::write(&path, &fresh).unwrap();
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
        Error::OutOfMemory(String::new()),
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

// ---------------------------------------------------------------------------------------
// The CUDA forms. Argument errors are found before CUDA is asked for, so they read the
// same everywhere; calls that pass the checks are UNAVAILABLE where there is no CUDA (on
// a GPU machine those are left to tests/c/test_cuda.c, which has real device memory).

fn no_cuda() -> bool {
    match batchlin_core::cuda::device(0) {
        Ok(_) => {
            println!("CUDA present: the UNAVAILABLE checks are skipped");
            false
        }
        Err(_) => true,
    }
}

/// Fake device addresses: never dereferenced, since every call using them stops at an
/// argument check or at CUDA's absence.
fn nul<T>() -> *mut T {
    std::ptr::null_mut()
}

fn fake<T>(addr: usize) -> *mut T {
    addr as *mut T
}

fn expect(st: batchlin_status, want: batchlin_status, needle: &str) {
    let msg = text(batchlin_last_error());
    assert_eq!(st, want, "{msg}");
    assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
}

#[test]
fn cuda_qr_argument_errors() {
    use batchlin_status::*;
    let (a, q, r, info) = (
        fake::<f32>(0x10000),
        fake::<f32>(0x20000),
        fake::<f32>(0x30000),
        fake::<u32>(0x40000),
    );
    let st = unsafe { batchlin_sqr_cuda(nul(), 2, 3, 3, BATCHLIN_QR_REDUCED, q, r, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "a is NULL");
    let st = unsafe { batchlin_sqr_cuda(a, 2, 3, 3, BATCHLIN_QR_REDUCED, nul(), r, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "q is NULL");
    let st =
        unsafe { batchlin_dqr_cuda(a.cast(), 2, 3, 3, BATCHLIN_QR_R, nul(), nul(), info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "r is NULL");
    let st = unsafe { batchlin_sqr_cuda(a, 2, -3, 3, BATCHLIN_QR_R, nul(), r, info, nul()) };
    expect(st, BATCHLIN_ERROR_SHAPE, "m must be >= 0");
    let st = unsafe { batchlin_sqr_cuda(a, -1, 3, 3, BATCHLIN_QR_R, nul(), r, info, nul()) };
    expect(st, BATCHLIN_ERROR_SHAPE, "batch");
    let st = unsafe { batchlin_sqr_cuda(a, 2, 3, 3, 7, q, r, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "unknown QR mode");
    let st = unsafe { batchlin_sqr_cuda(fake(0x10002), 2, 3, 3, BATCHLIN_QR_R, q, r, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "aligned");
    let st = unsafe {
        batchlin_dqr_cuda(
            a.cast(),
            2,
            3,
            3,
            BATCHLIN_QR_R,
            nul(),
            fake(0x30004),
            info,
            nul(),
        )
    };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "r (0x30004) is not aligned");
    let st = unsafe { batchlin_sqr_cuda(a, 2, 3, 3, BATCHLIN_QR_R, q, r, fake(0x40002), nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "info");
    let st = unsafe {
        batchlin_sqr_cuda(
            a,
            1 << 40,
            1 << 20,
            1 << 20,
            BATCHLIN_QR_R,
            q,
            r,
            info,
            nul(),
        )
    };
    assert_eq!(
        st,
        BATCHLIN_ERROR_OVERFLOW,
        "{}",
        text(batchlin_last_error())
    );

    // The strided forms: a NULL a_layout, an output batch that differs, outputs whose
    // strides overlap.
    let la = batchlin_layout_col_major(2, 3, 3);
    let st = unsafe {
        batchlin_sqr_cuda_strided(
            a,
            std::ptr::null(),
            3,
            3,
            BATCHLIN_QR_R,
            q,
            std::ptr::null(),
            r,
            std::ptr::null(),
            info,
            nul(),
        )
    };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "a_layout is NULL");
    let lr_bad = batchlin_layout_row_major(3, 3, 3);
    let st = unsafe {
        batchlin_sqr_cuda_strided(
            a,
            &la,
            3,
            3,
            BATCHLIN_QR_R,
            q,
            std::ptr::null(),
            r,
            &lr_bad,
            info,
            nul(),
        )
    };
    expect(st, BATCHLIN_ERROR_OUTPUT, "r_layout.batch is 3");
    let overlapping = batchlin_layout {
        batch: 2,
        batch_stride: 1,
        row_stride: 3,
        col_stride: 1,
    };
    let st = unsafe {
        batchlin_dqr_cuda_strided(
            a.cast(),
            &la,
            3,
            3,
            BATCHLIN_QR_REDUCED,
            q.cast(),
            &overlapping,
            r.cast(),
            std::ptr::null(),
            info,
            nul(),
        )
    };
    expect(st, BATCHLIN_ERROR_OUTPUT, "overlap");
}

#[test]
fn cuda_qr_is_unavailable_without_cuda() {
    use batchlin_status::*;
    if !no_cuda() {
        return;
    }
    let (a, q, r) = (
        fake::<f64>(0x10000),
        fake::<f64>(0x20000),
        fake::<f64>(0x30000),
    );
    // Valid arguments, NULL q (mode R), NULL info and the default stream.
    let st = unsafe { batchlin_dqr_cuda(a, 4, 5, 3, BATCHLIN_QR_R, nul(), r, nul(), nul()) };
    expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");
    let st = unsafe {
        batchlin_sqr_cuda(
            a.cast(),
            4,
            5,
            3,
            BATCHLIN_QR_REDUCED,
            q.cast(),
            r.cast(),
            nul(),
            nul(),
        )
    };
    expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");
    // A zero batch too: the device forms need CUDA whatever the sizes.
    let st =
        unsafe { batchlin_sqr_cuda(nul(), 0, 5, 3, BATCHLIN_QR_R, nul(), nul(), nul(), nul()) };
    expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");
    let la = batchlin_layout {
        batch: 4,
        batch_stride: 0, // one matrix broadcast over the batch
        row_stride: 1,
        col_stride: 5,
    };
    let st = unsafe {
        batchlin_dqr_cuda_strided(
            a,
            &la,
            5,
            3,
            BATCHLIN_QR_COMPLETE,
            q,
            std::ptr::null(),
            r,
            std::ptr::null(),
            nul(),
            fake(0x1234),
        )
    };
    expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");

    // Host data with BATCHLIN_BACKEND_CUDA: the in-place path (contiguous) and the staged
    // one (padded output) both say why.
    let a = [1f32, 2., 3., 4., 5., 6.];
    let (mut q, mut r) = ([0f32; 6], [0f32; 8]);
    let la = batchlin_layout_row_major(1, 3, 2);
    let lr_padded = batchlin_layout {
        batch: 1,
        batch_stride: 8,
        row_stride: 4,
        col_stride: 1,
    };
    for lr in [std::ptr::null(), &lr_padded as *const _] {
        let st = unsafe {
            batchlin_sqr_strided(
                a.as_ptr(),
                &la,
                3,
                2,
                BATCHLIN_QR_REDUCED,
                q.as_mut_ptr(),
                std::ptr::null(),
                r.as_mut_ptr(),
                lr,
                std::ptr::null_mut(),
                BATCHLIN_BACKEND_CUDA,
            )
        };
        expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");
    }
}

#[test]
fn host_register_checks() {
    use batchlin_status::*;
    let mut buf = vec![0f32; 256];
    let p = buf.as_mut_ptr() as *mut c_void;
    let st = unsafe { batchlin_host_register(std::ptr::null_mut(), 64) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "NULL");
    let st = unsafe { batchlin_host_register(p, 0) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "empty");
    let st = unsafe { batchlin_host_register(usize::MAX as *mut c_void, 16) };
    expect(st, BATCHLIN_ERROR_OVERFLOW, "overflows");
    let st = batchlin_host_unregister(p);
    expect(
        st,
        BATCHLIN_ERROR_ARGUMENT,
        "not the start of a registered host buffer",
    );
    let st = unsafe { batchlin_host_register(p, 1024) };
    if no_cuda() {
        expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");
        // Nothing was remembered.
        let st = batchlin_host_unregister(p);
        expect(st, BATCHLIN_ERROR_ARGUMENT, "not the start");
    } else {
        assert_eq!(st, BATCHLIN_OK, "{}", text(batchlin_last_error()));
        let st = unsafe { batchlin_host_register(buf[16..].as_mut_ptr().cast(), 64) };
        expect(st, BATCHLIN_ERROR_ARGUMENT, "overlaps");
        assert_eq!(batchlin_host_unregister(p), BATCHLIN_OK);
        expect(
            batchlin_host_unregister(p),
            BATCHLIN_ERROR_ARGUMENT,
            "not the start",
        );
    }
}

/// src/entry_points.rs must be what gen_entry_points.py writes from its table.
#[test]
fn entry_points_are_generated() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(dir.join("gen_entry_points.py"))
        .arg("--stdout")
        .output()
        .expect("running python3 crates/batchlin-c/gen_entry_points.py (python3 is needed)");
    assert!(
        out.status.success(),
        "gen_entry_points.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = String::from_utf8(out.stdout).unwrap();
    let checked_in = std::fs::read_to_string(dir.join("src/entry_points.rs")).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "src/entry_points.rs is not what gen_entry_points.py writes: regenerate it with \
         `python3 crates/batchlin-c/gen_entry_points.py` (then \
         `BATCHLIN_BLESS_HEADER=1 cargo test -p batchlin-c header`) and commit both"
    );
}

/// The device forms of eigh and the SVD: argument errors first, as QR's; calls that pass
/// the checks go to the core, which answers UNAVAILABLE here (no CUDA; tests/c/test_cuda.c
/// checks their results on a GPU).
#[test]
fn cuda_eigh_and_svd_forms() {
    use batchlin_status::*;
    let (a, w, v, s, info) = (
        fake::<f32>(0x10000),
        fake::<f32>(0x20000),
        fake::<f32>(0x30000),
        fake::<f32>(0x40000),
        fake::<u32>(0x50000),
    );
    // Argument errors, the same everywhere.
    let st = unsafe { batchlin_seigh_cuda(nul(), 2, 3, BATCHLIN_LOWER, w, v, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "a is NULL");
    let st = unsafe { batchlin_seigh_cuda(a, 2, 3, 0, w, v, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "uplo");
    let st = unsafe {
        batchlin_deigh_cuda(a.cast(), 2, 3, BATCHLIN_UPPER, w.cast(), nul(), info, nul())
    };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "v is NULL");
    let st = unsafe { batchlin_seigvalsh_cuda(a, 2, -3, BATCHLIN_UPPER, w, info, nul()) };
    expect(st, BATCHLIN_ERROR_SHAPE, "n must be >= 0");
    let st = unsafe { batchlin_ssvd_cuda(a, 2, 3, 2, 0, v, nul(), v, info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "s is NULL");
    let st = unsafe { batchlin_dsvdvals_cuda(a.cast(), 2, 3, 2, fake(0x40004), info, nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "s (0x40004) is not aligned");
    let st = unsafe { batchlin_ssvdvals_cuda(a, 2, 3, 2, s, fake(0x50002), nul()) };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "info");
    let la = batchlin_layout_row_major(2, 3, 3);
    let lw_bad = batchlin_layout_row_major(3, 1, 3);
    let st = unsafe {
        batchlin_seigvalsh_cuda_strided(a, &la, 3, BATCHLIN_LOWER, w, &lw_bad, info, nul())
    };
    expect(st, BATCHLIN_ERROR_OUTPUT, "w_layout.batch is 3");
    let st = unsafe {
        batchlin_ssvd_cuda_strided(
            a,
            std::ptr::null(),
            3,
            3,
            1,
            v,
            std::ptr::null(),
            s,
            std::ptr::null(),
            v,
            std::ptr::null(),
            info,
            nul(),
        )
    };
    expect(st, BATCHLIN_ERROR_ARGUMENT, "a_layout is NULL");

    if !no_cuda() {
        return;
    }
    // Valid arguments: the core's answer, with its reason.
    let unavailable = |st| expect(st, BATCHLIN_ERROR_UNAVAILABLE, "CUDA");
    let none = std::ptr::null();
    unsafe {
        unavailable(batchlin_seigh_cuda(
            a,
            2,
            3,
            BATCHLIN_LOWER,
            w,
            v,
            info,
            nul(),
        ));
        unavailable(batchlin_deigh_cuda(
            a.cast(),
            2,
            3,
            BATCHLIN_LOWER,
            w.cast(),
            v.cast(),
            nul(),
            nul(),
        ));
        unavailable(batchlin_seigvalsh_cuda(
            a,
            2,
            3,
            BATCHLIN_UPPER,
            w,
            info,
            nul(),
        ));
        unavailable(batchlin_deigvalsh_cuda_strided(
            a.cast(),
            &la,
            3,
            BATCHLIN_UPPER,
            w.cast(),
            none,
            nul(),
            fake(0x1234),
        ));
        unavailable(batchlin_ssvd_cuda(a, 2, 3, 3, 0, v, s, w, info, nul()));
        unavailable(batchlin_dsvd_cuda_strided(
            a.cast(),
            &la,
            3,
            3,
            1,
            v.cast(),
            none,
            s.cast(),
            none,
            w.cast(),
            none,
            nul(),
            nul(),
        ));
        unavailable(batchlin_ssvdvals_cuda(a, 2, 3, 3, s, info, nul()));
        // A zero batch too: the device forms need CUDA whatever the sizes, as QR's.
        unavailable(batchlin_dsvdvals_cuda(nul(), 0, 3, 3, nul(), nul(), nul()));
    }
}

/// A host plan's text names the backend and why: the rules' pick (`rules`) with
/// "[rules]", or a CPU backend with its time from this machine's cost table (QR on the
/// 2-core machine has one built in: crates/batchlin/tables/).
fn described(plan: &str, rules: &str) -> bool {
    let cpu = ["cpu-small [table: ", "cpu-faer [table: "]
        .iter()
        .any(|b| plan.starts_with(b));
    let time = [
        " us predicted]",
        " ms predicted]",
        " us extrapolated]",
        " ms extrapolated]",
    ]
    .iter()
    .any(|e| plan.ends_with(e));
    plan == format!("{rules} [rules]") || (cpu && time)
}

#[test]
fn plan_describes_the_routing() {
    let plan = |op, dtype, batch, m, n, device| {
        let p = batchlin_plan(op, dtype, batch, m, n, device);
        (!p.is_null()).then(|| text(p))
    };
    let forced = std::env::var_os("BATCHLIN_BACKEND").is_some();
    let mut from_table = 0;
    for op in [BATCHLIN_OP_QR, BATCHLIN_OP_EIGH, BATCHLIN_OP_SVD] {
        for dtype in [BATCHLIN_FLOAT32, BATCHLIN_FLOAT64] {
            let small = plan(op, dtype, 64, 8, 8, BATCHLIN_DEVICE_HOST).expect("a plan");
            let large = plan(op, dtype, 4, 300, 300, BATCHLIN_DEVICE_HOST).expect("a plan");
            assert_eq!(text(batchlin_last_error()), "");
            if !forced {
                assert!(described(&small, "cpu-small"), "{small}");
                assert!(described(&large, "cpu-faer"), "{large}");
                from_table += [&small, &large]
                    .iter()
                    .filter(|p| p.contains("[table: "))
                    .count();
            }
        }
    }
    // Where a cost table is in use (policy_source says which), it decides some of them.
    let source = text(batchlin_policy_source());
    if !forced {
        assert_eq!(source.starts_with("cost table"), from_table > 0, "{source}");
    }
    // Zero sizes have a plan too.
    assert!(plan(BATCHLIN_OP_SVD, BATCHLIN_FLOAT64, 0, 0, 0, -1).is_some());
    // Errors: NULL with the message.
    assert_eq!(plan(9, BATCHLIN_FLOAT32, 1, 2, 2, -1), None);
    assert!(text(batchlin_last_error()).contains("operation"));
    assert_eq!(plan(BATCHLIN_OP_QR, 7, 1, 2, 2, -1), None);
    assert!(text(batchlin_last_error()).contains("element type"));
    assert_eq!(plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, -2, 2, -1), None);
    assert!(text(batchlin_last_error()).contains("m must be >= 0"));
    assert_eq!(plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, 2, 2, -2), None);
    assert!(text(batchlin_last_error()).contains("unknown device -2"));
    // A device that is not there (no CUDA here, or not that many devices).
    assert_eq!(plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, 2, 2, 4096), None);
    let msg = text(batchlin_last_error());
    assert!(msg.contains("unavailable") && msg.contains("CUDA"), "{msg}");
    if no_cuda() {
        assert_eq!(plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, 2, 2, 0), None);
        assert!(text(batchlin_last_error()).contains("CUDA"));
    }
}

/// Zero-size outputs with explicit layouts, the library's own helpers included, are
/// accepted as NULL layouts are (an empty view has no elements that could overlap).
#[test]
fn zero_size_outputs_with_explicit_layouts() {
    let mut buf = [0f32; 64];
    let a = [0f32; 64];
    let p = buf.as_mut_ptr();
    for (batch, m, n) in [(3i64, 0i64, 5i64), (3, 5, 0), (0, 4, 4), (2, 0, 0)] {
        let k = m.min(n);
        let la = batchlin_layout_row_major(batch, m, n);
        let lq = batchlin_layout_row_major(batch, m, k);
        let lr = batchlin_layout_row_major(batch, k, n);
        let st = unsafe {
            batchlin_sqr_strided(
                a.as_ptr(),
                &la,
                m,
                n,
                BATCHLIN_QR_REDUCED,
                p,
                &lq,
                p.wrapping_add(32),
                &lr,
                std::ptr::null_mut(),
                BATCHLIN_BACKEND_AUTO,
            )
        };
        let ctx = format!("qr {batch}x{m}x{n}");
        assert_eq!(
            st,
            batchlin_status::BATCHLIN_OK,
            "{ctx}: {}",
            text(batchlin_last_error())
        );
        let (lu, ls, lvh) = (
            batchlin_layout_row_major(batch, m, k),
            batchlin_layout_row_major(batch, 1, k),
            batchlin_layout_row_major(batch, k, n),
        );
        let st = unsafe {
            batchlin_ssvd_strided(
                a.as_ptr(),
                &la,
                m,
                n,
                0,
                p,
                &lu,
                p.wrapping_add(16),
                &ls,
                p.wrapping_add(32),
                &lvh,
                std::ptr::null_mut(),
                BATCHLIN_BACKEND_AUTO,
            )
        };
        assert_eq!(
            st,
            batchlin_status::BATCHLIN_OK,
            "svd {ctx}: {}",
            text(batchlin_last_error())
        );
        if m == n {
            let (lw, lv) = (
                batchlin_layout_row_major(batch, 1, n),
                batchlin_layout_row_major(batch, n, n),
            );
            let st = unsafe {
                batchlin_seigh_strided(
                    a.as_ptr(),
                    &la,
                    n,
                    BATCHLIN_LOWER,
                    p,
                    &lw,
                    p.wrapping_add(32),
                    &lv,
                    std::ptr::null_mut(),
                    BATCHLIN_BACKEND_AUTO,
                )
            };
            assert_eq!(
                st,
                batchlin_status::BATCHLIN_OK,
                "eigh {ctx}: {}",
                text(batchlin_last_error())
            );
        }
    }
}
