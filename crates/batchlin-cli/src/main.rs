//! The `batchlin` command.
//!
//! - `batchlin bench`: decompose the shapes of record on the best device present, check
//!   the accuracy of every result against float64, print a table.
//! - `batchlin info`: the devices found, the kernel registry and the plan each shape of
//!   record would get.
//! - `batchlin tune`: every kernel timed on a grid of shapes into a cost table a device.

mod check;
mod faer_loop;
mod plots;
mod tune;

use batchlin::{timing, Backend, DType, Op, Options, Place, Problem, Real, Tensor, Variant};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use std::process::ExitCode;
use std::time::Instant;

pub(crate) const SHAPES_OF_RECORD: &str = include_str!("../../../bench/shapes.txt");

const USAGE: &str = "usage:
  batchlin bench [--dtype f32|f64] [--backend NAME] [--kernel NAME] [--tile SPEC]
                 [--op qr|eigh|svd] [--variant NAME] [--shrink K] [--shapes FILE]
                 [--peer faer-loop]
      decompose the shapes of record (bench/shapes.txt), check accuracy, print a table;
      --variant times another variant of the op than its main one (qr-complete, qr-r,
        eigvalsh, svd-full, svdvals) on the op's shapes;
      --kernel forces a kernel of the registry (batchlin info lists them);
      --tile SPEC runs the CUDA tile QR kernel instantiated as SPEC
        (ROWSxCOLS/RGxCG/bMINB/cFCxQC/sSTAGE, e.g. 64x64/4x16/b8/c8x8/s0);
      --shrink K divides every batch by K (at least 1) for a quick run;
      --peer faer-loop times a plain loop of faer calls instead of batchlin
  batchlin info
      the devices found, the kernels embedded, the kernel registry and the plan each
      shape of record gets
  batchlin tune [--only qr|eigh|svd] [--budget 20m] [--out DIR] [--install]
                [--resume] [--grid-only] [--check TABLE]
      time every kernel on a grid of shapes (results checked first) into a cost table
      a device: the CPU's, and where there is a GPU the first one's (its kernels with
      the data there, and its copies to and from host memory as a transfer model), with
      the raw points and a report of the tables' regret on shapes held out of the grid
      (DIR: tune-<device>); --install puts the tables where the planner reads them
      (BATCHLIN_TABLE_DIR, else the cache directory's tables/); --resume goes on
      from the tables DIR holds (their points kept, their shapes not measured again
      but by kernels changed since: a tune over several runs); --grid-only gives the whole budget to the grid and
      checks nothing (a run of such a tune but the last); --check TABLE (this CPU's)
      measures no grid: the regret on held-out shapes, all the budget
  batchlin help | -h | --help
      this message";

#[derive(Clone, Debug)]
struct Shape {
    op: Op,
    batch: usize,
    m: usize,
    n: usize,
}

pub(crate) fn parse_shapes(text: &str) -> Result<Vec<Shape>, String> {
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
    variant: Option<Variant>,
    shrink: usize,
    shapes: Option<String>,
    faer_loop: bool,
    kernel: Option<&'static str>,
    tile: Option<batchlin::TileConfig>,
    tune: tune::TuneArgs,
}

/// What the command line asks for: a command to run, or the usage to print (to stdout,
/// exit 0) because help was asked for.
enum Parsed {
    Run(Box<Args>),
    Help,
}

/// Parse the arguments after the program name. `Err` is a message for stderr (exit 2).
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let mut it = args.into_iter();
    let cmd = it
        .next()
        .ok_or_else(|| format!("a command is needed\n{USAGE}"))?;
    match cmd.as_str() {
        "-h" | "--help" | "help" => return Ok(Parsed::Help),
        "bench" | "info" | "tune" => {}
        _ => return Err(format!("unknown command {cmd:?}\n{USAGE}")),
    }
    let mut a = Args {
        cmd,
        dtype: "f32".into(),
        backend: Backend::Auto,
        op: None,
        variant: None,
        shrink: 1,
        shapes: None,
        faer_loop: false,
        kernel: None,
        tile: None,
        tune: tune::TuneArgs {
            only: None,
            budget: std::time::Duration::from_secs(20 * 60),
            out: None,
            install: false,
            resume: false,
            check: None,
            grid_only: false,
        },
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
                let v = val()?;
                a.shrink = v
                    .parse()
                    .ok()
                    .filter(|&k: &usize| k > 0)
                    .ok_or_else(|| format!("--shrink needs a positive integer, got {v:?}"))?
            }
            "--shapes" => a.shapes = Some(val()?),
            "--variant" => {
                a.variant = Some(val()?.parse().map_err(|e: batchlin::Error| e.to_string())?)
            }
            "--tile" => a.tile = Some(val()?.parse().map_err(|e: batchlin::Error| e.to_string())?),
            "--kernel" => {
                let name = val()?;
                let k = batchlin::registry::KERNELS
                    .iter()
                    .find(|k| k.name == name)
                    .ok_or_else(|| {
                        format!("unknown kernel {name:?}: `batchlin info` lists them")
                    })?;
                a.kernel = Some(k.name);
            }
            "--peer" => match val()?.as_str() {
                "faer-loop" => a.faer_loop = true,
                p => return Err(format!("unknown peer {p:?}: expected faer-loop")),
            },
            "--only" if a.cmd == "tune" => {
                a.tune.only = Some(val()?.parse().map_err(|e: batchlin::Error| e.to_string())?)
            }
            "--budget" if a.cmd == "tune" => a.tune.budget = tune::parse_duration(&val()?)?,
            "--out" if a.cmd == "tune" => a.tune.out = Some(val()?.into()),
            "--install" if a.cmd == "tune" => a.tune.install = true,
            "--resume" if a.cmd == "tune" => a.tune.resume = true,
            "--grid-only" if a.cmd == "tune" => a.tune.grid_only = true,
            "--check" if a.cmd == "tune" => a.tune.check = Some(val()?.into()),
            "-h" | "--help" => return Ok(Parsed::Help),
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    if !matches!(a.dtype.as_str(), "f32" | "f64") {
        return Err(format!("--dtype must be f32 or f64, got {:?}", a.dtype));
    }
    if let Some(v) = a.variant {
        if a.faer_loop {
            return Err("--peer faer-loop times the main variants only, not --variant".into());
        }
        match a.op {
            None => a.op = Some(v.op()),
            Some(o) if o != v.op() => {
                return Err(format!(
                    "--variant {} is not a variant of --op {o}",
                    v.name()
                ))
            }
            _ => {}
        }
    }
    if a.tile.is_some() {
        match a.kernel {
            None | Some("tile") => a.kernel = Some("tile"),
            Some(k) => return Err(format!("--tile instantiates the tile kernel, not {k}")),
        }
    }
    Ok(Parsed::Run(Box::new(a)))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Parsed::Run(a)) => a,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
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
        "tune" => {
            let command = std::iter::once("batchlin".to_string())
                .chain(std::env::args().skip(1))
                .collect::<Vec<_>>()
                .join(" ");
            match tune::run(&args.tune, &command) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("batchlin tune: {e}");
                    ExitCode::FAILURE
                }
            }
        }
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
        _ => unreachable!("parse_args accepts bench, info and tune only"),
    }
}

fn info(shapes: &[Shape]) {
    println!("batchlin {}", env!("CARGO_PKG_VERSION"));
    println!("devices:");
    for d in batchlin::device::devices() {
        println!("  {:6} {} ({})", d.kind, d.name, d.detail);
    }
    if let Some(why) = batchlin::device::gpu_absent_reason() {
        println!("  no GPU: {why}");
    }
    let (archs, what) = batchlin::cuda::embedded_kernels();
    if archs.is_empty() {
        println!("CUDA kernels: {what} (compiled with NVRTC on first use)");
    } else {
        println!("CUDA kernels: embedded, {what}; other GPUs compile with NVRTC on first use");
    }
    println!("kernels (registry):");
    for k in batchlin::registry::KERNELS {
        println!(
            "  {:4} {:9} {:8} {}",
            k.op.name(),
            k.backend.name(),
            k.name,
            k.about
        );
    }
    println!("routing: {}", batchlin::policy_source());
    println!("plans (main variant of each op: QR reduced, eigh with vectors, the thin SVD):");
    println!(
        "| op | batch x m x n | host data, f32 | host data, f64 | GPU data, f32 | GPU data, f64 |"
    );
    println!("|---|---|---|---|---|---|");
    let gpu = batchlin::cuda::device(0).is_ok();
    for s in shapes {
        let plan = |dt, place: &Place| {
            batchlin::plan_for(s.op, dt, s.batch, s.m, s.n, place)
                .map(|p| p.to_string())
                .unwrap_or_else(|e| e.message().to_string())
        };
        let device = |dt| {
            if gpu {
                plan(dt, &GPU0)
            } else {
                "-".to_string()
            }
        };
        println!(
            "| {} | {}x{}x{} | {} | {} | {} | {} |",
            s.op,
            s.batch,
            s.m,
            s.n,
            plan(DType::F32, &Place::Host),
            plan(DType::F64, &Place::Host),
            device(DType::F32),
            device(DType::F64)
        );
    }
}

/// Data on CUDA device 0, work on its default stream.
const GPU0: Place = Place::Cuda {
    ordinal: 0,
    stream: batchlin::Stream::DEFAULT,
};

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

/// The plain-faer loop's outputs, allocated once and reused.
struct Outputs<T> {
    a: Tensor<T>,
    b: Tensor<T>,
    c: Option<Tensor<T>>,
}

fn alloc_outputs<T: Real>(s: &Shape) -> batchlin::Result<Outputs<T>> {
    let (b, m, n) = (s.batch, s.m, s.n);
    let k = m.min(n);
    Ok(match s.op {
        Op::Qr => Outputs {
            a: Tensor::zeros(&[b, m, k])?,
            b: Tensor::zeros(&[b, k, n])?,
            c: None,
        },
        Op::Eigh => Outputs {
            a: Tensor::zeros(&[b, n])?,
            b: Tensor::zeros(&[b, n, n])?,
            c: None,
        },
        Op::Svd => Outputs {
            a: Tensor::zeros(&[b, m, k])?,
            b: Tensor::zeros(&[b, k])?,
            c: Some(Tensor::zeros(&[b, k, n])?),
        },
    })
}

/// The plain-faer peer, timed by wall clock (median over about a second of calls).
fn time_faer_loop<T: Real>(s: &Shape, inputs: &[Tensor<T>]) -> batchlin::Result<Timed<T>> {
    let mut o = alloc_outputs::<T>(s)?;
    let mut run = |a: &Tensor<T>| faer_loop::run(s.op, a, &mut o.a, &mut o.b, o.c.as_mut());
    let t0 = Instant::now();
    run(&inputs[0]);
    let reps = auto_reps(t0.elapsed().as_secs_f64());
    let mut times = vec![];
    for r in 0..reps {
        let t = Instant::now();
        run(&inputs[r % inputs.len()]);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(Timed {
        what: "faer-loop".into(),
        ms: times[times.len() / 2],
        reps,
        last_input: (reps - 1) % inputs.len(),
        outputs: [Some(o.a), Some(o.b), o.c].into_iter().flatten().collect(),
        info_ok: true,
    })
}

/// Calls to time after a first one of `first` seconds: about a second's worth, at least 3
/// (one for calls over a second).
fn auto_reps(first: f64) -> usize {
    if first > 1.0 {
        1
    } else {
        ((1.0 / first.max(1e-6)) as usize).clamp(3, 200)
    }
}

/// One shape timed: what ran, the median, and the last call's outputs for the check.
struct Timed<T> {
    what: String,
    ms: f64,
    reps: usize,
    last_input: usize,
    outputs: Vec<Tensor<T>>,
    info_ok: bool,
}

/// batchlin on one shape through the timing harness: on the GPU with device-resident
/// data where the planner has a GPU kernel for it (as a GPU program holds its data), else
/// on host data.
fn time_batchlin<T: Real>(
    s: &Shape,
    v: Variant,
    opts: &Options,
    inputs: &[Tensor<T>],
) -> batchlin::Result<Timed<T>> {
    let p = Problem::new(v, T::DTYPE, s.batch, s.m, s.n);
    let refs: Vec<&[T]> = inputs.iter().map(|t| &t.data[..]).collect();
    let on_gpu = matches!(opts.backend, Backend::Auto | Backend::Cuda)
        && batchlin::plan(&p, &GPU0, opts).is_ok();
    let t = if on_gpu {
        let reps = if s.m * s.n >= 1 << 20 { 5 } else { 20 };
        timing::time_device::<T>(&p, 0, opts, &refs, reps)?
    } else {
        timing::time_host::<T>(&p, opts, &refs, 0)?
    };
    Ok(Timed {
        what: t.plan.to_string(),
        ms: t.ms,
        reps: t.reps,
        last_input: t.last_input,
        info_ok: t.info.iter().all(|i| i.is_ok()),
        outputs: t.outputs,
    })
}

fn bench<T: Real>(args: &Args, shapes: &[Shape]) -> bool {
    let mut rng = StdRng::seed_from_u64(20261130);
    let opts = Options {
        backend: args.backend,
        kernel: args.kernel,
        params: batchlin::Params {
            qr_tile: args.tile,
            ..batchlin::Params::default()
        },
    };
    println!(
        "batchlin bench: {} on {}; routing: {}",
        T::DTYPE,
        batchlin::device::cpu_model(),
        batchlin::policy_source()
    );
    match batchlin::device::gpu_absent_reason() {
        Some(why) => println!("no GPU ({why}): running on the CPU"),
        None => println!(
            "GPU: what has a GPU kernel runs there on device-resident data (CUDA events); the rest on the CPU"
        ),
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
        let v = args.variant.unwrap_or(s.op.main_variant());
        let head = format!(
            "| {} | {}x{}x{} | {} |",
            v.name(),
            s.batch,
            s.m,
            s.n,
            T::DTYPE
        );
        let inputs = make_inputs::<T>(&s, 2, &mut rng);
        let timed = if args.faer_loop {
            time_faer_loop(&s, &inputs)
        } else {
            time_batchlin(&s, v, &opts, &inputs)
        };
        let t = match timed {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e}");
                rows.push(format!("{head} error: {} | | | | |", e.message()));
                all_ok = false;
                continue;
            }
        };
        let o = &t.outputs;
        let err = check::max_error(v, &inputs[t.last_input], o, 8);
        let ok = err <= check::bound::<T>(s.op, s.m.max(s.n)) && t.info_ok;
        all_ok &= ok;
        eprintln!("{:.3} ms, error {err:.1e}", t.ms);
        rows.push(format!(
            "{head} {} | {:.3} | {} | {:.1e} | {} |",
            t.what,
            t.ms,
            t.reps,
            err,
            if ok { "ok" } else { "FAIL" }
        ));
    }
    println!("| op | batch x m x n | dtype | plan | ms a call | calls | error | accuracy |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!("{}", footnote::<T>());
    all_ok
}

/// What the bench table's columns mean, and the accuracy bound each result is held to.
fn footnote<T: Real>() -> String {
    let (qr, other) = (check::bound::<T>(Op::Qr, 1), check::bound::<T>(Op::Eigh, 1));
    format!(
        "Columns: plan = the backend and kernel that ran (and why: [rules] chosen by the \
         planner's rules, [table: T predicted] by this machine's cost table, [forced] by \
         an option); ms a call = the median time of one call over the \
         whole batch ({timing}); calls = how many calls were timed; error = the largest \
         relative (Frobenius) residual or orthogonality error over up to 8 matrices of \
         the shape, computed against float64; accuracy = ok when that error is within \
         the accuracy floor for {dt}: {qr:.0e} for QR, {other:.0e} for eigh and the SVD \
         (relative to ||A||; orthogonality allowed sqrt(n / 256) more above n = 256), and \
         no matrix flagged non-finite or not converged; FAIL otherwise.",
        timing = "GPU rows on device-resident data timed with CUDA events, CPU rows by wall clock into fresh outputs as NumPy's",
        dt = T::DTYPE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Parsed, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn help_is_asked_for_not_an_error() {
        for h in [
            &["--help"][..],
            &["-h"],
            &["help"],
            &["bench", "--help"],
            &["info", "-h"],
        ] {
            assert!(matches!(parse(h), Ok(Parsed::Help)), "{h:?}");
        }
        let e = parse(&[]).err().unwrap();
        assert!(e.contains("usage:"), "{e}");
        let e = parse(&["frobnicate"]).err().unwrap();
        assert!(e.starts_with("unknown command \"frobnicate\""), "{e}");
    }

    #[test]
    fn shrink_must_be_a_positive_integer() {
        for bad in ["0", "-1", "x", ""] {
            let e = parse(&["bench", "--shrink", bad]).err().unwrap();
            assert!(
                e.contains("--shrink needs a positive integer"),
                "{bad}: {e}"
            );
        }
        let Ok(Parsed::Run(a)) = parse(&["bench", "--shrink", "16"]) else {
            panic!("--shrink 16 refused")
        };
        assert_eq!(a.shrink, 16);
    }

    #[test]
    fn a_variant_picks_its_op_and_refuses_another() {
        let Ok(Parsed::Run(a)) = parse(&["bench", "--variant", "eigvalsh"]) else {
            panic!("--variant eigvalsh refused")
        };
        assert_eq!((a.op, a.variant), (Some(Op::Eigh), Some(Variant::Eigvalsh)));
        let e = parse(&["bench", "--op", "qr", "--variant", "svdvals"])
            .err()
            .unwrap();
        assert!(e.contains("not a variant of --op qr"), "{e}");
        assert!(parse(&["bench", "--variant", "nope"]).is_err());
        assert!(parse(&["bench", "--variant", "svdvals", "--peer", "faer-loop"]).is_err());
    }

    #[test]
    fn tune_takes_its_own_flags_and_bench_refuses_them() {
        let Ok(Parsed::Run(a)) = parse(&[
            "tune",
            "--only",
            "qr",
            "--budget",
            "90s",
            "--out",
            "/tmp/t",
            "--install",
            "--resume",
            "--grid-only",
        ]) else {
            panic!("tune's flags refused")
        };
        assert!(a.tune.resume && a.tune.grid_only);
        assert_eq!(a.tune.only, Some(Op::Qr));
        assert_eq!(a.tune.budget, std::time::Duration::from_secs(90));
        assert_eq!(a.tune.out.as_deref(), Some(std::path::Path::new("/tmp/t")));
        assert!(a.tune.install);
        let Ok(Parsed::Run(a)) = parse(&["tune", "--check", "t.toml"]) else {
            panic!("--check refused")
        };
        assert_eq!(
            a.tune.check.as_deref(),
            Some(std::path::Path::new("t.toml"))
        );
        let e = parse(&["tune", "--budget", "soon"]).err().unwrap();
        assert!(e.contains("--budget"), "{e}");
        let e = parse(&["bench", "--budget", "30s"]).err().unwrap();
        assert!(e.starts_with("unknown argument \"--budget\""), "{e}");
    }

    #[test]
    fn footnote_explains_columns_and_threshold_and_is_no_error() {
        let f = footnote::<f32>();
        assert!(!f.to_lowercase().starts_with("error"), "{f}");
        for col in ["plan", "ms a call", "calls", "error", "accuracy"] {
            assert!(f.contains(&format!("{col} = ")), "{col} unexplained: {f}");
        }
        assert!(f.contains("1e-4") && f.contains("2e-5"), "{f}");
        assert!(footnote::<f64>().contains("float64"));
    }
}
