//! The `batchlin` command.
//!
//! - `batchlin bench`: decompose the shapes of record on the best device present, check
//!   the accuracy of every result against float64, print a table.
//! - `batchlin info`: the devices found and the backend each shape of record would get.

mod check;
mod faer_loop;

use batchlin::{Backend, BatchMut, BatchRef, Info, Op, Options, QrMode, Real, Tensor, Uplo};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use std::process::ExitCode;
use std::time::Instant;

const SHAPES_OF_RECORD: &str = include_str!("../../../bench/shapes.txt");

const USAGE: &str = "usage:
  batchlin bench [--dtype f32|f64] [--backend NAME] [--op qr|eigh|svd] [--shrink K] [--shapes FILE]
                 [--peer faer-loop]
      decompose the shapes of record (bench/shapes.txt), check accuracy, print a table;
      --shrink K divides every batch by K (at least 1) for a quick run;
      --peer faer-loop times a plain loop of faer calls instead of batchlin
  batchlin info
      the devices found and the backend each shape of record would get";

#[derive(Clone, Debug)]
struct Shape {
    op: Op,
    batch: usize,
    m: usize,
    n: usize,
}

fn parse_shapes(text: &str) -> Result<Vec<Shape>, String> {
    let mut out = vec![];
    for (no, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = || {
            format!(
                "shapes line {}: expected `op batch m n`, got {line:?}",
                no + 1
            )
        };
        if f.len() != 4 {
            return Err(bad());
        }
        let op: Op = f[0].parse().map_err(|e: batchlin::Error| e.to_string())?;
        let num = |s: &str| s.parse::<usize>().map_err(|_| bad());
        out.push(Shape {
            op,
            batch: num(f[1])?,
            m: num(f[2])?,
            n: num(f[3])?,
        });
    }
    Ok(out)
}

struct Args {
    cmd: String,
    dtype: String,
    backend: Backend,
    op: Option<Op>,
    shrink: usize,
    shapes: Option<String>,
    faer_loop: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let cmd = it.next().ok_or_else(|| USAGE.to_string())?;
    let mut a = Args {
        cmd,
        dtype: "f32".into(),
        backend: Backend::Auto,
        op: None,
        shrink: 1,
        shapes: None,
        faer_loop: false,
    };
    while let Some(flag) = it.next() {
        let mut val = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--dtype" => a.dtype = val()?,
            "--backend" => {
                a.backend = val()?.parse().map_err(|e: batchlin::Error| e.to_string())?
            }
            "--op" => a.op = Some(val()?.parse().map_err(|e: batchlin::Error| e.to_string())?),
            "--shrink" => {
                a.shrink = val()?
                    .parse()
                    .map_err(|_| "--shrink needs a positive integer".to_string())?
            }
            "--shapes" => a.shapes = Some(val()?),
            "--peer" => match val()?.as_str() {
                "faer-loop" => a.faer_loop = true,
                p => return Err(format!("unknown peer {p:?}: expected faer-loop")),
            },
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    if !matches!(a.dtype.as_str(), "f32" | "f64") {
        return Err(format!("--dtype must be f32 or f64, got {:?}", a.dtype));
    }
    a.shrink = a.shrink.max(1);
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let text = match &args.shapes {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cannot read {p}: {e}");
                return ExitCode::from(2);
            }
        },
        None => SHAPES_OF_RECORD.to_string(),
    };
    let shapes = match parse_shapes(&text) {
        Ok(s) => s
            .into_iter()
            .filter(|s| args.op.is_none_or(|o| o == s.op))
            .collect::<Vec<_>>(),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match args.cmd.as_str() {
        "info" => {
            info(&shapes);
            ExitCode::SUCCESS
        }
        "bench" => {
            let ok = if args.dtype == "f64" {
                bench::<f64>(&args, &shapes)
            } else {
                bench::<f32>(&args, &shapes)
            };
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!("unknown command {:?}\n{USAGE}", args.cmd);
            ExitCode::from(2)
        }
    }
}

fn info(shapes: &[Shape]) {
    println!("batchlin {}", env!("CARGO_PKG_VERSION"));
    println!("devices:");
    for d in batchlin::device::devices() {
        println!("  {:5} {} ({})", d.kind, d.name, d.detail);
    }
    if let Some(why) = batchlin::device::gpu_absent_reason() {
        println!("  no GPU: {why}");
    }
    println!("routing: {}", batchlin::policy_source());
    let gpu = batchlin::cuda::CudaBackend::get().ok();
    println!(
        "| op | batch x m x n | host data, f32 | host data, f64 | GPU data, f32 | GPU data, f64 |"
    );
    println!("|---|---|---|---|---|---|");
    for s in shapes {
        let host = |dt| {
            batchlin::backend_for(s.op, dt, s.batch, s.m, s.n)
                .map(|b| b.to_string())
                .unwrap_or_else(|e| e.to_string())
        };
        // Data already on the GPU: QR runs there (the kernel its shape gets); eigh and
        // SVD have no GPU backend yet.
        let device = |f64: bool| match (&gpu, s.op) {
            (None, _) => "-".to_string(),
            (Some(be), Op::Qr) => {
                let k = s.m.min(s.n);
                let kernel = if f64 {
                    be.qr_kernel_for::<f64>(s.batch, s.m, s.n, Some(k))
                } else {
                    be.qr_kernel_for::<f32>(s.batch, s.m, s.n, Some(k))
                };
                format!("cuda ({})", kernel.name())
            }
            (Some(_), _) => "not yet".to_string(),
        };
        println!(
            "| {} | {}x{}x{} | {} | {} | {} | {} |",
            s.op,
            s.batch,
            s.m,
            s.n,
            host(batchlin::DType::F32),
            host(batchlin::DType::F64),
            device(false),
            device(true)
        );
    }
}

/// Random inputs: normal entries, symmetrised for eigh. Several copies so that repeated
/// calls do not all read one buffer from cache.
fn make_inputs<T: Real>(s: &Shape, copies: usize, rng: &mut StdRng) -> Vec<Tensor<T>> {
    (0..copies)
        .map(|_| {
            let shape = [s.batch, s.m, s.n];
            let mut data: Vec<T> = (0..s.batch * s.m * s.n)
                .map(|_| T::from_f64(rng.sample::<f64, _>(StandardNormal)))
                .collect();
            if s.op == Op::Eigh {
                let n = s.n;
                for b in 0..s.batch {
                    let a = &mut data[b * n * n..(b + 1) * n * n];
                    for i in 0..n {
                        for j in 0..i {
                            let v = (a[i * n + j] + a[j * n + i]) * T::HALF;
                            a[i * n + j] = v;
                            a[j * n + i] = v;
                        }
                    }
                }
            }
            Tensor::from_vec(data, &shape).expect("shape matches data")
        })
        .collect()
}

/// Outputs of one call, allocated once and reused (as a program with a warm allocator).
struct Outputs<T> {
    a: Tensor<T>,
    b: Option<Tensor<T>>,
    c: Option<Tensor<T>>,
    info: Vec<Info>,
}

fn alloc_outputs<T: Real>(s: &Shape) -> batchlin::Result<Outputs<T>> {
    let (b, m, n) = (s.batch, s.m, s.n);
    let k = m.min(n);
    Ok(match s.op {
        Op::Qr => Outputs {
            a: Tensor::zeros(&[b, m, k])?,
            b: Some(Tensor::zeros(&[b, k, n])?),
            c: None,
            info: vec![Info::OK; b],
        },
        Op::Eigh => Outputs {
            a: Tensor::zeros(&[b, n])?,
            b: Some(Tensor::zeros(&[b, n, n])?),
            c: None,
            info: vec![Info::OK; b],
        },
        Op::Svd => Outputs {
            a: Tensor::zeros(&[b, m, k])?,
            b: Some(Tensor::zeros(&[b, k])?),
            c: Some(Tensor::zeros(&[b, k, n])?),
            info: vec![Info::OK; b],
        },
    })
}

fn run_once<T: Real>(
    s: &Shape,
    a: &Tensor<T>,
    o: &mut Outputs<T>,
    opts: &Options,
    faer_loop: bool,
) -> batchlin::Result<()> {
    if faer_loop {
        faer_loop::run(
            s.op,
            a,
            &mut o.a,
            o.b.as_mut().expect("second output"),
            o.c.as_mut(),
        );
        return Ok(());
    }
    let a: &BatchRef<T> = &a.view();
    match s.op {
        Op::Qr => {
            let mut q = o.a.view_mut();
            let mut r = o.b.as_mut().expect("R").view_mut();
            batchlin::qr_into(
                a,
                QrMode::Reduced,
                Some(&mut q),
                &mut r,
                Some(&mut o.info),
                opts,
            )
        }
        Op::Eigh => {
            let mut w: BatchMut<T> = o.a.view_mut_vectors();
            let mut v = o.b.as_mut().expect("V").view_mut();
            batchlin::eigh_into(
                a,
                Uplo::Lower,
                &mut w,
                Some(&mut v),
                Some(&mut o.info),
                opts,
            )
        }
        Op::Svd => {
            let mut u = o.a.view_mut();
            let mut sv = o.b.as_mut().expect("S").view_mut_vectors();
            let mut vh = o.c.as_mut().expect("Vh").view_mut();
            batchlin::svd_into(
                a,
                false,
                Some(&mut u),
                &mut sv,
                Some(&mut vh),
                Some(&mut o.info),
                opts,
            )
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite times"));
    v[v.len() / 2]
}

/// One shape's QR on the GPU, timed with CUDA events on device-resident inputs: the
/// table row and whether it met the accuracy bound.
fn bench_qr_gpu<T: Real>(s: &Shape, inputs: &[Tensor<T>]) -> (String, bool) {
    let refs: Vec<&[T]> = inputs.iter().map(|t| &t.data[..]).collect();
    let reps = if s.m * s.n >= 1 << 20 { 5 } else { 20 };
    let head = format!("| {} | {}x{}x{} | {} |", s.op, s.batch, s.m, s.n, T::DTYPE);
    let t = match batchlin::cuda::bench::time_qr_device::<T>(s.batch, s.m, s.n, &refs, reps) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return (format!("{head} cuda | error: {e} | | | |"), false);
        }
    };
    let k = s.m.min(s.n);
    let q = Tensor::from_vec(t.q, &[s.batch, s.m, k]).expect("Q shape");
    let r = Tensor::from_vec(t.r, &[s.batch, k, s.n]).expect("R shape");
    let err = check::max_error(&s.op, &inputs[t.last_input], &q, Some(&r), None, 8);
    let ok = err <= check::bound::<T>(s.op, s.m.max(s.n)) && t.info.iter().all(|i| i.is_ok());
    eprintln!("{:.3} ms, error {err:.1e}", t.ms);
    let row = format!(
        "{head} cuda ({}) | {:.3} | {} | {:.1e} | {} |",
        t.kernel.name(),
        t.ms,
        reps,
        err,
        if ok { "ok" } else { "FAIL" }
    );
    (row, ok)
}

fn bench<T: Real>(args: &Args, shapes: &[Shape]) -> bool {
    let mut rng = StdRng::seed_from_u64(20261130);
    let opts = Options::with_backend(args.backend);
    println!(
        "batchlin bench: {} on {}; routing: {}",
        T::DTYPE,
        batchlin::device::cpu_model(),
        batchlin::policy_source()
    );
    if let Some(why) = batchlin::device::gpu_absent_reason() {
        println!("no GPU ({why}): running on the CPU");
    } else {
        println!("GPU: QR on the GPU (device-resident data, CUDA events); eigh and SVD on the CPU");
    }
    let mut rows = vec![];
    let mut all_ok = true;
    for (i, s0) in shapes.iter().enumerate() {
        let s = Shape {
            batch: (s0.batch / args.shrink).max(1),
            ..s0.clone()
        };
        eprint!(
            "[{}/{}] {} {}x{}x{} ... ",
            i + 1,
            shapes.len(),
            s.op,
            s.batch,
            s.m,
            s.n
        );
        let backend = match args.backend {
            _ if args.faer_loop => Ok("faer-loop".to_string()),
            Backend::Auto => {
                batchlin::backend_for(s.op, T::DTYPE, s.batch, s.m, s.n).map(|b| b.to_string())
            }
            b => Ok(b.to_string()),
        }
        .unwrap_or_else(|e| e.to_string());
        let inputs = make_inputs::<T>(&s, 2, &mut rng);
        // QR on a GPU runs on device-resident data, as a GPU program has it.
        let on_gpu = !args.faer_loop
            && s.op == Op::Qr
            && matches!(args.backend, Backend::Auto | Backend::Cuda)
            && batchlin::device::gpu_absent_reason().is_none();
        if on_gpu {
            let (row, ok) = bench_qr_gpu(&s, &inputs);
            all_ok &= ok;
            rows.push(row);
            continue;
        }
        let mut outs = match alloc_outputs::<T>(&s) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{e}");
                all_ok = false;
                continue;
            }
        };
        // Warm-up, then repeat until about a second has passed (at least 3 timed calls
        // for fast shapes, one for slow ones).
        let t0 = Instant::now();
        if let Err(e) = run_once(&s, &inputs[0], &mut outs, &opts, args.faer_loop) {
            eprintln!("{e}");
            rows.push(format!(
                "| {} | {}x{}x{} | {} | {} | error: {e} | | |",
                s.op,
                s.batch,
                s.m,
                s.n,
                T::DTYPE,
                backend
            ));
            all_ok = false;
            continue;
        }
        let first = t0.elapsed().as_secs_f64();
        let reps = if first > 1.0 {
            1
        } else {
            ((1.0 / first.max(1e-6)) as usize).clamp(3, 200)
        };
        let mut times = vec![];
        for r in 0..reps {
            let a = &inputs[r % inputs.len()];
            let t = Instant::now();
            run_once(&s, a, &mut outs, &opts, args.faer_loop).expect("same call as the warm-up");
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let ms = median(times);
        // The last call read inputs[(reps - 1) % 2]; check its outputs.
        let a = &inputs[(reps - 1) % inputs.len()];
        let err = check::max_error(&s.op, a, &outs.a, outs.b.as_ref(), outs.c.as_ref(), 8);
        let bound = check::bound::<T>(s.op, s.m.max(s.n));
        let ok = err <= bound && outs.info.iter().all(|i| i.is_ok());
        all_ok &= ok;
        eprintln!("{ms:.3} ms, error {err:.1e}");
        rows.push(format!(
            "| {} | {}x{}x{} | {} | {} | {:.3} | {} | {:.1e} | {} |",
            s.op,
            s.batch,
            s.m,
            s.n,
            T::DTYPE,
            backend,
            ms,
            reps,
            err,
            if ok { "ok" } else { "FAIL" }
        ));
    }
    println!("| op | batch x m x n | dtype | backend | ms a call | calls | error | accuracy |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!("error: the largest relative residual or orthogonality error over up to 8 matrices a shape, against float64");
    all_ok
}
