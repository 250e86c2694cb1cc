//! GPU memory through NVML (nvml-wrapper, which loads the driver's library at run time): each
//! device's total and used memory, and the memory of the recorded processes on it
//! (`nvmlDeviceGetComputeRunningProcesses`, matched by pid). Without the NVIDIA driver this
//! is off, with one note saying so; that is never an error.

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;
use std::ffi::OsStr;

/// One GPU, as NVML describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuDevice {
    /// NVML's index (the order `nvidia-smi` lists).
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Its UUID.
    pub uuid: String,
    /// Its memory in bytes.
    pub memory_bytes: u64,
}

/// One device's memory at one sample; `None` where NVML did not answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuReading {
    /// Memory of the recorded processes on it.
    pub process: Option<u64>,
    /// Memory used on it, all processes.
    pub used: Option<u64>,
    /// Memory NVML attributes to processes not among the recorded ones.
    pub others: Option<u64>,
}

/// The GPUs of the machine, open for sampling.
pub struct Gpus {
    nvml: Nvml,
    devices: Vec<GpuDevice>,
}

/// The names NVML goes by: the driver installs the versioned one; the bare name comes only
/// with development packages.
const NVML_LIBRARIES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

impl Gpus {
    /// Loads NVML and lists the devices.
    ///
    /// # Errors
    /// Why GPU sampling is off, as a sentence for the user (no driver, no devices).
    pub fn open() -> Result<Gpus, String> {
        let mut first_error = None;
        let mut nvml = None;
        for library in NVML_LIBRARIES {
            match Nvml::builder().lib_path(OsStr::new(library)).init() {
                Ok(opened) => {
                    nvml = Some(opened);
                    break;
                }
                Err(err) => {
                    first_error.get_or_insert((library, err));
                }
            }
        }
        let nvml = nvml.ok_or_else(|| match first_error {
            Some((library, nvml_wrapper::error::NvmlError::LibloadingError(_))) => format!(
                "GPU sampling is off: there is no NVIDIA driver on this machine ({library} cannot be loaded)"
            ),
            Some((library, err)) => format!("GPU sampling is off: NVML ({library}) failed: {err}"),
            None => "GPU sampling is off: NVML could not be loaded".to_owned(),
        })?;
        let count = nvml
            .device_count()
            .map_err(|err| format!("GPU sampling is off: NVML cannot count devices: {err}"))?;
        let mut devices = Vec::new();
        for index in 0..count {
            let device = nvml.device_by_index(index).map_err(|err| {
                format!("GPU sampling is off: NVML cannot open GPU {index}: {err}")
            })?;
            devices.push(GpuDevice {
                index,
                name: device.name().unwrap_or_default(),
                uuid: device.uuid().unwrap_or_default(),
                memory_bytes: device.memory_info().map(|info| info.total).unwrap_or(0),
            });
        }
        if devices.is_empty() {
            return Err("GPU sampling is off: NVML sees no GPU on this machine".to_owned());
        }
        Ok(Gpus { nvml, devices })
    }

    /// The devices, in NVML's order.
    pub fn devices(&self) -> &[GpuDevice] {
        &self.devices
    }

    /// Each device's memory now, with the share of the processes `pids` (sorted).
    pub fn sample(&self, pids: &[u32]) -> Vec<GpuReading> {
        self.devices
            .iter()
            .map(|gpu| {
                let Ok(device) = self.nvml.device_by_index(gpu.index) else {
                    return GpuReading::default();
                };
                let used = device.memory_info().ok().map(|info| info.used);
                let (process, others) = match device.running_compute_processes() {
                    Ok(processes) => {
                        let (mut mine, mut others) = (0u64, 0u64);
                        for info in processes {
                            let UsedGpuMemory::Used(bytes) = info.used_gpu_memory else {
                                continue;
                            };
                            if pids.binary_search(&info.pid).is_ok() {
                                mine += bytes;
                            } else {
                                others += bytes;
                            }
                        }
                        (Some(mine), Some(others))
                    }
                    Err(_) => (None, None),
                };
                GpuReading {
                    process,
                    used,
                    others,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without the NVIDIA driver (CI), opening fails with one sentence that says
    /// sampling is off and why; on a GPU machine it lists every device with its memory.
    #[test]
    fn gpus_open_or_say_why_not() {
        match Gpus::open() {
            Ok(gpus) => {
                assert!(!gpus.devices().is_empty());
                assert!(gpus.devices().iter().all(|gpu| gpu.memory_bytes > 0));
                let readings = gpus.sample(&[std::process::id()]);
                assert_eq!(readings.len(), gpus.devices().len());
                assert!(readings.iter().all(|reading| reading.process == Some(0)));
            }
            Err(message) => {
                assert!(message.starts_with("GPU sampling is off: "), "{message}");
                assert!(!message.contains('\n'));
            }
        }
    }
}
