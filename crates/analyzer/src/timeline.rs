//! A recording read as a user asks of it: how high memory went and when, how close to the
//! limit, how fast it grew (and when, at that rate, it would reach the limit), which thresholds
//! were crossed, which dumps were taken, and how the process ended.

use heapgraph_model::{EventKind, Level, Resource, Timeline};

/// The highest value of a series, and when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peak {
    /// Bytes.
    pub bytes: u64,
    /// Seconds since the recording started.
    pub t_s: f64,
}

/// How fast host memory grew.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Growth {
    /// Least-squares slope of RSS over the whole recording, bytes per second.
    pub bytes_per_s: f64,
    /// The slope over the last quarter of the recording (at least its last
    /// [`RECENT_SAMPLES_MIN`] samples), which is what a leak looks like just before the end.
    pub recent_bytes_per_s: f64,
    /// Seconds from the last sample until RSS would reach the limit at the recent rate; `None`
    /// when it does not grow, there is no limit, or the recording saw the process exit (a
    /// process that ended reaches nothing: the projection is only for one still running).
    pub time_to_limit_s: Option<f64>,
}

/// The fewest samples the recent rate is fitted over.
pub const RECENT_SAMPLES_MIN: usize = 8;

/// One GPU over the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTimeline {
    /// Its index.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Its memory.
    pub memory_bytes: u64,
    /// The recorded processes' peak on it.
    pub peak_process: Option<Peak>,
    /// The device's peak use, all processes.
    pub peak_device: Option<Peak>,
    /// The recorded processes' memory on it, per sample.
    pub process_used: Vec<Option<u64>>,
    /// The device's use, per sample.
    pub device_used: Vec<Option<u64>>,
}

/// A threshold, and how often it was crossed.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdView {
    /// `host` or `gpu:N`.
    pub resource: String,
    /// `warn` or `act`.
    pub level: &'static str,
    /// Bytes.
    pub bytes: u64,
    /// As the user wrote it.
    pub spec: String,
    /// Upward crossings the recorder reported.
    pub crossings: usize,
    /// When it was first crossed.
    pub first_crossed_s: Option<f64>,
}

/// A dump taken during the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct DumpEvent {
    /// Seconds since the recording started.
    pub t_s: f64,
    /// Where it was written.
    pub path: String,
    /// `python-hgd`, `v8-heapsnapshot`, `hprof`, `torch-cuda`.
    pub kind: String,
    /// Of which process.
    pub pid: Option<u32>,
    /// How long it took.
    pub duration_ms: Option<u64>,
}

/// Something else the recorder noted: a crossing, a failed dump, a note.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineNote {
    /// Seconds since the recording started.
    pub t_s: f64,
    /// `warn`, `act`, `dump_failed`, `note`, or an unknown event's name.
    pub kind: String,
    /// What happened, in words.
    pub text: String,
}

/// How the recorded process ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExitView {
    /// Seconds since the recording started.
    pub t_s: f64,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
}

/// A recording, analysed.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineView {
    /// Samples taken.
    pub samples: usize,
    /// Seconds from the first sample to the last.
    pub duration_s: f64,
    /// The sampling interval, in milliseconds.
    pub interval_ms: u64,
    /// When the recording started, milliseconds since the Unix epoch.
    pub started_at_ms: Option<u64>,
    /// The recorded process.
    pub pid: Option<u32>,
    /// Its command line.
    pub command: Vec<String>,
    /// The host memory limit, and where it comes from.
    pub limit: Option<(u64, String)>,
    /// The machine's memory.
    pub system_memory_bytes: Option<u64>,
    /// RSS at the first and the last sample.
    pub first_rss: Option<u64>,
    /// RSS at the last sample.
    pub last_rss: Option<u64>,
    /// Peak RSS.
    pub peak_rss: Option<Peak>,
    /// Peak PSS, where measured.
    pub peak_pss: Option<Peak>,
    /// Peak USS, where measured.
    pub peak_uss: Option<Peak>,
    /// Peak swap, where measured.
    pub peak_swap: Option<Peak>,
    /// Peak RSS as a share of the limit.
    pub peak_share_of_limit: Option<f64>,
    /// Growth of RSS, with at least two samples.
    pub growth: Option<Growth>,
    /// The most processes recorded at once.
    pub max_processes: u32,
    /// The peak of the recorded processes' GPU memory summed over devices.
    pub peak_gpu: Option<Peak>,
    /// Each GPU.
    pub gpus: Vec<GpuTimeline>,
    /// The thresholds watched.
    pub thresholds: Vec<ThresholdView>,
    /// The dumps taken, in time order.
    pub dumps: Vec<DumpEvent>,
    /// Crossings, failed dumps and notes, in time order.
    pub events: Vec<TimelineNote>,
    /// How the process ended, when the recording saw it.
    pub exit: Option<ExitView>,
    /// Seconds since the start, per sample.
    pub t_s: Vec<f64>,
    /// RSS per sample.
    pub rss: Vec<u64>,
    /// PSS per sample.
    pub pss: Vec<Option<u64>>,
    /// USS per sample.
    pub uss: Vec<Option<u64>>,
    /// Swap per sample.
    pub swap: Vec<Option<u64>>,
    /// The recording's notes.
    pub notes: Vec<String>,
}

fn seconds(t_ms: u64) -> f64 {
    t_ms as f64 / 1000.0
}

/// The highest value of `values` (at the first sample that reaches it).
fn peak_of(t_ms: &[u64], values: impl Iterator<Item = Option<u64>>) -> Option<Peak> {
    let mut peak: Option<Peak> = None;
    for (&t_ms, value) in t_ms.iter().zip(values) {
        if let Some(bytes) = value
            && peak.is_none_or(|peak| bytes > peak.bytes)
        {
            peak = Some(Peak {
                bytes,
                t_s: seconds(t_ms),
            });
        }
    }
    peak
}

/// Least-squares slope of `values` over `t_s`, in units per second; `None` with fewer than two
/// distinct times.
fn slope(t_s: &[f64], values: &[u64]) -> Option<f64> {
    let n = t_s.len().min(values.len());
    if n < 2 {
        return None;
    }
    let mean_t = t_s[..n].iter().sum::<f64>() / n as f64;
    let mean_v = values[..n].iter().map(|&v| v as f64).sum::<f64>() / n as f64;
    let (mut covariance, mut variance) = (0.0, 0.0);
    for (&t, &v) in t_s[..n].iter().zip(&values[..n]) {
        covariance += (t - mean_t) * (v as f64 - mean_v);
        variance += (t - mean_t) * (t - mean_t);
    }
    (variance > 0.0).then(|| covariance / variance)
}

/// The growth of `rss` over `t_s`; the time to `limit` only while the process runs (`exited`
/// false).
fn growth(t_s: &[f64], rss: &[u64], limit: Option<u64>, exited: bool) -> Option<Growth> {
    let bytes_per_s = slope(t_s, rss)?;
    let n = t_s.len();
    let recent_from = match (t_s.first(), t_s.last()) {
        (Some(&first), Some(&last)) => {
            let cut = last - (last - first) / 4.0;
            t_s.partition_point(|&t| t < cut)
                .min(n.saturating_sub(RECENT_SAMPLES_MIN))
        }
        _ => 0,
    };
    let recent_bytes_per_s = slope(&t_s[recent_from..], &rss[recent_from..]).unwrap_or(bytes_per_s);
    let time_to_limit_s = match (limit, rss.last()) {
        (Some(limit), Some(&last)) if !exited && recent_bytes_per_s > 0.0 && last < limit => {
            Some((limit - last) as f64 / recent_bytes_per_s)
        }
        _ => None,
    };
    Some(Growth {
        bytes_per_s,
        recent_bytes_per_s,
        time_to_limit_s,
    })
}

/// Reads a recording: peaks, growth, thresholds, dumps, the exit, and the series to draw.
///
/// Complexity: O(samples × GPUs + events × thresholds).
pub fn timeline(timeline: &Timeline) -> TimelineView {
    let samples = &timeline.samples;
    let t_ms = &samples.t_ms;
    let t_s: Vec<f64> = t_ms.iter().map(|&t| seconds(t)).collect();
    let limit = timeline.meta.host_limit.as_ref().map(|limit| limit.bytes);
    let peak_rss = peak_of(t_ms, samples.rss.iter().map(|&rss| Some(rss)));
    let gpus: Vec<GpuTimeline> = timeline
        .gpus
        .iter()
        .map(|gpu| GpuTimeline {
            index: gpu.index,
            name: gpu.name.clone(),
            memory_bytes: gpu.memory_bytes,
            peak_process: peak_of(t_ms, gpu.process_used.iter().copied()),
            peak_device: peak_of(t_ms, gpu.device_used.iter().copied()),
            process_used: gpu.process_used.clone(),
            device_used: gpu.device_used.clone(),
        })
        .collect();
    let gpu_sum = (0..samples.len()).map(|row| {
        timeline
            .gpus
            .iter()
            .filter_map(|gpu| gpu.process_used.get(row).copied().flatten())
            .reduce(|a, b| a + b)
    });
    let mut thresholds: Vec<ThresholdView> = timeline
        .meta
        .thresholds
        .iter()
        .map(|threshold| ThresholdView {
            resource: threshold.resource.name(),
            level: threshold.level.name(),
            bytes: threshold.bytes,
            spec: threshold.spec.clone(),
            crossings: 0,
            first_crossed_s: None,
        })
        .collect();
    let mut dumps = Vec::new();
    let mut events = Vec::new();
    let mut exit = None;
    for event in &timeline.events {
        let t_s = seconds(event.t_ms);
        match &event.kind {
            EventKind::Crossed {
                level,
                resource,
                bytes,
                threshold_bytes,
            } => {
                let name = resource.name();
                if let Some(view) = thresholds
                    .iter_mut()
                    .find(|view| view.resource == name && view.level == level.name())
                {
                    view.crossings += 1;
                    view.first_crossed_s.get_or_insert(t_s);
                }
                let what = match resource {
                    Resource::Host => "host memory".to_owned(),
                    Resource::Gpu(index) => format!("GPU {index} memory"),
                };
                let action = match level {
                    Level::Warn => "warn",
                    Level::Act => "act",
                };
                events.push(TimelineNote {
                    t_s,
                    kind: action.to_owned(),
                    text: format!(
                        "{what} reached {} (the {action} threshold is {})",
                        bytes_text(*bytes),
                        bytes_text(*threshold_bytes)
                    ),
                });
            }
            EventKind::Dump {
                path,
                dump_kind,
                pid,
                duration_ms,
            } => dumps.push(DumpEvent {
                t_s,
                path: path.clone(),
                kind: dump_kind.clone(),
                pid: *pid,
                duration_ms: *duration_ms,
            }),
            EventKind::DumpFailed {
                dump_kind,
                pid,
                reason,
            } => events.push(TimelineNote {
                t_s,
                kind: "dump_failed".to_owned(),
                text: format!(
                    "a {dump_kind} dump{} failed: {reason}",
                    pid.map_or_else(String::new, |pid| format!(" of process {pid}"))
                ),
            }),
            EventKind::Exit { code, signal } => {
                exit = Some(ExitView {
                    t_s,
                    code: *code,
                    signal: *signal,
                });
            }
            EventKind::Note(text) => events.push(TimelineNote {
                t_s,
                kind: "note".to_owned(),
                text: text.clone(),
            }),
            EventKind::Other { name, message } => events.push(TimelineNote {
                t_s,
                kind: name.clone(),
                text: message.clone().unwrap_or_default(),
            }),
        }
    }
    TimelineView {
        samples: samples.len(),
        duration_s: seconds(timeline.duration_ms()),
        interval_ms: timeline.meta.interval_ms,
        started_at_ms: timeline.meta.started_at_ms,
        pid: timeline.meta.pid,
        command: timeline.meta.command.clone(),
        limit: timeline
            .meta
            .host_limit
            .as_ref()
            .map(|limit| (limit.bytes, limit.source.clone())),
        system_memory_bytes: timeline.meta.system_memory_bytes,
        first_rss: samples.rss.first().copied(),
        last_rss: samples.rss.last().copied(),
        peak_rss,
        peak_pss: peak_of(t_ms, samples.pss.iter().copied()),
        peak_uss: peak_of(t_ms, samples.uss.iter().copied()),
        peak_swap: peak_of(t_ms, samples.swap.iter().copied()),
        peak_share_of_limit: match (peak_rss, limit) {
            (Some(peak), Some(limit)) if limit > 0 => Some(peak.bytes as f64 / limit as f64),
            _ => None,
        },
        growth: growth(&t_s, &samples.rss, limit, exit.is_some()),
        max_processes: samples.processes.iter().copied().max().unwrap_or(0),
        peak_gpu: peak_of(t_ms, gpu_sum),
        gpus,
        thresholds,
        dumps,
        events,
        exit,
        t_s,
        rss: samples.rss.clone(),
        pss: samples.pss.clone(),
        uss: samples.uss.clone(),
        swap: samples.swap.clone(),
        notes: timeline.meta.notes.clone(),
    }
}

/// Bytes in binary units for the few sentences this module writes (the report has its own).
fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapgraph_model::{
        GpuSeries, MemoryLimit, Samples, Threshold, TimelineEvent, TimelineMeta,
    };

    /// RSS that grows 1 MiB per second for 40 s, then holds, on a 100 MiB limit.
    fn growing() -> Timeline {
        let t_ms: Vec<u64> = (0..=60).map(|i| i * 1000).collect();
        let rss: Vec<u64> = (0..=60u64).map(|i| (10 + i.min(40)) << 20).collect();
        let n = t_ms.len();
        Timeline {
            meta: TimelineMeta {
                interval_ms: 1000,
                host_limit: Some(MemoryLimit {
                    bytes: 100 << 20,
                    source: "cgroup memory.max".into(),
                }),
                thresholds: vec![Threshold {
                    resource: Resource::Host,
                    level: Level::Act,
                    bytes: 45 << 20,
                    spec: "45%".into(),
                }],
                ..TimelineMeta::default()
            },
            samples: Samples {
                t_ms,
                rss,
                pss: vec![None; n],
                uss: (0..n).map(|i| (i == 7).then_some(3 << 20)).collect(),
                swap: vec![None; n],
                processes: vec![2; n],
                cgroup_current: vec![None; n],
                system_available: vec![None; n],
            },
            gpus: vec![
                GpuSeries {
                    index: 0,
                    process_used: (0..n).map(|i| Some(i as u64)).collect(),
                    device_used: vec![None; n],
                    ..GpuSeries::default()
                },
                GpuSeries {
                    index: 1,
                    process_used: (0..n).map(|i| (i < 30).then_some(100)).collect(),
                    device_used: vec![None; n],
                    ..GpuSeries::default()
                },
            ],
            events: vec![
                TimelineEvent {
                    t_ms: 35_000,
                    kind: EventKind::Crossed {
                        level: Level::Act,
                        resource: Resource::Host,
                        bytes: 45 << 20,
                        threshold_bytes: 45 << 20,
                    },
                },
                TimelineEvent {
                    t_ms: 36_000,
                    kind: EventKind::Dump {
                        path: "/tmp/x.hgd".into(),
                        dump_kind: "python-hgd".into(),
                        pid: Some(7),
                        duration_ms: Some(800),
                    },
                },
                TimelineEvent {
                    t_ms: 60_000,
                    kind: EventKind::Exit {
                        code: None,
                        signal: Some(9),
                    },
                },
            ],
        }
    }

    #[test]
    fn timeline_peaks_are_the_first_samples_that_reach_them() {
        let view = timeline(&growing());
        assert_eq!(view.samples, 61);
        assert_eq!(view.duration_s, 60.0);
        assert_eq!(
            view.peak_rss,
            Some(Peak {
                bytes: 50 << 20,
                t_s: 40.0
            })
        );
        assert_eq!(view.peak_share_of_limit, Some(0.5));
        assert_eq!(view.peak_uss.map(|peak| peak.t_s), Some(7.0));
        assert_eq!(view.peak_pss, None);
        // GPU 0 climbs to 60 at the end; until sample 29, GPU 1 adds 100.
        assert_eq!(
            view.peak_gpu.map(|peak| (peak.bytes, peak.t_s)),
            Some((129, 29.0))
        );
        assert_eq!(view.max_processes, 2);
    }

    #[test]
    fn timeline_growth_is_a_least_squares_slope_and_the_recent_rate_sees_the_plateau() {
        let view = timeline(&growing());
        let growth = view.growth.unwrap();
        // Over 60 s the fit is positive; over the last quarter (45..60 s) RSS is flat.
        assert!(growth.bytes_per_s > 0.0);
        assert!(growth.recent_bytes_per_s.abs() < 1.0, "{growth:?}");
        assert_eq!(growth.time_to_limit_s, None);

        let mut climbing = growing();
        climbing.samples.rss = (0..=60u64).map(|i| (10 + i) << 20).collect();
        // Still running: the recording ends without the process's exit.
        climbing
            .events
            .retain(|event| !matches!(event.kind, EventKind::Exit { .. }));
        let growth = timeline(&climbing).growth.unwrap();
        assert!((growth.recent_bytes_per_s - f64::from(1 << 20)).abs() < 1.0);
        // The last sample is 70 MiB, 30 MiB short of the limit, at 1 MiB/s.
        assert!((growth.time_to_limit_s.unwrap() - 30.0).abs() < 1e-6);
    }

    #[test]
    fn timeline_a_process_that_exited_is_not_projected_to_the_limit() {
        // Issue 22: a process that exited at 623 ms was said to reach the limit 41.7 s after
        // the last sample. It grows as fast as the one above, but the recording saw it end.
        let mut exited = growing();
        exited.samples.rss = (0..=60u64).map(|i| (10 + i) << 20).collect();
        let view = timeline(&exited);
        assert!(view.exit.is_some());
        let growth = view.growth.unwrap();
        assert!((growth.recent_bytes_per_s - f64::from(1 << 20)).abs() < 1.0);
        assert_eq!(growth.time_to_limit_s, None);
    }

    #[test]
    fn timeline_events_become_crossings_dumps_and_the_exit() {
        let view = timeline(&growing());
        assert_eq!(view.thresholds[0].crossings, 1);
        assert_eq!(view.thresholds[0].first_crossed_s, Some(35.0));
        assert_eq!(view.dumps.len(), 1);
        assert_eq!(view.dumps[0].t_s, 36.0);
        assert_eq!(view.events[0].kind, "act");
        assert!(view.events[0].text.contains("host memory reached 45.0 MiB"));
        assert_eq!(
            view.exit,
            Some(ExitView {
                t_s: 60.0,
                code: None,
                signal: Some(9)
            })
        );
    }

    #[test]
    fn timeline_empty_recordings_have_no_peaks() {
        let view = timeline(&Timeline::default());
        assert_eq!(view.samples, 0);
        assert_eq!(view.peak_rss, None);
        assert_eq!(view.growth, None);
    }
}
