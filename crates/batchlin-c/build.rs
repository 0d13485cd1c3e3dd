//! Generates `batchlin.h` from the Rust sources with cbindgen, into OUT_DIR. The copy
//! checked in at `include/batchlin.h` must equal it: `header_is_current` in src/lib.rs
//! fails otherwise (`BATCHLIN_BLESS_HEADER=1 cargo test -p batchlin-c header` updates it).

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("generating batchlin.h: {e}"))
        .write_to_file(out.join("batchlin.h"));
}
