//! The memory recorder's parts (feature `sampler`): a [`Sampler`] of a process tree's host
//! memory (`/proc`, cgroups) and GPU memory (NVML), the [`Session`] that turns samples into
//! threshold crossings and dumps by the recorder's policy, the [`TimelineWriter`] of the `.hgt`
//! file, and the triggers that take a dump of a running runtime. The `heapgraph record`
//! command drives them: it samples on the interval's grid, hands each sample to the session,
//! writes what it emits, and takes the dumps it calls for.

pub mod gpu;
pub mod procfs;
pub mod session;
pub mod threshold;
pub mod trigger;
mod writer;

pub use gpu::{GpuDevice, GpuReading, Gpus};
pub use session::{Event, Machine, Plan, Session, SessionError, Subject};
pub use threshold::Watch;
pub use writer::{SOURCE_FORMAT, TimelineWriter};

use std::io;
use std::time::{Duration, Instant};

/// How long the process tree is trusted before it is looked up again: new children are found
/// within this, and a scan of `/proc` costs a millisecond or so.
const TREE_REFRESH: Duration = Duration::from_secs(1);

/// The share of wall time that reading `smaps_rollup` may take: it walks the target's page
/// tables under its mmap lock, which a multi-gigabyte process feels at a 50 ms interval.
const ROLLUP_DUTY: u32 = 100;

/// One measurement of the recorded processes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Milliseconds since the recording started.
    pub t_ms: u64,
    /// Resident set size, summed over the processes.
    pub rss: u64,
    /// Proportional set size, summed, when read at this sample.
    pub pss: Option<u64>,
    /// Unique set size (private pages), summed, when read at this sample.
    pub uss: Option<u64>,
    /// Swapped-out bytes, summed.
    pub swap: Option<u64>,
    /// Processes measured.
    pub processes: u32,
    /// The cgroup's current usage.
    pub cgroup_current: Option<u64>,
    /// The machine's available memory.
    pub system_available: Option<u64>,
    /// Each GPU, in the order of [`Sampler::gpus`].
    pub gpus: Vec<GpuReading>,
    /// The processes measured and their RSS, the root first.
    pub processes_rss: Vec<(u32, u64)>,
}

impl Sample {
    /// The recorded processes' memory on all GPUs together, where any was measured.
    pub fn gpu_total(&self) -> Option<u64> {
        self.gpus
            .iter()
            .filter_map(|gpu| gpu.process)
            .reduce(|a, b| a + b)
    }
}

/// The host limit that shares are taken of, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostLimit {
    /// Bytes.
    pub bytes: u64,
    /// `cgroup memory.max`, `cgroup memory.limit_in_bytes` or `physical memory`.
    pub source: String,
}

/// Samples a process and its descendants.
pub struct Sampler {
    root: u32,
    tree: Vec<u32>,
    tree_read_at: Option<Instant>,
    rollup_due: Instant,
    rollup_readable: bool,
    cgroup: Option<procfs::Cgroup>,
    gpus: Option<Gpus>,
    system_memory: Option<u64>,
    notes: Vec<String>,
}

impl Sampler {
    /// A sampler of `root`'s tree. GPU sampling is on when NVML loads; when it does not, the
    /// reason is among [`Sampler::notes`].
    pub fn new(root: u32) -> Sampler {
        let mut notes = Vec::new();
        let gpus = match Gpus::open() {
            Ok(gpus) => Some(gpus),
            Err(message) => {
                notes.push(message);
                None
            }
        };
        let (system_memory, _) = meminfo();
        Sampler {
            root,
            tree: vec![root],
            tree_read_at: None,
            rollup_due: Instant::now(),
            rollup_readable: true,
            cgroup: procfs::Cgroup::of(root),
            gpus,
            system_memory,
            notes,
        }
    }

    /// What the sampler could not measure, in sentences.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The GPUs sampled (none without NVML).
    pub fn gpus(&self) -> &[GpuDevice] {
        self.gpus.as_ref().map_or(&[], Gpus::devices)
    }

    /// The machine's memory.
    pub fn system_memory(&self) -> Option<u64> {
        self.system_memory
    }

    /// What the thresholds of a [`Session`] are resolved against: the host limit, the GPUs,
    /// the machine's memory, and the notes so far.
    pub fn machine(&self) -> Machine {
        Machine {
            limit: self.host_limit(),
            system_memory: self.system_memory,
            gpus: self.gpus().to_vec(),
            notes: self.notes.clone(),
        }
    }

    /// The limit host memory is measured against: the cgroup's, where it sets one, else the
    /// machine's memory.
    pub fn host_limit(&self) -> Option<HostLimit> {
        if let Some(cgroup) = &self.cgroup
            && let Some(bytes) = cgroup.limit()
            && self.system_memory.is_none_or(|total| bytes < total)
        {
            let source = if cgroup.v2 {
                "cgroup memory.max"
            } else {
                "cgroup memory.limit_in_bytes"
            };
            return Some(HostLimit {
                bytes,
                source: source.to_owned(),
            });
        }
        self.system_memory.map(|bytes| HostLimit {
            bytes,
            source: "physical memory".to_owned(),
        })
    }

    /// Measures the tree now; `None` once the root process has ended.
    pub fn sample(&mut self, t_ms: u64) -> Option<Sample> {
        let now = Instant::now();
        if self
            .tree_read_at
            .is_none_or(|at| now.duration_since(at) >= TREE_REFRESH)
        {
            self.tree = procfs::process_tree(self.root);
            self.tree_read_at = Some(now);
        }
        let mut sample = Sample {
            t_ms,
            swap: Some(0),
            ..Sample::default()
        };
        let mut vanished = false;
        for &pid in &self.tree {
            match procfs::status(pid) {
                Ok(status) if status.ended && pid == self.root => return None,
                Ok(status) if status.ended => vanished = true,
                Ok(status) => {
                    sample.rss += status.rss;
                    sample.swap = sample.swap.map(|swap| swap + status.swap);
                    sample.processes += 1;
                    sample.processes_rss.push((pid, status.rss));
                }
                Err(_) if pid == self.root => return None,
                Err(_) => vanished = true,
            }
        }
        if vanished {
            self.tree_read_at = None;
        }
        if self.rollup_readable && now >= self.rollup_due {
            self.read_rollups(&mut sample);
            let cost = now.elapsed();
            self.rollup_due = Instant::now() + cost * ROLLUP_DUTY;
        }
        sample.cgroup_current = self.cgroup.as_ref().and_then(procfs::Cgroup::current);
        sample.system_available = meminfo().1;
        if let Some(gpus) = &self.gpus {
            let mut pids: Vec<u32> = sample.processes_rss.iter().map(|&(pid, _)| pid).collect();
            pids.sort_unstable();
            sample.gpus = gpus.sample(&pids);
        }
        Some(sample)
    }

    fn read_rollups(&mut self, sample: &mut Sample) {
        let (mut pss, mut uss) = (0u64, 0u64);
        for &(pid, _) in &sample.processes_rss {
            match procfs::rollup(pid) {
                Ok(Some(rollup)) => {
                    pss += rollup.pss;
                    uss += rollup.uss;
                }
                Ok(None) => {
                    self.notes.push(
                        "PSS and USS are not measured: this kernel has no smaps_rollup (Linux 4.14 and later do)"
                            .to_owned(),
                    );
                    self.rollup_readable = false;
                    return;
                }
                Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
                    self.notes.push(format!(
                        "PSS and USS are not measured: /proc/{pid}/smaps_rollup may not be read ({err}); \
                         record as the process's user or as root"
                    ));
                    self.rollup_readable = false;
                    return;
                }
                // The process ended between the two reads.
                Err(_) => {}
            }
        }
        sample.pss = Some(pss);
        sample.uss = Some(uss);
    }
}

fn meminfo() -> (Option<u64>, Option<u64>) {
    std::fs::read_to_string("/proc/meminfo")
        .map(|text| procfs::parse_meminfo(&text))
        .unwrap_or((None, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A real tree: this test's process starts a shell that starts two sleeps.
    #[test]
    fn a_real_tree_is_sampled_with_its_children() {
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = shell.id();
        let mut sampler = Sampler::new(pid);
        let mut sample = None;
        // The shell needs a moment to start its children.
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(50));
            sampler.tree_read_at = None;
            sample = sampler.sample(0);
            if sample.as_ref().is_some_and(|sample| sample.processes == 3) {
                break;
            }
        }
        let sample = sample.unwrap();
        assert_eq!(sample.processes, 3, "{:?}", sample.processes_rss);
        assert_eq!(sample.processes_rss[0].0, pid);
        let rss: u64 = sample.processes_rss.iter().map(|&(_, rss)| rss).sum();
        assert_eq!(sample.rss, rss);
        assert!(sample.rss > 0);
        if let Some(pss) = sample.pss {
            // Shared pages are divided among the processes: PSS is at most RSS.
            assert!(
                pss <= sample.rss && pss > 0,
                "pss {pss}, rss {}",
                sample.rss
            );
            assert!(sample.uss.unwrap() <= pss);
        }
        assert!(sampler.host_limit().is_some());
        for child in procfs::process_tree(pid).into_iter().skip(1) {
            let _ = Command::new("kill").arg(child.to_string()).status();
        }
        let _ = shell.kill();
        let _ = shell.wait();
        // Reaped: the root is gone, and so is the sample.
        assert_eq!(sampler.sample(1), None);
    }
}
