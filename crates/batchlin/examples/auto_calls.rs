//! Per-call time of Auto-routed calls on host data, for A/B runs of the CPU driver (two
//! builds alternated in one sitting). Each line of SHAPES: `op batch m n` (op qr, eigh or
//! svd: the main variant, float32). Prints the median of five medians of 400 calls, us.
//!
//!     cargo run --release --example auto_calls -- SHAPES

use batchlin::problem::{Op, Options, Problem};
use batchlin::{timing, DType};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: auto_calls SHAPES (lines of `op batch m n`)");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("auto_calls: {path}: {e}");
        std::process::exit(2)
    });
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let dims: Vec<usize> = f.iter().skip(1).filter_map(|x| x.parse().ok()).collect();
        let op = match f.first() {
            Some(&"qr") => Op::Qr,
            Some(&"eigh") => Op::Eigh,
            Some(&"svd") => Op::Svd,
            _ => continue,
        };
        let [b, m, n] = dims[..] else { continue };
        let p = Problem::new(op.main_variant(), DType::F32, b, m, n);
        // Entries spread over [-1, 1); symmetric for eigh.
        let mut x: Vec<f32> = (0..b * m * n)
            .map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0)
            .collect();
        if op == Op::Eigh {
            for a in x.chunks_exact_mut(n * n) {
                for i in 0..n {
                    for j in 0..i {
                        a[i * n + j] = a[j * n + i];
                    }
                }
            }
        }
        let mut medians: Vec<f64> = (0..5)
            .map(
                |_| match timing::time_host::<f32>(&p, &Options::default(), &[&x], 400) {
                    Ok(t) => t.ms * 1e3,
                    Err(e) => {
                        eprintln!("auto_calls: {line}: {e}");
                        f64::NAN
                    }
                },
            )
            .collect();
        medians.sort_by(f64::total_cmp);
        println!("{} {b}x{m}x{n} {:.2}", f[0], medians[2]);
    }
}
