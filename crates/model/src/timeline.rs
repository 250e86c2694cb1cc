//! Timelines: a process's memory sampled over time (what `heapgraph record` writes), with the
//! thresholds it was watched against and what happened meanwhile (alerts, dumps, its exit).

/// What a threshold compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// The recorded processes' resident memory, against the host limit.
    Host,
    /// The recorded processes' memory on the GPU of this index, against its total.
    Gpu(u32),
}

impl Resource {
    /// `host` or `gpu:N`, as in output (the file's names are `heapgraph_format::Resource`'s;
    /// the importer's test checks that the two agree).
    pub fn name(self) -> String {
        match self {
            Resource::Host => "host".to_owned(),
            Resource::Gpu(index) => format!("gpu:{index}"),
        }
    }
}

/// How a threshold acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// An alert.
    Warn,
    /// A dump of the process.
    Act,
}

impl Level {
    /// `warn` or `act`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Warn => "warn",
            Level::Act => "act",
        }
    }
}

/// A threshold the recorder watched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// What it compares.
    pub resource: Resource,
    /// What crossing it does.
    pub level: Level,
    /// The threshold in bytes.
    pub bytes: u64,
    /// As the user wrote it (`80%`, `12GiB`).
    pub spec: String,
}

/// The memory limit that host thresholds are shares of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Bytes.
    pub bytes: u64,
    /// Where it comes from (`cgroup memory.max`, `physical memory`).
    pub source: String,
}

/// What is known about a recording as a whole.
#[derive(Clone, Debug, Default)]
pub struct TimelineMeta {
    /// The file format it was read from (`heapgraph-record`).
    pub source_format: String,
    /// The recorded process's runtime, as far as the recorder could tell (`python`, `v8`,
    /// `java`, or `process`).
    pub runtime: String,
    /// When the recording started, in milliseconds since the Unix epoch.
    pub started_at_ms: Option<u64>,
    /// The recorded process.
    pub pid: Option<u32>,
    /// Its command line.
    pub command: Vec<String>,
    /// The sampling interval in milliseconds.
    pub interval_ms: u64,
    /// The host memory limit.
    pub host_limit: Option<MemoryLimit>,
    /// The machine's memory.
    pub system_memory_bytes: Option<u64>,
    /// The thresholds watched.
    pub thresholds: Vec<Threshold>,
    /// Notes about the recording: what was not measured, what the file lost.
    pub notes: Vec<String>,
}

/// Host memory samples, as columns of equal length (one row per sample, in time order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    /// Milliseconds since the recording started; non-decreasing.
    pub t_ms: Vec<u64>,
    /// Resident set size of the recorded processes, summed.
    pub rss: Vec<u64>,
    /// Proportional set size, summed, where measured.
    pub pss: Vec<Option<u64>>,
    /// Unique set size (private pages), summed, where measured.
    pub uss: Vec<Option<u64>>,
    /// Swapped-out bytes, summed, where measured.
    pub swap: Vec<Option<u64>>,
    /// Processes recorded.
    pub processes: Vec<u32>,
    /// The cgroup's `memory.current`, where it has one.
    pub cgroup_current: Vec<Option<u64>>,
    /// The machine's available memory.
    pub system_available: Vec<Option<u64>>,
}

impl Samples {
    /// The number of samples.
    pub fn len(&self) -> usize {
        self.t_ms.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.t_ms.is_empty()
    }
}

/// One GPU's samples, as long as [`Samples`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuSeries {
    /// The device's index, as NVML and `nvidia-smi` number it.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Its UUID.
    pub uuid: String,
    /// Its memory in bytes.
    pub memory_bytes: u64,
    /// The recorded processes' memory on it, per sample, where measured.
    pub process_used: Vec<Option<u64>>,
    /// Memory used on it by every process, per sample, where measured.
    pub device_used: Vec<Option<u64>>,
}

/// What happened at a moment of a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A threshold was crossed upwards.
    Crossed {
        /// Which threshold.
        level: Level,
        /// On what.
        resource: Resource,
        /// What was measured.
        bytes: u64,
        /// The threshold.
        threshold_bytes: u64,
    },
    /// A dump was written.
    Dump {
        /// Where.
        path: String,
        /// What kind (`python-hgd`, `v8-heapsnapshot`, `hprof`, `torch-cuda`).
        dump_kind: String,
        /// Of which process.
        pid: Option<u32>,
        /// How long it took.
        duration_ms: Option<u64>,
    },
    /// A dump was attempted and failed.
    DumpFailed {
        /// What kind.
        dump_kind: String,
        /// Of which process.
        pid: Option<u32>,
        /// Why.
        reason: String,
    },
    /// The recorded process ended.
    Exit {
        /// Its exit code, when it exited.
        code: Option<i32>,
        /// The signal that ended it, when one did.
        signal: Option<i32>,
    },
    /// A note.
    Note(String),
    /// An event of a kind this version does not know, kept by name.
    Other {
        /// Its name.
        name: String,
        /// Its text, if any.
        message: Option<String>,
    },
}

/// An event of a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    /// Milliseconds since the recording started.
    pub t_ms: u64,
    /// What happened.
    pub kind: EventKind,
}

/// A process's memory over time.
///
/// Invariants (kept by the importers): every column of `samples` and of each GPU series is as
/// long as `samples.t_ms`; `samples.t_ms` and the events' times do not decrease.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Where it came from.
    pub meta: TimelineMeta,
    /// Host memory.
    pub samples: Samples,
    /// GPU memory, one series per device.
    pub gpus: Vec<GpuSeries>,
    /// What happened, in time order.
    pub events: Vec<TimelineEvent>,
}

impl Timeline {
    /// Milliseconds from the first sample to the last (0 with fewer than two).
    pub fn duration_ms(&self) -> u64 {
        match (self.samples.t_ms.first(), self.samples.t_ms.last()) {
            (Some(first), Some(last)) => last - first,
            _ => 0,
        }
    }

    /// The threshold of `level` on `resource`, if one was watched.
    pub fn threshold(&self, resource: Resource, level: Level) -> Option<&Threshold> {
        self.meta
            .thresholds
            .iter()
            .find(|threshold| threshold.resource == resource && threshold.level == level)
    }
}
