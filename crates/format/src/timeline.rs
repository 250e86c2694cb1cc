//! The records of a timeline (`.hgt`): what `heapgraph record` writes as it samples a process.
//! A `timeline_info` chunk says what is measured, `samples` chunks hold the measurements as
//! columns, and `event` chunks say what happened (alerts, dumps, the process's exit).

use crate::column::{LeInt, column_len};
use serde::{Deserialize, Serialize};

/// The header's `kind` for a timeline (memory sampled over time).
pub const KIND_TIMELINE: &str = "timeline";

/// The value of an optional sample column for "not measured at this sample".
pub const NOT_MEASURED: u64 = u64::MAX;

/// What a timeline measures: written once, after the header and before the first sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TimelineInfoChunk {
    /// The sampling interval in milliseconds.
    pub interval_ms: u64,
    /// The recorded process's command line, where known.
    #[serde(default)]
    pub command: Vec<String>,
    /// The memory limit that host thresholds are shares of, in bytes, where known.
    #[serde(default)]
    pub host_limit_bytes: Option<u64>,
    /// Where the limit comes from (`cgroup memory.max`, `physical memory`).
    #[serde(default)]
    pub host_limit_source: Option<String>,
    /// The machine's memory (`MemTotal`), in bytes, where known.
    #[serde(default)]
    pub system_memory_bytes: Option<u64>,
    /// The GPUs sampled, in the order of the samples' GPU columns.
    #[serde(default)]
    pub gpus: Vec<GpuInfo>,
    /// The thresholds the recorder watched.
    #[serde(default)]
    pub thresholds: Vec<ThresholdInfo>,
}

/// One GPU of a timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GpuInfo {
    /// The device's index, as NVML and `nvidia-smi` number it.
    pub index: u32,
    /// The device's name (`NVIDIA H200`).
    #[serde(default)]
    pub name: String,
    /// The device's UUID.
    #[serde(default)]
    pub uuid: String,
    /// The device's memory in bytes.
    pub memory_bytes: u64,
}

/// What a threshold compares, named in the file `host` or `gpu:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// The recorded processes' resident memory, against the host limit.
    Host,
    /// The recorded processes' memory on the GPU of this index (as NVML numbers it).
    Gpu(u32),
}

impl Resource {
    /// `host` or `gpu:N`.
    pub fn name(self) -> String {
        match self {
            Resource::Host => "host".to_owned(),
            Resource::Gpu(index) => format!("gpu:{index}"),
        }
    }

    /// The resource named `host` or `gpu:N`.
    pub fn from_name(name: &str) -> Option<Resource> {
        if name == "host" {
            return Some(Resource::Host);
        }
        name.strip_prefix("gpu:")?.parse().ok().map(Resource::Gpu)
    }
}

/// What crossing a threshold does, named in the file `warn` or `act`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThresholdLevel {
    /// An alert.
    Warn,
    /// A dump of the process.
    Act,
}

impl ThresholdLevel {
    /// `warn` or `act`: also the name of the event a crossing writes.
    pub fn name(self) -> &'static str {
        match self {
            ThresholdLevel::Warn => EventKind::Warn.name(),
            ThresholdLevel::Act => EventKind::Act.name(),
        }
    }

    /// The level named `warn` or `act`.
    pub fn from_name(name: &str) -> Option<ThresholdLevel> {
        match EventKind::from_name(name)? {
            EventKind::Warn => Some(ThresholdLevel::Warn),
            EventKind::Act => Some(ThresholdLevel::Act),
            _ => None,
        }
    }
}

/// The kinds of [`EventChunk`], by the name the file gives them (its `event` field). Readers
/// keep events of other names as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A warn threshold was crossed upwards.
    Warn,
    /// An act threshold was crossed upwards.
    Act,
    /// A dump was written.
    Dump,
    /// A dump was attempted and failed.
    DumpFailed,
    /// The recorded process ended.
    Exit,
    /// A note.
    Note,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 6] = [
        EventKind::Warn,
        EventKind::Act,
        EventKind::Dump,
        EventKind::DumpFailed,
        EventKind::Exit,
        EventKind::Note,
    ];

    /// The name in the file: `warn`, `act`, `dump`, `dump_failed`, `exit`, `note`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Warn => "warn",
            EventKind::Act => "act",
            EventKind::Dump => "dump",
            EventKind::DumpFailed => "dump_failed",
            EventKind::Exit => "exit",
            EventKind::Note => "note",
        }
    }

    /// The kind of this name, if it is one of ours.
    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// One threshold of a timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThresholdInfo {
    /// What is compared: `host` (the processes' RSS), or `gpu:N` (their memory on GPU `N`).
    pub resource: String,
    /// `warn` (an alert) or `act` (a dump).
    pub level: String,
    /// The threshold in bytes.
    pub bytes: u64,
    /// The level as given, in the words of [`crate::units`] (`80%`, `12GiB`).
    #[serde(default)]
    pub spec: String,
}

impl GpuInfo {
    /// A GPU with every field given.
    pub fn new(index: u32, name: String, uuid: String, memory_bytes: u64) -> GpuInfo {
        GpuInfo {
            index,
            name,
            uuid,
            memory_bytes,
        }
    }
}

impl ThresholdInfo {
    /// A threshold with every field given.
    pub fn new(
        resource: Resource,
        level: ThresholdLevel,
        bytes: u64,
        spec: String,
    ) -> ThresholdInfo {
        ThresholdInfo {
            resource: resource.name(),
            level: level.name().to_owned(),
            bytes,
            spec,
        }
    }
}

/// Samples, one row each. Optional columns hold [`NOT_MEASURED`] where a sample lacks the
/// value, and may be empty blobs (or absent) when no sample has it. The GPU columns hold one
/// value per sample and GPU, sample-major, in the order of [`TimelineInfoChunk::gpus`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplesChunk<'a> {
    /// Milliseconds since the recording started (the header's `captured_at_ms`): `u64`.
    #[serde(borrow, with = "serde_bytes")]
    pub t_ms: &'a [u8],
    /// Resident set size of the recorded processes, summed: `u64`.
    #[serde(borrow, with = "serde_bytes")]
    pub rss: &'a [u8],
    /// Proportional set size, summed: `u64`, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub pss: &'a [u8],
    /// Unique set size (private pages), summed: `u64`, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub uss: &'a [u8],
    /// Swapped-out bytes, summed: `u64`, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub swap: &'a [u8],
    /// Processes recorded (the target and its descendants): `u32`.
    #[serde(borrow, with = "serde_bytes")]
    pub processes: &'a [u8],
    /// The cgroup's `memory.current`: `u64`, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub cgroup_current: &'a [u8],
    /// The machine's available memory (`MemAvailable`): `u64`, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub system_available: &'a [u8],
    /// GPU memory used by the recorded processes: `u64` per sample and GPU, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub gpu_process: &'a [u8],
    /// GPU memory used on the device by every process: `u64` per sample and GPU, optional.
    #[serde(borrow, with = "serde_bytes", default)]
    pub gpu_used: &'a [u8],
}

impl SamplesChunk<'_> {
    /// The number of samples, after checking every column holds that many (the GPU columns a
    /// whole multiple of it).
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        let rows = same_rows(&[
            ("t_ms", column_len::<u64>(self.t_ms), false),
            ("rss", column_len::<u64>(self.rss), false),
            ("pss", column_len::<u64>(self.pss), true),
            ("uss", column_len::<u64>(self.uss), true),
            ("swap", column_len::<u64>(self.swap), true),
            ("processes", column_len::<u32>(self.processes), false),
            (
                "cgroup_current",
                column_len::<u64>(self.cgroup_current),
                true,
            ),
            (
                "system_available",
                column_len::<u64>(self.system_available),
                true,
            ),
        ])?;
        self.gpus(rows).map(|_| rows)
    }

    /// The number of GPUs the GPU columns hold values for, given `rows` samples.
    ///
    /// # Errors
    /// A lower-case message when the GPU columns disagree with each other or with `rows`.
    pub fn gpus(&self, rows: usize) -> Result<usize, String> {
        let process =
            column_len::<u64>(self.gpu_process).map_err(|err| format!("gpu_process: {err}"))?;
        let used = column_len::<u64>(self.gpu_used).map_err(|err| format!("gpu_used: {err}"))?;
        if process != used && process != 0 && used != 0 {
            return Err(format!(
                "column gpu_process has {process} values but gpu_used has {used}"
            ));
        }
        let values = process.max(used);
        if values == 0 {
            return Ok(0);
        }
        if rows == 0 || !values.is_multiple_of(rows) {
            return Err(format!(
                "the gpu columns have {values} values, not a whole number per each of {rows} samples"
            ));
        }
        Ok(values / rows)
    }
}

/// The row count of columns that must agree; an optional column may also be empty.
fn same_rows(columns: &[(&str, Result<usize, crate::ColumnError>, bool)]) -> Result<usize, String> {
    let mut rows: Option<(&str, usize)> = None;
    for (name, len, optional) in columns {
        let len = *len.as_ref().map_err(|err| format!("{name}: {err}"))?;
        if *optional && len == 0 {
            continue;
        }
        match rows {
            None => rows = Some((name, len)),
            Some((first, first_len)) if first_len != len => {
                return Err(format!(
                    "column {name} has {len} rows but {first} has {first_len}"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(rows.map_or(0, |(_, len)| len))
}

/// Something that happened during a recording. Which fields are set depends on `event`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EventChunk {
    /// Milliseconds since the recording started.
    pub t_ms: u64,
    /// What happened: `warn` and `act` (a threshold was crossed: `resource`, `bytes`,
    /// `threshold_bytes`), `dump` (a dump was written: `path`, `dump_kind`, `pid`), `dump_failed`
    /// (`dump_kind`, `pid`, `message`), `exit` (the recorded process ended: `exit_code` or
    /// `signal`), `note` (`message`). Readers keep events of other names as they are.
    pub event: String,
    /// The resource of a threshold event (`host`, `gpu:N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The measured bytes of a threshold event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The threshold of a threshold event, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_bytes: Option<u64>,
    /// The file a dump was written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The kind of a dump (`python-hgd`, `v8-heapsnapshot`, `hprof`, `torch-cuda`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump_kind: Option<String>,
    /// The process a dump was taken of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How long the dump took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The exit code of an `exit` event, when the process exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal of an `exit` event, when a signal ended the process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Text: why a dump failed, a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl EventChunk {
    /// An event of `kind` at `t_ms`, with no other field set.
    pub fn new(t_ms: u64, kind: EventKind) -> EventChunk {
        EventChunk {
            t_ms,
            event: kind.name().to_owned(),
            ..EventChunk::default()
        }
    }

    /// A threshold of `level` on `resource` was crossed upwards: `bytes` were measured.
    pub fn crossed(
        t_ms: u64,
        level: ThresholdLevel,
        resource: Resource,
        bytes: u64,
        threshold_bytes: u64,
    ) -> EventChunk {
        let kind = match level {
            ThresholdLevel::Warn => EventKind::Warn,
            ThresholdLevel::Act => EventKind::Act,
        };
        EventChunk {
            resource: Some(resource.name()),
            bytes: Some(bytes),
            threshold_bytes: Some(threshold_bytes),
            ..EventChunk::new(t_ms, kind)
        }
    }

    /// A dump of `kind` (`python-hgd`, …) of process `pid` was written to `path`.
    pub fn dump(t_ms: u64, path: String, kind: &str, pid: u32, duration_ms: u64) -> EventChunk {
        EventChunk {
            path: Some(path),
            dump_kind: Some(kind.to_owned()),
            pid: Some(pid),
            duration_ms: Some(duration_ms),
            ..EventChunk::new(t_ms, EventKind::Dump)
        }
    }

    /// A dump of `kind` of process `pid` failed, for `reason`.
    pub fn dump_failed(t_ms: u64, kind: &str, pid: u32, reason: String) -> EventChunk {
        EventChunk {
            dump_kind: Some(kind.to_owned()),
            pid: Some(pid),
            message: Some(reason),
            ..EventChunk::new(t_ms, EventKind::DumpFailed)
        }
    }

    /// The recorded process ended, with `exit_code` or by `signal` where they are known.
    pub fn exit(t_ms: u64, exit_code: Option<i32>, signal: Option<i32>) -> EventChunk {
        EventChunk {
            exit_code,
            signal,
            ..EventChunk::new(t_ms, EventKind::Exit)
        }
    }

    /// A note.
    pub fn note(t_ms: u64, message: String) -> EventChunk {
        EventChunk {
            message: Some(message),
            ..EventChunk::new(t_ms, EventKind::Note)
        }
    }

    /// The kind, when the name is one of ours.
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::from_name(&self.event)
    }
}

/// Per-sample columns for [`crate::Writer::write_samples`], one slice per column. Optional
/// columns may be empty; GPU columns hold `gpus` values per sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleColumns<'a> {
    /// Milliseconds since the recording started.
    pub t_ms: &'a [u64],
    /// Resident set size.
    pub rss: &'a [u64],
    /// Proportional set size ([`NOT_MEASURED`] where not measured).
    pub pss: &'a [u64],
    /// Unique set size.
    pub uss: &'a [u64],
    /// Swapped-out bytes.
    pub swap: &'a [u64],
    /// Processes recorded.
    pub processes: &'a [u32],
    /// The cgroup's `memory.current`.
    pub cgroup_current: &'a [u64],
    /// The machine's available memory.
    pub system_available: &'a [u64],
    /// GPU memory of the recorded processes, sample-major.
    pub gpu_process: &'a [u64],
    /// GPU memory used on each device, sample-major.
    pub gpu_used: &'a [u64],
}

/// Encodes `values` into `out`, cleared first.
pub(crate) fn encode_into<T: LeInt>(values: &[T], out: &mut Vec<u8>) {
    out.clear();
    crate::encode_column(values, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Chunk, Header, Reader, Writer, decode_column};

    fn timeline_stream(finish: bool) -> Vec<u8> {
        let mut file = Vec::new();
        let mut writer = Writer::new(
            &mut file,
            &Header::new(KIND_TIMELINE, "heapgraph-record", "python"),
        )
        .unwrap();
        let info = TimelineInfoChunk {
            interval_ms: 100,
            command: vec!["python3".into(), "serve.py".into()],
            host_limit_bytes: Some(1 << 30),
            host_limit_source: Some("cgroup memory.max".into()),
            system_memory_bytes: Some(4 << 30),
            gpus: vec![GpuInfo::new(
                0,
                "NVIDIA H200".into(),
                "GPU-1".into(),
                140 << 30,
            )],
            thresholds: vec![ThresholdInfo::new(
                Resource::Host,
                ThresholdLevel::Act,
                900 << 20,
                "90%".into(),
            )],
        };
        writer.write_chunk(&Chunk::TimelineInfo(info)).unwrap();
        for i in 0..3u64 {
            writer
                .write_samples(&SampleColumns {
                    t_ms: &[i * 100],
                    rss: &[(i + 1) << 20],
                    pss: &[if i == 1 { NOT_MEASURED } else { i << 20 }],
                    processes: &[1],
                    gpu_process: &[i << 30],
                    gpu_used: &[(i + 1) << 30],
                    ..SampleColumns::default()
                })
                .unwrap();
            writer.flush().unwrap();
        }
        let dump = EventChunk::dump(250, "/tmp/a.hgd".into(), "python-hgd", 7, 30);
        writer.write_chunk(&Chunk::Event(dump)).unwrap();
        if finish {
            writer.finish().unwrap();
        } else {
            writer.flush().unwrap();
            drop(writer);
        }
        file
    }

    #[test]
    fn timelines_round_trip_and_a_cut_one_keeps_its_samples() {
        for finish in [true, false] {
            let file = timeline_stream(finish);
            let mut reader = Reader::new(file.as_slice()).unwrap();
            assert_eq!(reader.header().kind, KIND_TIMELINE);
            let (mut rss, mut pss, mut gpus, mut events) =
                (Vec::<u64>::new(), Vec::<u64>::new(), 0, Vec::new());
            while let Some(chunk) = reader.next_chunk().unwrap() {
                match chunk {
                    Chunk::TimelineInfo(info) => assert_eq!(info.gpus[0].name, "NVIDIA H200"),
                    Chunk::Samples(samples) => {
                        let rows = samples.rows().unwrap();
                        gpus = samples.gpus(rows).unwrap();
                        decode_column(samples.rss, &mut rss).unwrap();
                        decode_column(samples.pss, &mut pss).unwrap();
                        assert!(samples.uss.is_empty());
                    }
                    Chunk::Event(event) => events.push(event),
                    other => panic!("unexpected chunk {}", other.type_name()),
                }
            }
            assert_eq!(rss, [1 << 20, 2 << 20, 3 << 20]);
            assert_eq!(pss, [0, NOT_MEASURED, 2 << 20]);
            assert_eq!(gpus, 1);
            assert_eq!(events[0].path.as_deref(), Some("/tmp/a.hgd"));
            assert_eq!(events[0].kind(), Some(EventKind::Dump));
            assert_eq!(reader.truncation().is_some(), !finish);
        }
    }

    #[test]
    fn names_read_back_as_what_they_name() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(EventKind::from_name("gc"), None);
        for resource in [Resource::Host, Resource::Gpu(0), Resource::Gpu(7)] {
            assert_eq!(Resource::from_name(&resource.name()), Some(resource));
        }
        assert_eq!(Resource::from_name("gpu:x"), None);
        assert_eq!(Resource::from_name("disk"), None);
        for level in [ThresholdLevel::Warn, ThresholdLevel::Act] {
            assert_eq!(ThresholdLevel::from_name(level.name()), Some(level));
        }
        assert_eq!(ThresholdLevel::from_name("dump"), None);
        let crossed = EventChunk::crossed(5, ThresholdLevel::Act, Resource::Gpu(1), 9, 8);
        assert_eq!(crossed.event, "act");
        assert_eq!(crossed.resource.as_deref(), Some("gpu:1"));
    }

    #[test]
    fn sample_columns_that_disagree_are_refused() {
        let mut file = Vec::new();
        let mut writer =
            Writer::new(&mut file, &Header::new(KIND_TIMELINE, "x", "python")).unwrap();
        let short = writer.write_samples(&SampleColumns {
            t_ms: &[0, 1],
            rss: &[5],
            processes: &[1, 1],
            ..SampleColumns::default()
        });
        assert!(
            short
                .unwrap_err()
                .to_string()
                .contains("column rss has 1 rows but t_ms has 2")
        );
        let ragged_gpu = writer.write_samples(&SampleColumns {
            t_ms: &[0, 1],
            rss: &[5, 6],
            processes: &[1, 1],
            gpu_process: &[1, 2, 3],
            ..SampleColumns::default()
        });
        assert!(
            ragged_gpu
                .unwrap_err()
                .to_string()
                .contains("not a whole number")
        );
    }
}
