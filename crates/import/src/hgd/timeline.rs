//! Timelines (`.hgt`, header kind `timeline`): the records `heapgraph record` writes, read into
//! the model's [`Timeline`]. A recording cut short (the recorder or the machine died) keeps
//! every sample that arrived, with a note saying where it ends.

use super::{import_error, malformed};
use crate::ImportError;
use heapgraph_format::{
    self as format, Chunk, EventChunk, Header, NOT_MEASURED, Reader, SamplesChunk, ThresholdLevel,
    TimelineInfoChunk, decode_column,
};
use heapgraph_model::{
    EventKind, GpuSeries, Level, MemoryLimit, Resource, Threshold, Timeline, TimelineEvent,
    TimelineMeta,
};
use std::io::Read;

/// Reads the chunks after the header of a timeline stream.
pub(super) fn import<R: Read>(mut reader: Reader<R>) -> Result<Timeline, ImportError> {
    let header = reader.header().clone();
    let mut builder = Builder::new(&header);
    loop {
        let start = reader.offset();
        let record = reader.chunks_read() + 1;
        let Some(chunk) = reader.next_chunk().map_err(import_error)? else {
            break;
        };
        builder
            .add(chunk)
            .map_err(|message| malformed(start, format!("record {record}: {message}")))?;
    }
    if let Some(truncation) = reader.truncation() {
        let at = builder
            .timeline
            .samples
            .t_ms
            .last()
            .map_or_else(String::new, |&t_ms| {
                format!(" at {:.1} s", t_ms as f64 / 1000.0)
            });
        builder.timeline.meta.notes.push(format!(
            "the recording stops after {} samples{at}: {truncation} (the recorder, or the machine, \
             stopped before the recording was finished)",
            builder.timeline.samples.len()
        ));
    }
    builder.finish(reader.offset())
}

struct Builder {
    timeline: Timeline,
    info_seen: bool,
    unknown_chunks: u64,
    /// A writer may note an event after a later one (a dump finishing after the next sample's
    /// crossing); they are put in time order at the end.
    events_out_of_order: bool,
}

impl Builder {
    fn new(header: &Header) -> Builder {
        let meta = TimelineMeta {
            source_format: header.source_format.clone(),
            runtime: header.runtime.clone(),
            started_at_ms: header.captured_at_ms,
            pid: header.pid,
            notes: header.notes.clone(),
            ..TimelineMeta::default()
        };
        Builder {
            timeline: Timeline {
                meta,
                ..Timeline::default()
            },
            info_seen: false,
            unknown_chunks: 0,
            events_out_of_order: false,
        }
    }

    fn add(&mut self, chunk: Chunk<'_>) -> Result<(), String> {
        match chunk {
            Chunk::TimelineInfo(info) => self.info(info),
            Chunk::Samples(samples) => self.samples(&samples),
            Chunk::Event(event) => self.event(event),
            _ => {
                self.unknown_chunks += 1;
                Ok(())
            }
        }
    }

    fn info(&mut self, info: TimelineInfoChunk) -> Result<(), String> {
        if self.info_seen {
            return Err("a second timeline_info chunk".to_owned());
        }
        if !self.timeline.samples.is_empty() {
            return Err("timeline_info comes after samples".to_owned());
        }
        self.info_seen = true;
        let meta = &mut self.timeline.meta;
        meta.interval_ms = info.interval_ms;
        meta.command = info.command;
        meta.host_limit = info.host_limit_bytes.map(|bytes| MemoryLimit {
            bytes,
            source: info.host_limit_source.unwrap_or_default(),
        });
        meta.system_memory_bytes = info.system_memory_bytes;
        for threshold in info.thresholds {
            let resource = format::Resource::from_name(&threshold.resource)
                .map(resource_of)
                .ok_or_else(|| {
                    format!(
                        "a threshold on {:?}; expected \"host\" or \"gpu:N\"",
                        threshold.resource
                    )
                })?;
            let level = ThresholdLevel::from_name(&threshold.level)
                .map(level_of)
                .ok_or_else(|| {
                    format!(
                        "a threshold of level {:?}; expected \"warn\" or \"act\"",
                        threshold.level
                    )
                })?;
            meta.thresholds.push(Threshold {
                resource,
                level,
                bytes: threshold.bytes,
                spec: threshold.spec,
            });
        }
        self.timeline.gpus = info
            .gpus
            .into_iter()
            .map(|gpu| GpuSeries {
                index: gpu.index,
                name: gpu.name,
                uuid: gpu.uuid,
                memory_bytes: gpu.memory_bytes,
                ..GpuSeries::default()
            })
            .collect();
        Ok(())
    }

    fn samples(&mut self, chunk: &SamplesChunk<'_>) -> Result<(), String> {
        let rows = chunk.rows()?;
        let n_gpus = chunk.gpus(rows)?;
        if n_gpus != self.timeline.gpus.len() {
            return Err(format!(
                "samples for {n_gpus} GPUs, but the timeline_info names {}",
                self.timeline.gpus.len()
            ));
        }
        let samples = &mut self.timeline.samples;
        let first_new = samples.t_ms.len();
        let column = |name: &str, err| format!("{name}: {err}");
        decode_column::<u64>(chunk.t_ms, &mut samples.t_ms).map_err(|err| column("t_ms", err))?;
        let times = &samples.t_ms[first_new.saturating_sub(1)..];
        if let Some(back) = times.windows(2).position(|pair| pair[1] < pair[0]) {
            return Err(format!(
                "sample {} is at {} ms, before the sample ahead of it ({} ms)",
                first_new.saturating_sub(1) + back + 1,
                times[back + 1],
                times[back]
            ));
        }
        decode_column::<u64>(chunk.rss, &mut samples.rss).map_err(|err| column("rss", err))?;
        decode_column::<u32>(chunk.processes, &mut samples.processes)
            .map_err(|err| column("processes", err))?;
        optional(chunk.pss, rows, &mut samples.pss).map_err(|err| column("pss", err))?;
        optional(chunk.uss, rows, &mut samples.uss).map_err(|err| column("uss", err))?;
        optional(chunk.swap, rows, &mut samples.swap).map_err(|err| column("swap", err))?;
        optional(chunk.cgroup_current, rows, &mut samples.cgroup_current)
            .map_err(|err| column("cgroup_current", err))?;
        optional(chunk.system_available, rows, &mut samples.system_available)
            .map_err(|err| column("system_available", err))?;
        let (mut process, mut used) = (Vec::new(), Vec::new());
        decode_column::<u64>(chunk.gpu_process, &mut process)
            .map_err(|err| column("gpu_process", err))?;
        decode_column::<u64>(chunk.gpu_used, &mut used).map_err(|err| column("gpu_used", err))?;
        for (gpu_index, gpu) in self.timeline.gpus.iter_mut().enumerate() {
            let of_gpu = |values: &[u64], row: usize| {
                values
                    .get(row * n_gpus + gpu_index)
                    .copied()
                    .filter(|&value| value != NOT_MEASURED)
            };
            for row in 0..rows {
                gpu.process_used.push(of_gpu(&process, row));
                gpu.device_used.push(of_gpu(&used, row));
            }
        }
        Ok(())
    }

    fn event(&mut self, event: EventChunk) -> Result<(), String> {
        let kind = match event.kind() {
            Some(kind @ (format::EventKind::Warn | format::EventKind::Act)) => {
                let level = if kind == format::EventKind::Act {
                    Level::Act
                } else {
                    Level::Warn
                };
                let resource = event
                    .resource
                    .as_deref()
                    .and_then(format::Resource::from_name)
                    .map(resource_of)
                    .ok_or_else(|| {
                        format!(
                            "a {} event on {:?}; expected \"host\" or \"gpu:N\"",
                            event.event, event.resource
                        )
                    })?;
                EventKind::Crossed {
                    level,
                    resource,
                    bytes: event.bytes.unwrap_or(0),
                    threshold_bytes: event.threshold_bytes.unwrap_or(0),
                }
            }
            Some(format::EventKind::Dump) => EventKind::Dump {
                path: event
                    .path
                    .ok_or_else(|| "a dump event without its path".to_owned())?,
                dump_kind: event.dump_kind.unwrap_or_default(),
                pid: event.pid,
                duration_ms: event.duration_ms,
            },
            Some(format::EventKind::DumpFailed) => EventKind::DumpFailed {
                dump_kind: event.dump_kind.unwrap_or_default(),
                pid: event.pid,
                reason: event.message.unwrap_or_default(),
            },
            Some(format::EventKind::Exit) => EventKind::Exit {
                code: event.exit_code,
                signal: event.signal,
            },
            Some(format::EventKind::Note) => EventKind::Note(event.message.unwrap_or_default()),
            None => EventKind::Other {
                name: event.event,
                message: event.message,
            },
        };
        self.timeline.events.push(TimelineEvent {
            t_ms: event.t_ms,
            kind,
        });
        self.events_out_of_order |= self
            .timeline
            .events
            .windows(2)
            .last()
            .is_some_and(|pair| pair[1].t_ms < pair[0].t_ms);
        Ok(())
    }

    fn finish(mut self, end: u64) -> Result<Timeline, ImportError> {
        if !self.info_seen && self.timeline.samples.is_empty() {
            return Err(ImportError::truncated(
                super::FORMAT,
                end,
                "the timeline's first chunk (timeline_info)",
            ));
        }
        if self.events_out_of_order {
            self.timeline.events.sort_by_key(|event| event.t_ms);
        }
        if self.unknown_chunks > 0 {
            self.timeline.meta.notes.push(format!(
                "{} chunks of types a timeline does not have were skipped",
                self.unknown_chunks
            ));
        }
        Ok(self.timeline)
    }
}

/// Appends an optional `u64` column of `rows` values (empty: none measured) to `out`.
fn optional(
    blob: &[u8],
    rows: usize,
    out: &mut Vec<Option<u64>>,
) -> Result<(), heapgraph_format::ColumnError> {
    if blob.is_empty() {
        out.resize(out.len() + rows, None);
        return Ok(());
    }
    let mut values = Vec::with_capacity(rows);
    decode_column::<u64>(blob, &mut values)?;
    out.extend(
        values
            .into_iter()
            .map(|value| (value != NOT_MEASURED).then_some(value)),
    );
    Ok(())
}

/// The model's resource for the file's.
fn resource_of(resource: format::Resource) -> Resource {
    match resource {
        format::Resource::Host => Resource::Host,
        format::Resource::Gpu(index) => Resource::Gpu(index),
    }
}

/// The model's level for the file's.
fn level_of(level: ThresholdLevel) -> Level {
    match level {
        ThresholdLevel::Warn => Level::Warn,
        ThresholdLevel::Act => Level::Act,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Contents;
    use heapgraph_format::{GpuInfo, KIND_TIMELINE, SampleColumns, ThresholdInfo, Writer};
    use proptest::prelude::*;

    /// A recording of `n` samples on one GPU, as the recorder writes it: info, then a samples
    /// chunk per sample, a dump event midway, then the exit.
    fn recording(n: u64, finish: bool) -> Vec<u8> {
        let mut file = Vec::new();
        let mut header = Header::new(KIND_TIMELINE, "heapgraph-record", "python");
        header.pid = Some(4242);
        header.captured_at_ms = Some(1_700_000_000_000);
        let mut writer = Writer::new(&mut file, &header).unwrap();
        let mut info = TimelineInfoChunk::default();
        info.interval_ms = 50;
        info.command = vec!["python3".into(), "serve.py".into()];
        info.host_limit_bytes = Some(8 << 30);
        info.host_limit_source = Some("physical memory".into());
        info.gpus = vec![GpuInfo::new(
            0,
            "NVIDIA H200".into(),
            "GPU-x".into(),
            140 << 30,
        )];
        info.thresholds = vec![ThresholdInfo::new(
            format::Resource::Gpu(0),
            ThresholdLevel::Warn,
            100 << 30,
            "70%".into(),
        )];
        writer.write_chunk(&Chunk::TimelineInfo(info)).unwrap();
        for i in 0..n {
            writer
                .write_samples(&SampleColumns {
                    t_ms: &[i * 50],
                    rss: &[(100 + i) << 20],
                    uss: &[if i % 2 == 0 {
                        (90 + i) << 20
                    } else {
                        NOT_MEASURED
                    }],
                    processes: &[1],
                    gpu_process: &[i << 20],
                    gpu_used: &[(i + 1) << 20],
                    ..SampleColumns::default()
                })
                .unwrap();
            if i == n / 2 {
                let dump = EventChunk::dump(
                    i * 50,
                    "/var/tmp/dumps/serve-1.hgd".into(),
                    "python-hgd",
                    4242,
                    120,
                );
                writer.write_chunk(&Chunk::Event(dump)).unwrap();
            }
        }
        let exit = EventChunk::exit(n * 50, Some(0), None);
        writer.write_chunk(&Chunk::Event(exit)).unwrap();
        if finish {
            writer.finish().unwrap();
        } else {
            drop(writer);
        }
        file
    }

    fn read(bytes: &[u8]) -> Result<Timeline, ImportError> {
        let streamed = super::super::import(bytes, &super::super::Options::default());
        let sliced =
            super::super::import_slice_with_analysis(bytes, &super::super::Options::default())
                .map(|(dump, _)| dump);
        match (streamed, sliced) {
            (Ok(Contents::Timeline(a)), Ok(Contents::Timeline(b))) => {
                assert_eq!(a.samples, b.samples);
                assert_eq!(a.events, b.events);
                Ok(a)
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string());
                Err(a)
            }
            (Ok(_), _) | (_, Ok(_)) => panic!("the two readers disagree, or read no timeline"),
        }
    }

    /// The file's names and the model's (which the JSON output shows) are one vocabulary.
    #[test]
    fn timeline_names_mean_the_same_in_the_file_and_the_model() {
        for resource in [format::Resource::Host, format::Resource::Gpu(3)] {
            assert_eq!(resource_of(resource).name(), resource.name());
        }
        for level in [ThresholdLevel::Warn, ThresholdLevel::Act] {
            assert_eq!(level_of(level).name(), level.name());
        }
    }

    #[test]
    fn timeline_a_recording_reads_back_whole() {
        let timeline = read(&recording(10, true)).unwrap();
        assert_eq!(timeline.meta.pid, Some(4242));
        assert_eq!(timeline.meta.interval_ms, 50);
        assert_eq!(timeline.meta.host_limit.as_ref().unwrap().bytes, 8 << 30);
        assert_eq!(timeline.samples.len(), 10);
        assert_eq!(timeline.samples.rss[9], 109 << 20);
        assert_eq!(timeline.samples.uss[0], Some(90 << 20));
        assert_eq!(timeline.samples.uss[1], None);
        assert_eq!(timeline.samples.pss, vec![None; 10]);
        assert_eq!(timeline.gpus[0].process_used[3], Some(3 << 20));
        assert_eq!(timeline.gpus[0].device_used[3], Some(4 << 20));
        assert_eq!(timeline.meta.thresholds[0].resource, Resource::Gpu(0));
        assert!(matches!(
            &timeline.events[0].kind,
            EventKind::Dump { path, .. } if path == "/var/tmp/dumps/serve-1.hgd"
        ));
        assert_eq!(
            timeline.events[1].kind,
            EventKind::Exit {
                code: Some(0),
                signal: None
            }
        );
        assert!(timeline.meta.notes.is_empty(), "{:?}", timeline.meta.notes);
    }

    #[test]
    fn timeline_cut_at_every_offset_keeps_what_arrived() {
        let whole = recording(6, true);
        let mut last_samples = 0;
        for cut in 1..whole.len() {
            match read(&whole[..cut]) {
                Ok(timeline) => {
                    // Samples only ever arrive whole, and a cut file always says where it ends.
                    let n = timeline.samples.len();
                    assert!(n >= last_samples, "cut at {cut} lost samples");
                    last_samples = n;
                    assert_eq!(timeline.gpus[0].process_used.len(), n);
                    assert!(
                        timeline
                            .meta
                            .notes
                            .iter()
                            .any(|note| note.contains("stops after")),
                        "cut at {cut}: {:?}",
                        timeline.meta.notes
                    );
                }
                Err(err) => {
                    let text = err.to_string();
                    assert!(
                        text.contains("cut short") || text.contains("ends"),
                        "cut at {cut}: {text}"
                    );
                }
            }
        }
        assert_eq!(last_samples, 6);
        // An unfinished recording (no end record) reads whole, with the note.
        let unfinished = read(&recording(6, false)).unwrap();
        assert_eq!(unfinished.samples.len(), 6);
        assert!(unfinished.meta.notes[0].contains("stops after 6 samples at 0.2 s"));
    }

    #[test]
    fn timeline_samples_that_go_back_in_time_are_refused_with_their_offset() {
        let mut file = Vec::new();
        let mut writer =
            Writer::new(&mut file, &Header::new(KIND_TIMELINE, "x", "process")).unwrap();
        writer
            .write_chunk(&Chunk::TimelineInfo(TimelineInfoChunk::default()))
            .unwrap();
        for t_ms in [0, 100, 50] {
            writer
                .write_samples(&SampleColumns {
                    t_ms: &[t_ms],
                    rss: &[1],
                    processes: &[1],
                    ..SampleColumns::default()
                })
                .unwrap();
        }
        writer.finish().unwrap();
        let err = read(&file).unwrap_err().to_string();
        assert!(err.contains("record 4"), "{err}");
        assert!(
            err.contains("sample 2 is at 50 ms, before the sample ahead of it (100 ms)"),
            "{err}"
        );
    }

    #[test]
    fn timeline_samples_for_gpus_the_info_does_not_name_are_refused() {
        let mut file = Vec::new();
        let mut writer =
            Writer::new(&mut file, &Header::new(KIND_TIMELINE, "x", "process")).unwrap();
        writer
            .write_chunk(&Chunk::TimelineInfo(TimelineInfoChunk::default()))
            .unwrap();
        writer
            .write_samples(&SampleColumns {
                t_ms: &[0],
                rss: &[1],
                processes: &[1],
                gpu_process: &[5],
                ..SampleColumns::default()
            })
            .unwrap();
        writer.finish().unwrap();
        let err = read(&file).unwrap_err().to_string();
        assert!(
            err.contains("samples for 1 GPUs, but the timeline_info names 0"),
            "{err}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn timeline_changed_bytes_never_panic(
            changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ) {
            let mut file = recording(5, true);
            for (at, byte) in changes {
                let at = at % file.len();
                file[at] = byte;
            }
            if let Ok(timeline) = read(&file) {
                let n = timeline.samples.len();
                prop_assert_eq!(timeline.samples.rss.len(), n);
                prop_assert_eq!(timeline.samples.uss.len(), n);
                for gpu in &timeline.gpus {
                    prop_assert_eq!(gpu.device_used.len(), n);
                }
            }
        }
    }
}
