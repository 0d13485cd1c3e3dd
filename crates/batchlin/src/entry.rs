//! The one entry into the core: every front door (the Rust `*_into` functions, the C API,
//! the Python module, the XLA handlers) describes a call as a [`Request`] (operation,
//! input and output views on the host or a device, info words, place) and passes it to
//! [`run`], for device data as for host data. `run` checks the request, asks the planner
//! for a plan and hands the request to the plan's backend (docs/ARCHITECTURE.md).

use crate::error::{Error, Result};
use crate::info::Info;
use crate::place::Place;
use crate::plan::{self, Plan};
use crate::problem::{Backend, Operation, Options, Problem, QrMode};
use crate::scalar::Real;
use crate::view::{BatchMut, BatchRef, Layout, Memory};

/// The outputs of a call, matching its operation.
#[derive(Debug)]
pub enum Outputs<'a, T> {
    /// `q` is None for `QrMode::R`.
    Qr {
        q: Option<BatchMut<'a, T>>,
        r: BatchMut<'a, T>,
    },
    /// `w` a batch of vectors; `v` None for eigvalsh.
    Eigh {
        w: BatchMut<'a, T>,
        v: Option<BatchMut<'a, T>>,
    },
    /// `s` a batch of vectors; `u`, `vh` None for svdvals.
    Svd {
        u: Option<BatchMut<'a, T>>,
        s: BatchMut<'a, T>,
        vh: Option<BatchMut<'a, T>>,
    },
}

impl<'a, T> Outputs<'a, T> {
    /// Every output view present.
    pub(crate) fn views(&self) -> Vec<&BatchMut<'a, T>> {
        match self {
            Outputs::Qr { q, r } => q.iter().chain([r]).collect(),
            Outputs::Eigh { w, v } => [w].into_iter().chain(v.iter()).collect(),
            Outputs::Svd { u, s, vh } => u.iter().chain([s]).chain(vh.iter()).collect(),
        }
    }

    /// Every output view present, writable.
    pub(crate) fn views_mut(&mut self) -> Vec<&mut BatchMut<'a, T>> {
        match self {
            Outputs::Qr { q, r } => q.iter_mut().chain([r]).collect(),
            Outputs::Eigh { w, v } => [w].into_iter().chain(v.iter_mut()).collect(),
            Outputs::Svd { u, s, vh } => u.iter_mut().chain([s]).chain(vh.iter_mut()).collect(),
        }
    }
}

/// One output of an operation, in the order every binding returns them (Q, R; W, V;
/// U, S, Vh). `shape` None: this variant does not
/// compute it (Q of mode "r", eigenvectors of eigvalsh, U and Vh of svdvals).
#[derive(Clone, Debug)]
pub struct Slot {
    pub name: &'static str,
    pub shape: Option<Vec<usize>>,
    /// A batch of vectors `[..., K]` (eigenvalues, singular values).
    pub vectors: bool,
}

pub(crate) fn shape_of(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend_from_slice(tail);
    s
}

/// The output slots of `op` on `[batch..., m, n]` input (checks what the shape must be).
pub fn slots(op: Operation, batch: &[usize], m: usize, n: usize) -> Result<Vec<Slot>> {
    let k = m.min(n);
    let slot = |name, present: bool, tail: &[usize], vectors| Slot {
        name,
        shape: present.then(|| shape_of(batch, tail)),
        vectors,
    };
    Ok(match op {
        Operation::Qr(mode) => {
            let (q_cols, r_rows) = mode.output_dims(m, n);
            vec![
                slot("Q", mode != QrMode::R, &[m, q_cols], false),
                slot("R", true, &[r_rows, n], false),
            ]
        }
        Operation::Eigh { vectors, .. } => {
            if m != n {
                return Err(Error::Shape(format!(
                    "eigh needs square matrices [..., N, N], got [..., {m}, {n}]"
                )));
            }
            vec![
                slot("eigenvalues", true, &[n], true),
                slot("eigenvectors", vectors, &[n, n], false),
            ]
        }
        Operation::Svd {
            full_matrices,
            vectors,
        } => {
            let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
            vec![
                slot("U", vectors, &[m, u_cols], false),
                slot("S", true, &[k], true),
                slot("Vh", vectors, &[vh_rows, n], false),
            ]
        }
    })
}

/// The core's outputs from one view per present slot, in slot order.
pub fn assemble<'a, T>(op: Operation, views: Vec<BatchMut<'a, T>>) -> Result<Outputs<'a, T>> {
    let mut it = views.into_iter();
    let mut next = || {
        it.next()
            .ok_or_else(|| Error::Argument("too few output buffers for the operation".into()))
    };
    Ok(match op {
        Operation::Qr(mode) => {
            let q = if mode == QrMode::R {
                None
            } else {
                Some(next()?)
            };
            Outputs::Qr { q, r: next()? }
        }
        Operation::Eigh { vectors, .. } => {
            let w = next()?;
            let v = if vectors { Some(next()?) } else { None };
            Outputs::Eigh { w, v }
        }
        Operation::Svd { vectors: false, .. } => Outputs::Svd {
            u: None,
            s: next()?,
            vh: None,
        },
        Operation::Svd { .. } => {
            let u = next()?;
            let s = next()?;
            Outputs::Svd {
                u: Some(u),
                s,
                vh: Some(next()?),
            }
        }
    })
}

/// `len` info words (u32, [`Info`] bits) in the memory of CUDA device `ordinal`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeviceWords {
    pub(crate) addr: u64,
    pub(crate) ordinal: usize,
    pub(crate) len: usize,
}

impl DeviceWords {
    /// # Safety
    /// `ptr` must be device memory of device `ordinal` holding `len` u32 words, writable
    /// by the queued work until it has run.
    pub unsafe fn new(ptr: *mut u32, ordinal: usize, len: usize) -> Result<DeviceWords> {
        if ptr.is_null() && len > 0 {
            return Err(Error::Argument("info pointer is null".into()));
        }
        Ok(DeviceWords {
            addr: ptr as u64,
            ordinal,
            len,
        })
    }
}

/// Where the per-matrix info words go.
#[derive(Debug)]
pub enum InfoOut<'a> {
    Host(&'a mut [Info]),
    Device(DeviceWords),
}

/// One call, as every front door describes it.
#[derive(Debug)]
pub struct Request<'a, T> {
    pub operation: Operation,
    pub a: BatchRef<'a, T>,
    pub out: Outputs<'a, T>,
    /// None: the caller does not want them.
    pub info: Option<InfoOut<'a>>,
    pub place: Place,
}

impl<T: Real> Request<'_, T> {
    /// The problem this request poses.
    pub fn problem(&self) -> Problem {
        let l = self.a.layout();
        Problem::new(
            self.operation.variant(),
            T::DTYPE,
            l.batch(),
            l.rows,
            l.cols,
        )
    }
}

/// Check `req`, plan it and run it. Host data: returns when the outputs are written. Device
/// data: returns once the work is queued on the place's stream.
pub fn run<T: Real>(mut req: Request<'_, T>, opts: &Options) -> Result<()> {
    check(&req)?;
    let pinned = match req.place {
        Place::Host => crate::cuda::pinned(&req),
        Place::Cuda { .. } => Default::default(),
    };
    let plan = plan::plan_call(&req.problem(), &req.place, opts, pinned)?;
    match execute(&plan, &mut req) {
        // The GPU's copies fail before the outputs are written; the CPU writes them all.
        Err(e) if plan.cpu_takes_over(&e) => {
            let table = crate::table::loaded().model.as_ref();
            let cpu = plan::plan_with(&req.problem(), &Place::Host, opts, table, None)?;
            execute(&cpu, &mut req)
        }
        done => done,
    }
}

/// Run `req` (already checked) by `plan`.
pub(crate) fn execute<T: Real>(plan: &Plan, req: &mut Request<'_, T>) -> Result<()> {
    match plan.backend {
        Backend::CpuSmall | Backend::CpuFaer => crate::cpu::run(plan, req),
        Backend::Cuda => crate::cuda::run(plan, req),
        Backend::Auto => Err(Error::Argument("internal: a plan names its backend".into())),
    }
}

fn expect_shape(what: &str, got: &Layout, batch: &[usize], rows: usize, cols: usize) -> Result<()> {
    if got.batch_shape != batch || got.rows != rows || got.cols != cols {
        let mut want = batch.to_vec();
        want.extend([rows, cols]);
        return Err(Error::Output(format!(
            "{what} must have shape {want:?}, got {:?}",
            got.shape()
        )));
    }
    Ok(())
}

fn expect_vectors(what: &str, got: &Layout, batch: &[usize], len: usize) -> Result<()> {
    if got.batch_shape != batch || got.rows != 1 || got.cols != len {
        let mut want = batch.to_vec();
        want.push(len);
        let mut have = got.batch_shape.clone();
        have.push(got.cols);
        return Err(Error::Output(format!(
            "{what} must have shape {want:?}, got {have:?}"
        )));
    }
    Ok(())
}

pub(crate) fn expect_square(op: &str, l: &Layout) -> Result<()> {
    if l.rows != l.cols {
        return Err(Error::Shape(format!(
            "{op} needs square matrices [..., N, N], got [..., {}, {}]",
            l.rows, l.cols
        )));
    }
    Ok(())
}

/// Shapes of the outputs against the operation, then where every buffer lies against
/// the place.
fn check<T: Real>(req: &Request<'_, T>) -> Result<()> {
    let l = req.a.layout();
    let (m, n, bs) = (l.rows, l.cols, &l.batch_shape);
    let k = m.min(n);
    match (&req.operation, &req.out) {
        (Operation::Qr(mode), Outputs::Qr { q, r }) => {
            let (q_cols, r_rows) = mode.output_dims(m, n);
            expect_shape("R", r.layout(), bs, r_rows, n)?;
            match (q, mode) {
                (Some(_), QrMode::R) => {
                    return Err(Error::Output(
                        "mode \"r\" returns R alone: pass no Q".into(),
                    ))
                }
                (None, QrMode::Reduced | QrMode::Complete) => {
                    return Err(Error::Output(format!("mode {mode:?} needs a Q output")))
                }
                (Some(q), _) => expect_shape("Q", q.layout(), bs, m, q_cols)?,
                (None, QrMode::R) => {}
            }
        }
        (Operation::Eigh { vectors, .. }, Outputs::Eigh { w, v }) => {
            expect_square("eigh", l)?;
            expect_vectors("eigenvalues", w.layout(), bs, n)?;
            match (v, vectors) {
                (Some(v), true) => expect_shape("eigenvectors", v.layout(), bs, n, n)?,
                (None, false) => {}
                (None, true) => {
                    return Err(Error::Output("eigh needs an eigenvector output".into()))
                }
                (Some(_), false) => {
                    return Err(Error::Output(
                        "eigvalsh returns the eigenvalues alone: pass no eigenvectors".into(),
                    ))
                }
            }
        }
        (
            Operation::Svd {
                full_matrices,
                vectors,
            },
            Outputs::Svd { u, s, vh },
        ) => {
            expect_vectors("S", s.layout(), bs, k)?;
            let (u_cols, vh_rows) = if *full_matrices { (m, n) } else { (k, k) };
            match (u, vh, vectors) {
                (Some(u), Some(vh), true) => {
                    expect_shape("U", u.layout(), bs, m, u_cols)?;
                    expect_shape("Vh", vh.layout(), bs, vh_rows, n)?;
                }
                (None, None, false) => {}
                _ => {
                    return Err(Error::Output(
                        "pass both U and Vh for the SVD, or neither for the singular values alone"
                            .into(),
                    ))
                }
            }
        }
        _ => {
            return Err(Error::Argument(
                "internal: the outputs do not match the operation".into(),
            ))
        }
    }
    let batch = l.batch();
    let want = match req.place {
        Place::Host => Memory::Host,
        Place::Cuda { ordinal, .. } => Memory::Cuda(ordinal),
    };
    let views = std::iter::once(("the input", req.a.memory())).chain(
        req.out
            .views()
            .into_iter()
            .map(|v| ("an output", v.memory())),
    );
    for (what, mem) in views {
        if mem != want {
            return Err(Error::Argument(format!(
                "{what} is in {mem} memory but the call runs on {}: every buffer of a call \
                 must be where it runs",
                req.place
            )));
        }
    }
    match &req.info {
        Some(InfoOut::Host(i)) => {
            if want != Memory::Host {
                return Err(Error::Argument(format!(
                    "info words in host memory for a call on {}",
                    req.place
                )));
            }
            if i.len() != batch {
                return Err(Error::Output(format!(
                    "info must have one entry per matrix ({batch}), got {}",
                    i.len()
                )));
            }
        }
        Some(InfoOut::Device(d)) => {
            if want != Memory::Cuda(d.ordinal) {
                return Err(Error::Argument(format!(
                    "info words on cuda:{} for a call on {}",
                    d.ordinal, req.place
                )));
            }
            if d.len < batch {
                return Err(Error::Output(format!(
                    "info holds {} words for {batch} matrices",
                    d.len
                )));
            }
        }
        None => {}
    }
    Ok(())
}
