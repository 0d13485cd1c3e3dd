//! The kernels compiled ahead of time by the build (build.rs): CUBINs for every
//! instantiation of `instantiations::all` and every architecture of
//! `instantiations::ARCHS`, embedded in the library; and the kernel sources, by file.

use super::instantiations::{arch_cc, fnv64};

/// One embedded CUBIN: kernel `name` for `arch`, built from the module source whose
/// FNV-1a hash is `src_hash`, at `at..at + len` in the blob.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Embedded {
    pub name: &'static str,
    pub arch: &'static str,
    pub src_hash: u64,
    pub at: usize,
    pub len: usize,
}

#[repr(C, align(16))]
struct Aligned<B: ?Sized>(B);

static BLOB: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/kernels.bin")));

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// The source of `kernels/<file>`.
pub(crate) fn source(file: &str) -> &'static str {
    SOURCES
        .iter()
        .find(|s| s.0 == file)
        .map(|s| s.1)
        .unwrap_or_else(|| panic!("kernels/{file} is not a kernel source"))
}

/// The shipped architecture whose CUBIN runs on a device of `arch`: the same one, else
/// the nearest lower minor of the same major (CUBINs run on later minors of their major).
pub(crate) fn select_arch<'a>(shipped: &[&'a str], arch: &str) -> Option<&'a str> {
    let want = arch_cc(arch)?;
    shipped
        .iter()
        .filter_map(|&s| arch_cc(s).map(|cc| (cc, s)))
        .filter(|&(cc, _)| cc / 10 == want / 10 && cc <= want)
        .max_by_key(|&(cc, _)| cc)
        .map(|(_, s)| s)
}

/// The architectures the build embedded CUBINs for (none where it had no NVRTC).
pub(crate) fn archs() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = INDEX.iter().map(|e| e.arch).collect();
    v.sort_by_key(|a| arch_cc(a));
    v.dedup();
    v
}

/// The embedded CUBIN of kernel `name` for a device of `arch`, if the build embedded one
/// built from exactly `src`.
pub(crate) fn cubin(name: &str, arch: &str, src: &str) -> Option<&'static [u8]> {
    let archs = archs();
    let pick = select_arch(&archs, arch)?;
    let e = INDEX.iter().find(|e| e.arch == pick && e.name == name)?;
    (e.src_hash == fnv64(&[src.as_bytes()])).then(|| &BLOB.0[e.at..e.at + e.len])
}

/// What the build embedded, in words (`batchlin info`).
pub(crate) fn summary() -> String {
    NOTE.to_string()
}
