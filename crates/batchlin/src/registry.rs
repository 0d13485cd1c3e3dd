//! Every kernel batchlin has, in one list: (operation, backend, name) and a `supports`
//! predicate saying whether it can take a problem on a device, kept apart from whether
//! the planner prefers it (plan.rs). Tests, `bench` and sweeps iterate over [`KERNELS`],
//! so a kernel added here is tested and timed (docs/ARCHITECTURE.md, "Adding a kernel").

use crate::cuda::{self, DeviceCaps};
use crate::error::{Error, Result};
use crate::problem::{Backend, Op, Problem};

/// The device a kernel would run on, as its predicate sees it.
#[derive(Copy, Clone, Debug)]
pub enum Target<'a> {
    Cpu,
    Cuda(&'a DeviceCaps),
}

/// One kernel: an algorithm of one backend for one operation.
#[derive(Debug)]
pub struct Kernel {
    pub op: Op,
    pub backend: Backend,
    /// Unique within (op, backend): what `Options::kernel` names.
    pub name: &'static str,
    /// What it is and where it is meant to win, in a line.
    pub about: &'static str,
    /// Whether it can take `problem` on `target` (shape, variant, type, shared memory,
    /// compute capability): capability only, never preference.
    pub supports: fn(&Problem, &Target) -> bool,
    /// Bumped when a change to the kernel changes its speed: cost tables (table.rs)
    /// record the version they measured, and rows of another version are stale.
    pub version: u32,
}

impl Kernel {
    pub fn supports(&self, p: &Problem, t: &Target) -> bool {
        p.op() == self.op && (self.supports)(p, t)
    }
}

fn any(_: &Problem, t: &Target) -> bool {
    matches!(t, Target::Cpu)
}

macro_rules! cuda_qr {
    ($name:literal, $about:literal, $f:path) => {
        Kernel {
            op: Op::Qr,
            backend: Backend::Cuda,
            name: $name,
            about: $about,
            supports: |p, t| matches!(t, Target::Cuda(caps) if $f(p, caps)),
            version: 1,
        }
    };
}

/// Every kernel. The CPU backends run every operation at every size; each CUDA kernel
/// takes the shapes its predicate names.
pub static KERNELS: &[Kernel] = &[
    Kernel {
        op: Op::Qr,
        backend: Backend::CpuSmall,
        name: "small",
        about: "unblocked Householder QR, padded AVX2 chunks; small matrices",
        supports: any,
        version: 2,
    },
    Kernel {
        op: Op::Eigh,
        backend: Backend::CpuSmall,
        name: "small",
        about: "tridiagonalisation and implicit QL, or divide and conquer; small matrices",
        supports: any,
        version: 2,
    },
    Kernel {
        op: Op::Svd,
        backend: Backend::CpuSmall,
        name: "small",
        about: "Golub-Kahan bidiagonalisation and implicit QR; small matrices",
        supports: any,
        version: 2,
    },
    Kernel {
        op: Op::Qr,
        backend: Backend::CpuFaer,
        name: "faer",
        about: "faer's blocked Householder QR; large matrices",
        supports: any,
        // 3: fewer large matrices than threads run side by side (`cpu::par_for`).
        version: 3,
    },
    Kernel {
        op: Op::Eigh,
        backend: Backend::CpuFaer,
        name: "faer",
        about: "faer's self-adjoint eigendecomposition; large matrices",
        supports: any,
        // 3: fewer large matrices than threads run side by side (`cpu::par_for`).
        version: 3,
    },
    Kernel {
        op: Op::Svd,
        backend: Backend::CpuFaer,
        name: "faer",
        about: "faer's SVD; large and tall matrices",
        supports: any,
        // 2: fewer large matrices than threads run side by side (`cpu::par_for`).
        version: 2,
    },
    cuda_qr!(
        "warp",
        "a matrix per 8-32 lanes, a column a lane, in registers (up to 32 columns)",
        cuda::qr::supports_warp
    ),
    cuda_qr!(
        "tile",
        "a block a matrix, the matrix in registers over a 2-D thread grid (up to 128x128)",
        cuda::qr::supports_tile
    ),
    cuda_qr!(
        "wy",
        "a block a matrix in shared memory, panels of 8 (compact WY); up to 128 rows",
        cuda::qr::supports_wy
    ),
    cuda_qr!(
        "smem",
        "a block a matrix in shared memory, unblocked",
        cuda::qr::supports_smem
    ),
    cuda_qr!(
        "tall",
        "TSQR over 128-row leaves, Q by batched products (tall, up to 64 columns)",
        cuda::qr::supports_tall
    ),
    cuda_qr!(
        "cluster",
        "a cluster of 8 blocks a matrix, a row a thread (tall, small batches; sm_90+)",
        cuda::qr::supports_cluster
    ),
    cuda_qr!(
        "blocked",
        "blocked Householder QR across the grid (any size; large matrices)",
        cuda::qr::supports_blocked
    ),
    Kernel {
        op: Op::Eigh,
        backend: Backend::Cuda,
        name: "block",
        about: "a block a matrix: tridiagonalisation and implicit QL, in shared memory where it fits (any n)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::eigh::supports_block(p, caps)),
        version: 5,
    },
    Kernel {
        op: Op::Eigh,
        backend: Backend::Cuda,
        name: "warp",
        about: "two-sided Jacobi, a warp a matrix in registers (n up to 32; 2-4 matrices a warp to 16)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::eigh::supports_warp(p, caps)),
        version: 1,
    },
    Kernel {
        op: Op::Eigh,
        backend: Backend::Cuda,
        name: "warp-ql",
        about: "Householder tridiagonalisation in registers and implicit QL, a warp a matrix \
                (n up to 32; 2-4 matrices a warp to 16)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::eigh::supports_warp(p, caps)),
        version: 1,
    },
    Kernel {
        op: Op::Eigh,
        backend: Backend::Cuda,
        name: "warp-bisect",
        about: "Householder tridiagonalisation in registers, eigenvalues by bisection and vectors \
                by twisted factorisations a lane a value (implicit QL for ties), a warp a matrix \
                (n up to 32; 2-4 matrices a warp to 16)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::eigh::supports_warp_bisect(p, caps)),
        version: 1,
    },
    // Before `jacobi`: the planner takes the first CUDA SVD kernel that holds the shape.
    Kernel {
        op: Op::Svd,
        backend: Backend::Cuda,
        name: "warp",
        about: "one-sided Jacobi, a warp a matrix in registers (up to 32 columns; 64 rows f32, 32 f64)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::svd::supports_warp(p, caps)),
        version: 2,
    },
    Kernel {
        op: Op::Eigh,
        backend: Backend::Cuda,
        name: "cusolver",
        about: "cuSOLVER's batched eigh (syevd for one matrix), where libcusolver loads; n >= 128",
        supports: |p, t| matches!(t, Target::Cuda(_) if cuda::cusolver::supports_eigh(p)),
        version: 2,
    },
    // Before `jacobi`, which keeps what `bidiag` does not take (full factors of a
    // non-square matrix): 2-5x faster from 33 to 256 columns (svd.rs `supports_bidiag`).
    Kernel {
        op: Op::Svd,
        backend: Backend::Cuda,
        name: "bidiag",
        about: "Golub-Kahan bidiagonalisation and the implicit-shift bidiagonal QR (values by \
                bisection), a block a matrix (thin factors, values, full ones when square)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::svd::supports_bidiag(p, caps)),
        version: 3,
    },
    Kernel {
        op: Op::Svd,
        backend: Backend::Cuda,
        name: "jacobi",
        about: "one-sided Jacobi, a block a matrix, a warp a column pair (any shape)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::svd::supports_jacobi(p, caps)),
        version: 1,
    },
    Kernel {
        op: Op::Svd,
        backend: Backend::Cuda,
        name: "tall",
        about: "QR first (the QR kernels), the SVD of R by the square kernels, U = Q U_R by a \
                batched product (far from square; thin factors or values)",
        supports: |p, t| matches!(t, Target::Cuda(caps) if cuda::svd::supports_tall(p, caps)),
        // 2: R's SVD by `bidiag` version 3 (its panels where R is in global memory).
        version: 2,
    },
    Kernel {
        op: Op::Svd,
        backend: Backend::Cuda,
        name: "cusolver",
        about: "cuSOLVER's polar-decomposition SVD (Xgesvdp; Xgesvd near singular), a matrix a call, where libcusolver loads; a few large matrices",
        supports: |p, t| matches!(t, Target::Cuda(_) if cuda::cusolver::supports_svd(p)),
        version: 1,
    },
];

/// The kernels of one operation and backend, in registry order.
pub fn kernels(op: Op, backend: Backend) -> impl Iterator<Item = &'static Kernel> {
    KERNELS
        .iter()
        .filter(move |k| k.op == op && k.backend == backend)
}

/// The backends that have a kernel for `op`.
pub fn backends(op: Op) -> Vec<Backend> {
    let mut v: Vec<Backend> = Vec::new();
    for k in KERNELS.iter().filter(|k| k.op == op) {
        if !v.contains(&k.backend) {
            v.push(k.backend);
        }
    }
    v
}

/// The kernel `name` of `op` on `backend`.
pub fn find(op: Op, backend: Backend, name: &str) -> Result<&'static Kernel> {
    kernels(op, backend)
        .find(|k| k.name == name)
        .ok_or_else(|| {
            let names: Vec<_> = kernels(op, backend).map(|k| k.name).collect();
            if names.is_empty() {
                Error::Unavailable(format!("backend {backend} has no kernel for {op}"))
            } else {
                Error::Argument(format!(
                    "unknown {backend} kernel {name:?} for {op}: expected one of {}",
                    names.join(", ")
                ))
            }
        })
}
