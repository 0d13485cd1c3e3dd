//! Compiles every CUDA kernel instantiation (src/cuda/instantiations.rs, the one list)
//! ahead of time with NVRTC, for every architecture of `ARCHS`, and embeds the CUBINs:
//! the first call on a GPU loads a module instead of compiling it.
//!
//! NVRTC is loaded at build time as at run time (no CUDA is linked): `BATCHLIN_NVRTC`
//! names the library (or `none` to embed nothing), else `libnvrtc.so.13` is looked up on
//! the loader's path, in /usr/local/cuda and in the `nvidia` wheels of the Python the
//! build runs under (`pip install "nvidia-cuda-nvrtc==13.0.*"`). Without it the build
//! succeeds with a warning and nothing embedded (the runtime compiles with NVRTC, as
//! before). CUBINs are cached under `target/batchlin-kernels/`, keyed by source, arch and
//! NVRTC version, so every profile shares one compile.
//!
//! Writes `$OUT_DIR/kernels.rs` (the sources of `src/cuda/kernels/`, the index of the
//! embedded CUBINs) and `$OUT_DIR/kernels.bin` (the CUBINs, each a zlib stream of its
//! own, inflated by the runtime when it loads that module).

#[path = "src/cuda/instantiations.rs"]
#[allow(dead_code)]
mod instantiations;

use std::ffi::{c_char, c_int, c_void, CString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use instantiations as insts;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let kdir = manifest.join("src/cuda/kernels");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/cuda/instantiations.rs");
    println!("cargo:rerun-if-changed=src/cuda/kernels");
    println!("cargo:rerun-if-env-changed=BATCHLIN_NVRTC");

    // The kernel sources, by file name, for the runtime (one table, made from the folder).
    let mut files: Vec<String> = std::fs::read_dir(&kdir)
        .expect("src/cuda/kernels")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    files.sort();
    let read = |f: &str| {
        std::fs::read_to_string(kdir.join(f)).unwrap_or_else(|e| panic!("kernels/{f}: {e}"))
    };
    let common = read("common.cu");
    let mut rs = String::from("/// The kernel sources (src/cuda/kernels/*.cu) by file name.\n");
    rs.push_str("pub(crate) static SOURCES: &[(&str, &str)] = &[\n");
    for f in files.iter() {
        let p = kdir.join(f);
        writeln!(
            rs,
            "    ({f:?}, include_str!({:?})),",
            p.display().to_string()
        )
        .unwrap();
    }
    rs.push_str("];\n");

    let list = insts::all();
    let files = &files;
    let jobs: Vec<(String, String, &str)> = insts::ARCHS
        .iter()
        .flat_map(|&arch| {
            let cc = insts::arch_cc(arch).expect("ARCHS are sm_XY");
            list.iter()
                .filter(move |(_, inst)| insts::min_cc(inst) <= cc)
                .map(move |(name, inst)| {
                    let ops = insts::module_file(inst);
                    assert!(
                        files.iter().any(|f| f == ops),
                        "{name}: kernels/{ops} does not exist"
                    );
                    (name.clone(), inst.clone(), arch)
                })
        })
        .collect();

    let (entries, note) = match Nvrtc::find() {
        Err(why) => {
            println!(
                "cargo:warning=batchlin: CUDA kernels not embedded ({why}); the CUDA \
                 backend will compile them with NVRTC on first use. For a build that \
                 embeds them: pip install \"nvidia-cuda-nvrtc==13.0.*\" or set \
                 BATCHLIN_NVRTC=/path/to/libnvrtc.so.13"
            );
            (Vec::new(), format!("not embedded: {why}"))
        }
        Ok(nv) => {
            let t0 = Instant::now();
            let cache = cache_dir(&out);
            let built = compile_all(&nv, &jobs, &common, &read, &cache);
            let secs = t0.elapsed().as_secs_f64();
            let bytes: usize = built.iter().map(|e| e.size).sum();
            let packed: usize = built.iter().map(|e| e.zlib.len()).sum();
            let note = format!(
                "{} modules for {} (NVRTC {}.{}), {:.1} MB of CUBIN, {:.1} MB deflated",
                built.len(),
                insts::ARCHS.join(" "),
                nv.version.0,
                nv.version.1,
                bytes as f64 / 1e6,
                packed as f64 / 1e6
            );
            if std::env::var_os("BATCHLIN_BUILD_VERBOSE").is_some() {
                println!("cargo:warning=batchlin: embedded {note} in {secs:.1} s");
            }
            (built, note)
        }
    };

    // The blob: the CUBINs' zlib streams one after another; the index gives (name, arch,
    // source hash, offset and length of the stream, length of the CUBIN).
    let mut blob = Vec::new();
    let mut index = String::new();
    for e in &entries {
        writeln!(
            index,
            "    Embedded {{ name: {:?}, arch: {:?}, src_hash: {:#018x}, at: {}, len: {}, size: {} }},",
            e.name,
            e.arch,
            e.src_hash,
            blob.len(),
            e.zlib.len(),
            e.size
        )
        .unwrap();
        blob.extend_from_slice(&e.zlib);
    }
    std::fs::write(out.join("kernels.bin"), &blob).unwrap();
    writeln!(rs, "/// What the build embedded, in words.").unwrap();
    writeln!(rs, "pub(crate) const NOTE: &str = {note:?};").unwrap();
    writeln!(rs, "pub(crate) static INDEX: &[Embedded] = &[\n{index}];").unwrap();
    std::fs::write(out.join("kernels.rs"), rs).unwrap();
}

/// `target/batchlin-kernels` (OUT_DIR is target/[triple/]profile/build/batchlin-*/out),
/// shared by every profile; OUT_DIR itself where the layout is not that.
fn cache_dir(out: &Path) -> PathBuf {
    let up = out.ancestors().nth(4);
    match (up, out.ancestors().nth(2).and_then(|p| p.file_name())) {
        (Some(t), Some(b)) if b == "build" => t.join("batchlin-kernels"),
        _ => out.join("cache"),
    }
}

/// One module for the blob: its CUBIN deflated (a zlib stream, whose Adler-32 lets the
/// runtime refuse a damaged one) and the CUBIN's length.
struct Entry {
    name: String,
    arch: &'static str,
    src_hash: u64,
    zlib: Vec<u8>,
    size: usize,
}

/// zlib's best: 24% of the CUBINs' size (level 6 gives 24.3%, miniz_oxide's 10 23.8% in
/// 1.3x the time). Optimised (the workspace's profiles), 47 MB take about 8 s of one core.
const DEFLATE_LEVEL: u8 = 9;

fn compile_all(
    nv: &Nvrtc,
    jobs: &[(String, String, &'static str)],
    common: &str,
    read: &dyn Fn(&str) -> String,
    cache: &Path,
) -> Vec<Entry> {
    let _ = std::fs::create_dir_all(cache);
    let sources: Vec<(String, String)> = {
        let mut files: Vec<&str> = jobs.iter().map(|j| insts::module_file(&j.1)).collect();
        files.sort();
        files.dedup();
        files.iter().map(|f| (f.to_string(), read(f))).collect()
    };
    let src_of = |inst: &str| {
        let f = insts::module_file(inst);
        let ops = &sources.iter().find(|s| s.0 == f).unwrap().1;
        insts::module_source(common, ops, inst)
    };
    let threads = std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .clamp(1, 32);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Entry)>> = Mutex::new(Vec::new());
    let failed: Mutex<Vec<String>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((name, inst, arch)) = jobs.get(i) else {
                    break;
                };
                let src = src_of(inst);
                let hash = insts::fnv64(&[src.as_bytes()]);
                let key = insts::fnv64(&[
                    src.as_bytes(),
                    arch.as_bytes(),
                    &nv.version.0.to_le_bytes(),
                    &nv.version.1.to_le_bytes(),
                ]);
                let file = cache.join(format!("{name}-{arch}-{key:016x}.cubin"));
                let cubin = match std::fs::read(&file) {
                    Ok(c) if !c.is_empty() => c,
                    _ => match nv.cubin(&src, name, arch) {
                        Ok(c) => {
                            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
                            if std::fs::write(&tmp, &c).is_ok() {
                                let _ = std::fs::rename(&tmp, &file);
                            }
                            c
                        }
                        Err(e) => {
                            failed.lock().unwrap().push(e);
                            continue;
                        }
                    },
                };
                let entry = Entry {
                    name: name.clone(),
                    arch,
                    src_hash: hash,
                    zlib: miniz_oxide::deflate::compress_to_vec_zlib(&cubin, DEFLATE_LEVEL),
                    size: cubin.len(),
                };
                done.lock().unwrap().push((i, entry));
            });
        }
    });
    let failed = failed.into_inner().unwrap();
    if !failed.is_empty() {
        panic!(
            "NVRTC could not compile {} kernel(s):\n{}",
            failed.len(),
            failed.join("\n")
        );
    }
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type CreateFn = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut *mut c_void) -> c_int;

/// NVRTC, loaded with dlopen (no CUDA linked at build time, as at run time).
struct Nvrtc {
    version: (i32, i32),
    create: CreateFn,
    compile: CompileFn,
    log_size: SizeFn,
    log: GetFn,
    cubin_size: SizeFn,
    cubin: GetFn,
    destroy: DestroyFn,
}

#[cfg(unix)]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

impl Nvrtc {
    /// Where NVRTC may be, in order; `Err` says why none was found.
    fn candidates() -> Result<Vec<String>, String> {
        if let Some(v) = std::env::var_os("BATCHLIN_NVRTC") {
            let v = v.to_string_lossy().into_owned();
            if v.is_empty() || v == "none" || v == "0" {
                return Err("BATCHLIN_NVRTC=none".into());
            }
            return Ok(vec![v]);
        }
        let mut c = vec![
            "libnvrtc.so.13".to_string(),
            "/usr/local/cuda/lib64/libnvrtc.so.13".into(),
            "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13".into(),
            "/usr/local/cuda/targets/sbsa-linux/lib/libnvrtc.so.13".into(),
        ];
        // The nvidia-cuda-nvrtc wheel of the Python running the build (maturin's, or
        // the first python3 on PATH).
        let mut pythons = Vec::new();
        for var in ["PYO3_PYTHON", "PYTHON_SYS_EXECUTABLE"] {
            if let Some(p) = std::env::var_os(var) {
                pythons.push(p.to_string_lossy().into_owned());
            }
        }
        pythons.push("python3".into());
        for py in pythons {
            let script = "import sys, os\nfor p in sys.path:\n    d = os.path.join(p or '.', 'nvidia')\n    if os.path.isdir(d): print(d)";
            let Ok(o) = std::process::Command::new(&py)
                .args(["-c", script])
                .output()
            else {
                continue;
            };
            for d in String::from_utf8_lossy(&o.stdout).lines() {
                for sub in ["cu13/lib", "cuda_nvrtc/lib"] {
                    c.push(format!("{d}/{sub}/libnvrtc.so.13"));
                }
            }
        }
        Ok(c)
    }

    #[cfg(unix)]
    fn find() -> Result<Nvrtc, String> {
        let tried = Self::candidates()?;
        for lib in &tried {
            let Ok(cl) = CString::new(lib.as_str()) else {
                continue;
            };
            // SAFETY: dlopen / dlsym of NVRTC's documented C API; RTLD_NOW | RTLD_LOCAL
            // (its builtins, which NVRTC opens by name, RTLD_GLOBAL first).
            unsafe {
                if let Some(dir) = Path::new(lib).parent().filter(|d| d.is_dir()) {
                    let builtins =
                        std::fs::read_dir(dir)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .find(|e| {
                                let n = e.file_name();
                                let n = n.to_string_lossy();
                                n.starts_with("libnvrtc-builtins.so.") && !n.contains(".alt.")
                            });
                    if let Some(b) = builtins {
                        let cb = CString::new(b.path().to_string_lossy().into_owned()).unwrap();
                        dlopen(cb.as_ptr(), 2 | 0x100);
                    }
                }
                let h = dlopen(cl.as_ptr(), 2);
                if h.is_null() {
                    continue;
                }
                let sym = |n: &str| {
                    let cn = CString::new(n).unwrap();
                    let p = dlsym(h, cn.as_ptr());
                    (!p.is_null()).then_some(p)
                };
                macro_rules! f {
                    ($n:literal, $t:ty) => {
                        match sym($n) {
                            Some(p) => std::mem::transmute::<*mut c_void, $t>(p),
                            None => continue,
                        }
                    };
                }
                let version = f!("nvrtcVersion", VersionFn);
                let (mut ma, mut mi) = (0, 0);
                if version(&mut ma, &mut mi) != 0 {
                    continue;
                }
                return Ok(Nvrtc {
                    version: (ma, mi),
                    create: f!("nvrtcCreateProgram", CreateFn),
                    compile: f!("nvrtcCompileProgram", CompileFn),
                    log_size: f!("nvrtcGetProgramLogSize", SizeFn),
                    log: f!("nvrtcGetProgramLog", GetFn),
                    cubin_size: f!("nvrtcGetCUBINSize", SizeFn),
                    cubin: f!("nvrtcGetCUBIN", GetFn),
                    destroy: f!("nvrtcDestroyProgram", DestroyFn),
                });
            }
        }
        Err("no NVRTC library (libnvrtc.so.13) found at build time".into())
    }

    #[cfg(not(unix))]
    fn find() -> Result<Nvrtc, String> {
        Err("ahead-of-time kernels are built on Linux only".into())
    }

    fn cubin(&self, src: &str, name: &str, arch: &str) -> Result<Vec<u8>, String> {
        let csrc = CString::new(src).unwrap();
        let cname = CString::new(format!("{name}.cu")).unwrap();
        let opts: Vec<CString> = insts::nvrtc_options(arch)
            .into_iter()
            .map(|o| CString::new(o).unwrap())
            .collect();
        let optp: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: NVRTC's C API with valid NUL-terminated strings; the program is
        // destroyed on every path.
        unsafe {
            let mut prog = std::ptr::null_mut();
            let null = std::ptr::null();
            if (self.create)(&mut prog, csrc.as_ptr(), cname.as_ptr(), 0, null, null) != 0 {
                return Err(format!("{name} ({arch}): nvrtcCreateProgram failed"));
            }
            let r = (self.compile)(prog, optp.len() as c_int, optp.as_ptr());
            let result = if r != 0 {
                let mut n = 0usize;
                (self.log_size)(prog, &mut n);
                let mut log = vec![0u8; n.max(1)];
                (self.log)(prog, log.as_mut_ptr() as *mut c_char);
                Err(format!(
                    "{name} ({arch}): NVRTC error {r}\n{}",
                    String::from_utf8_lossy(&log).trim_end_matches('\0')
                ))
            } else {
                let mut n = 0usize;
                let mut c = Vec::new();
                if (self.cubin_size)(prog, &mut n) == 0 {
                    c = vec![0u8; n];
                    if (self.cubin)(prog, c.as_mut_ptr() as *mut c_char) != 0 {
                        c.clear();
                    }
                }
                if c.is_empty() {
                    Err(format!("{name} ({arch}): no CUBIN from NVRTC"))
                } else {
                    Ok(c)
                }
            };
            (self.destroy)(&mut prog);
            result
        }
    }
}
