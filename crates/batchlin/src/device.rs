//! The devices this process can run on, for `batchlin info` and users.

use crate::cuda;

/// One device: the CPU, or a GPU the CUDA backend found.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// "cpu", or "cuda:N" for CUDA device N.
    pub kind: String,
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

/// Every device found: the CPU first, then each GPU by ordinal (`kind` "cuda:N").
pub fn devices() -> Vec<DeviceInfo> {
    let mut out = vec![DeviceInfo {
        kind: "cpu".into(),
        name: cpu_model(),
        detail: format!("{} threads", crate::cpu::pool::threads()),
    }];
    for ordinal in 0..cuda::device_count().unwrap_or(0) {
        match cuda::device(ordinal) {
            Ok(d) => {
                let c = d.caps();
                out.push(DeviceInfo {
                    kind: format!("cuda:{ordinal}"),
                    name: c.name.clone(),
                    detail: format!(
                        "{} SMs, compute capability {}.{}, driver API {}",
                        c.sm_count, c.cc.0, c.cc.1, c.driver_version
                    ),
                });
            }
            Err(e) => out.push(DeviceInfo {
                kind: format!("cuda:{ordinal}"),
                name: "unusable".into(),
                detail: e.message().to_string(),
            }),
        }
    }
    out
}

/// Why there is no usable GPU, or None when device 0 is usable.
pub fn gpu_absent_reason() -> Option<String> {
    cuda::device(0).err().map(|e| e.message().to_string())
}
