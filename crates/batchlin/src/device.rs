//! The devices this process can run on, for `batchlin info` and users.

use crate::cuda::CudaBackend;

/// One device: the CPU, or a GPU the CUDA backend found.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// "cpu" or "cuda".
    pub kind: &'static str,
    pub name: String,
    /// Threads for the CPU; SMs and compute capability for a GPU.
    pub detail: String,
}

/// The CPU's model name as the OS reports it.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Every device found: the CPU first, then the GPU.
pub fn devices() -> Vec<DeviceInfo> {
    let mut out = vec![DeviceInfo {
        kind: "cpu",
        name: cpu_model(),
        detail: format!("{} threads", rayon::current_num_threads()),
    }];
    if let Ok(be) = CudaBackend::get() {
        let (major, minor) = be.compute_capability();
        out.push(DeviceInfo {
            kind: "cuda",
            name: be.device_name(),
            detail: format!(
                "{} SMs, compute capability {major}.{minor}, driver API {}",
                be.sm_count(),
                be.driver_version()
            ),
        });
    }
    out
}

/// Why there is no GPU, or None when one is usable.
pub fn gpu_absent_reason() -> Option<String> {
    CudaBackend::get().err().map(|e| e.message().to_string())
}
