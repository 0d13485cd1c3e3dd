//! The kernels compiled ahead of time by the build (build.rs): CUBINs for every
//! instantiation of `instantiations::all` and every architecture of
//! `instantiations::ARCHS`, embedded in the library, each deflated on its own and inflated
//! when its module is first loaded; and the kernel sources, by file.

use super::instantiations::{arch_cc, fnv64};

/// One embedded CUBIN: kernel `name` for `arch`, built from the module source whose
/// FNV-1a hash is `src_hash`, deflated (a zlib stream) at `at..at + len` in the blob,
/// `size` bytes inflated.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Embedded {
    pub name: &'static str,
    pub arch: &'static str,
    pub src_hash: u64,
    pub at: usize,
    pub len: usize,
    pub size: usize,
}

static BLOB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.bin"));

/// 16 bytes at a 16-byte boundary: the unit of a CUBIN's buffer.
#[repr(C, align(16))]
#[derive(Copy, Clone)]
struct Chunk([u8; 16]);

/// An inflated CUBIN, 16-byte aligned (an ELF image, as the blob's CUBINs were aligned
/// before it was deflated). The driver reads it only while it loads the module.
pub(crate) struct Cubin {
    buf: Vec<Chunk>,
    len: usize,
}

impl std::ops::Deref for Cubin {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `buf` holds `len.div_ceil(16)` chunks of 16 initialised bytes without
        // padding (`repr(C)` of `[u8; 16]`), so its first `len` bytes are readable.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }
}

/// Inflate the zlib stream `zlib` of a CUBIN of `size` bytes; `None` where the stream is
/// damaged (a bad Adler-32, a truncated or overlong stream), never a panic.
pub(crate) fn inflate(zlib: &[u8], size: usize) -> Option<Cubin> {
    let mut buf = vec![Chunk([0; 16]); size.div_ceil(16)];
    // SAFETY: as in `Deref`, with `buf` borrowed mutably for the slice's life.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), size) };
    let n = miniz_oxide::inflate::decompress_slice_iter_to_slice(
        out,
        std::iter::once(zlib),
        true,
        false,
    )
    .ok()?;
    (n == size).then_some(Cubin { buf, len: size })
}

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

/// The embedded CUBIN of kernel `name` for a device of `arch`, inflated, if the build
/// embedded one built from exactly `src` (and it inflates whole: a damaged one is `None`,
/// and the caller compiles instead).
pub(crate) fn cubin(name: &str, arch: &str, src: &str) -> Option<Cubin> {
    let archs = archs();
    let pick = select_arch(&archs, arch)?;
    let e = INDEX.iter().find(|e| e.arch == pick && e.name == name)?;
    if e.src_hash != fnv64(&[src.as_bytes()]) {
        return None;
    }
    inflate(BLOB.get(e.at..e.at.checked_add(e.len)?)?, e.size)
}

/// The deflated CUBINs, one zlib stream after another (`INDEX` says where).
#[cfg(test)]
pub(crate) fn blob() -> &'static [u8] {
    BLOB
}

/// What the build embedded, in words (`batchlin info`).
pub(crate) fn summary() -> String {
    NOTE.to_string()
}
