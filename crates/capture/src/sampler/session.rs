//! The recorder's engine: a [`Session`] is fed samples and emits [`Event`]s, by the policy of
//! `heapgraph record`. It watches the thresholds (host levels of the limit or absolute, GPU
//! levels of each device's memory), says when an act crossing calls for a dump and when the
//! policy refuses one (one dump at a time, `--max-dumps`, `--act-every`), and writes the
//! timeline's header. It reads no clock and does no I/O: time is each sample's `t_ms`, so the
//! policy is tested with synthetic samples. Finding the process to dump and taking the dump are
//! the caller's ([`super::trigger`]), which reports back through [`Session::dump_started`] and
//! [`Session::dump_ended`].

use super::trigger::{self, Runtime};
use super::{GpuDevice, HostLimit, SOURCE_FORMAT, Sample, Watch};
use heapgraph_format::units::{self, Level};
use heapgraph_format::{
    EventChunk, GpuInfo, Header, KIND_TIMELINE, Resource, ThresholdInfo, ThresholdLevel,
    TimelineInfoChunk,
};
use std::fmt;
use std::time::Duration;

/// What the user asked of a recording: the thresholds and the dump policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Alert when host memory reaches this.
    pub warn: Option<Level>,
    /// Dump when host memory reaches this.
    pub act: Option<Level>,
    /// Alert when a GPU's memory reaches this; by default `warn`, when it is a share.
    pub gpu_warn: Option<Level>,
    /// Dump when a GPU's memory reaches this; by default `act`, when it is a share.
    pub gpu_act: Option<Level>,
    /// The least time between the starts of two dumps.
    pub act_every: Duration,
    /// The most dumps to start.
    pub max_dumps: u32,
    /// The time between samples (written into the timeline).
    pub interval: Duration,
}

/// The process a recording is of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// Its pid.
    pub pid: u32,
    /// Its command line.
    pub command: Vec<String>,
    /// What it runs.
    pub runtime: Runtime,
}

impl Subject {
    /// A child just started with `command`: it may not have run its program yet, so the
    /// command, not `/proc`, names the runtime.
    pub fn child(pid: u32, command: Vec<String>) -> Subject {
        Subject {
            pid,
            runtime: trigger::runtime_of(None, &command),
            command,
        }
    }

    /// A process already running, as `/proc` shows it.
    pub fn running(pid: u32) -> Subject {
        Subject {
            pid,
            runtime: trigger::inspect(pid).runtime,
            command: super::procfs::command_line(pid),
        }
    }

    /// The timeline's file name when none is given: `PROGRAM-PID.hgt`.
    pub fn timeline_name(&self) -> String {
        format!("{}-{}.hgt", trigger::program_name(&self.command), self.pid)
    }
}

/// What the machine offers the thresholds: the host limit, the GPUs, and what could not be
/// measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machine {
    /// The limit host shares are taken of.
    pub limit: Option<HostLimit>,
    /// The machine's memory.
    pub system_memory: Option<u64>,
    /// The GPUs sampled, in the order of [`Sample::gpus`].
    pub gpus: Vec<GpuDevice>,
    /// What the sampler could not measure, in sentences.
    pub notes: Vec<String>,
}

/// Why a session cannot start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A host level is a share, and no limit is known.
    #[error(
        "--{level} {spec}: no limit is known to take a share of (no cgroup limit, and \
         /proc/meminfo cannot be read); give a size such as 12GiB"
    )]
    NoLimit {
        /// `warn` or `act`.
        level: &'static str,
        /// The level, as given.
        spec: String,
    },
}

/// A threshold being watched.
#[derive(Clone, Debug)]
pub struct Threshold {
    /// What it compares.
    pub resource: Resource,
    /// What crossing it does.
    pub level: ThresholdLevel,
    /// The level as given.
    pub spec: Level,
    watch: Watch,
    /// For a GPU threshold, the GPU's position in the sample.
    gpu: Option<usize>,
}

impl Threshold {
    /// The threshold in bytes.
    pub fn bytes(&self) -> u64 {
        self.watch.threshold()
    }

    fn measure(&self, sample: &Sample) -> Option<u64> {
        match self.gpu {
            None => Some(sample.rss),
            Some(index) => sample.gpus.get(index).and_then(|gpu| gpu.process),
        }
    }

    /// The record the timeline's header keeps of it.
    pub fn info(&self) -> ThresholdInfo {
        ThresholdInfo::new(
            self.resource,
            self.level,
            self.bytes(),
            self.spec.to_string(),
        )
    }
}

/// A threshold crossed upwards.
#[derive(Clone, Debug, PartialEq)]
pub struct Crossing {
    /// When.
    pub t_ms: u64,
    /// On what.
    pub resource: Resource,
    /// Which threshold.
    pub level: ThresholdLevel,
    /// What was measured.
    pub bytes: u64,
    /// The threshold in bytes.
    pub threshold_bytes: u64,
    /// The level as given.
    pub spec: Level,
}

impl Crossing {
    /// The timeline's record of it.
    pub fn chunk(&self) -> EventChunk {
        EventChunk::crossed(
            self.t_ms,
            self.level,
            self.resource,
            self.bytes,
            self.threshold_bytes,
        )
    }
}

/// Why the policy takes no dump at an act crossing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A dump is under way.
    InFlight,
    /// `--max-dumps` dumps were started.
    MaxDumps(u32),
    /// The last dump started less than `--act-every` ago.
    TooSoon {
        /// Since the last dump started.
        since: Duration,
        /// `--act-every`.
        act_every: Duration,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::InFlight => f.write_str("a dump is already being taken"),
            Refusal::MaxDumps(max) => {
                write!(f, "{max} dumps were taken already (--max-dumps {max})")
            }
            Refusal::TooSoon { since, act_every } => write!(
                f,
                "the last dump was {} ago (--act-every {})",
                units::duration_text(*since),
                units::duration_text(*act_every)
            ),
        }
    }
}

/// What a sample made happen.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A threshold was crossed upwards.
    Crossed(Crossing),
    /// An act crossing calls for a dump now: the caller picks the process, and calls
    /// [`Session::dump_started`] when it starts one.
    DumpDue {
        /// When.
        t_ms: u64,
    },
    /// An act crossing for which the policy takes no dump.
    NoDump {
        /// When.
        t_ms: u64,
        /// Why.
        reason: Refusal,
    },
}

impl Event {
    /// The timeline's record of it; `None` for [`Event::DumpDue`], whose outcome is recorded
    /// instead.
    pub fn chunk(&self) -> Option<EventChunk> {
        match self {
            Event::Crossed(crossing) => Some(crossing.chunk()),
            Event::DumpDue { .. } => None,
            Event::NoDump { t_ms, reason } => Some(EventChunk::note(
                *t_ms,
                format!("no dump at this crossing: {reason}"),
            )),
        }
    }
}

/// A recording under way, as far as its policy goes.
#[derive(Debug)]
pub struct Session {
    plan: Plan,
    subject: Subject,
    machine: Machine,
    thresholds: Vec<Threshold>,
    dumps_started: u32,
    last_dump_ms: Option<u64>,
    in_flight: bool,
    samples: u64,
    peak_rss: u64,
}

impl Session {
    /// A session of `plan` on `subject`, with the thresholds resolved against `machine`: host
    /// levels against its limit, GPU levels against each GPU's memory. A host size applies to
    /// host memory alone; a host share is also each GPU's level unless the plan gives one.
    ///
    /// # Errors
    /// A host level is a share and the machine knows no limit.
    pub fn new(plan: Plan, subject: Subject, machine: Machine) -> Result<Session, SessionError> {
        let mut thresholds = Vec::new();
        for (level, spec) in [
            (ThresholdLevel::Warn, plan.warn),
            (ThresholdLevel::Act, plan.act),
        ] {
            let Some(spec) = spec else { continue };
            let bytes = match (spec, &machine.limit) {
                (Level::Bytes(bytes), _) => bytes,
                (Level::Share(_), Some(limit)) => spec.bytes(limit.bytes),
                (Level::Share(_), None) => {
                    return Err(SessionError::NoLimit {
                        level: level.name(),
                        spec: spec.to_string(),
                    });
                }
            };
            thresholds.push(Threshold {
                resource: Resource::Host,
                level,
                spec,
                watch: Watch::new(bytes),
                gpu: None,
            });
        }
        let share_of = |spec: Option<Level>| spec.filter(|spec| matches!(spec, Level::Share(_)));
        let gpu_levels = [
            (ThresholdLevel::Warn, plan.gpu_warn.or(share_of(plan.warn))),
            (ThresholdLevel::Act, plan.gpu_act.or(share_of(plan.act))),
        ];
        for (index, gpu) in machine.gpus.iter().enumerate() {
            for (level, spec) in gpu_levels {
                let Some(spec) = spec else { continue };
                thresholds.push(Threshold {
                    resource: Resource::Gpu(gpu.index),
                    level,
                    spec,
                    watch: Watch::new(spec.bytes(gpu.memory_bytes)),
                    gpu: Some(index),
                });
            }
        }
        Ok(Session {
            plan,
            subject,
            machine,
            thresholds,
            dumps_started: 0,
            last_dump_ms: None,
            in_flight: false,
            samples: 0,
            peak_rss: 0,
        })
    }

    /// The thresholds watched, host first, then each GPU's.
    pub fn thresholds(&self) -> &[Threshold] {
        &self.thresholds
    }

    /// The process recorded.
    pub fn subject(&self) -> &Subject {
        &self.subject
    }

    /// The machine, as the session was given it.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The timeline's header and first chunk: what is recorded, and against what.
    /// `started_at_ms` is when the first sample's clock started, in ms since the Unix epoch.
    pub fn timeline_start(&self, started_at_ms: Option<u64>) -> (Header, TimelineInfoChunk) {
        let mut header = Header::new(KIND_TIMELINE, SOURCE_FORMAT, self.subject.runtime.name());
        header.pid = Some(self.subject.pid);
        header.captured_at_ms = started_at_ms;
        header.notes.clone_from(&self.machine.notes);
        let mut info = TimelineInfoChunk::default();
        info.interval_ms = u64::try_from(self.plan.interval.as_millis()).unwrap_or(u64::MAX);
        info.command.clone_from(&self.subject.command);
        info.host_limit_bytes = self.machine.limit.as_ref().map(|limit| limit.bytes);
        info.host_limit_source = self
            .machine
            .limit
            .as_ref()
            .map(|limit| limit.source.clone());
        info.system_memory_bytes = self.machine.system_memory;
        info.gpus = self
            .machine
            .gpus
            .iter()
            .map(|gpu| {
                GpuInfo::new(
                    gpu.index,
                    gpu.name.clone(),
                    gpu.uuid.clone(),
                    gpu.memory_bytes,
                )
            })
            .collect();
        info.thresholds = self.thresholds.iter().map(Threshold::info).collect();
        (header, info)
    }

    /// Takes a sample: the thresholds it crosses, in the order of [`Session::thresholds`], each
    /// act crossing followed by whether a dump is due or why not.
    pub fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        self.samples += 1;
        self.peak_rss = self.peak_rss.max(sample.rss);
        let mut events = Vec::new();
        // The dump is of the tree's process with the most memory, whichever threshold asked:
        // a second act crossing in the same sample asks for the dump the first one did.
        let mut dump_due = false;
        for index in 0..self.thresholds.len() {
            let threshold = &mut self.thresholds[index];
            let Some(bytes) = threshold.measure(sample) else {
                continue;
            };
            if !threshold.watch.observe(bytes) {
                continue;
            }
            let crossing = Crossing {
                t_ms: sample.t_ms,
                resource: threshold.resource,
                level: threshold.level,
                bytes,
                threshold_bytes: threshold.bytes(),
                spec: threshold.spec,
            };
            let act = crossing.level == ThresholdLevel::Act;
            events.push(Event::Crossed(crossing));
            if act {
                let refusal = if dump_due {
                    Some(Refusal::InFlight)
                } else {
                    self.refusal(sample.t_ms)
                };
                events.push(match refusal {
                    Some(reason) => Event::NoDump {
                        t_ms: sample.t_ms,
                        reason,
                    },
                    None => {
                        dump_due = true;
                        Event::DumpDue { t_ms: sample.t_ms }
                    }
                });
            }
        }
        events
    }

    /// Why no dump may start at `t_ms`, if one may not.
    fn refusal(&self, t_ms: u64) -> Option<Refusal> {
        if self.in_flight {
            return Some(Refusal::InFlight);
        }
        if self.dumps_started >= self.plan.max_dumps {
            return Some(Refusal::MaxDumps(self.plan.max_dumps));
        }
        let since = Duration::from_millis(t_ms.saturating_sub(self.last_dump_ms?));
        (since < self.plan.act_every).then_some(Refusal::TooSoon {
            since,
            act_every: self.plan.act_every,
        })
    }

    /// A dump started at `t_ms`: it counts against `--max-dumps` and `--act-every`, and no
    /// other starts until [`Session::dump_ended`].
    pub fn dump_started(&mut self, t_ms: u64) {
        self.dumps_started += 1;
        self.last_dump_ms = Some(t_ms);
        self.in_flight = true;
    }

    /// The dump under way ended, written or not.
    pub fn dump_ended(&mut self) {
        self.in_flight = false;
    }

    /// Whether a dump is under way.
    pub fn dump_in_flight(&self) -> bool {
        self.in_flight
    }

    /// Samples observed.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The highest RSS observed.
    pub fn peak_rss(&self) -> u64 {
        self.peak_rss
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::GpuReading;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn plan() -> Plan {
        Plan {
            warn: None,
            act: None,
            gpu_warn: None,
            gpu_act: None,
            act_every: Duration::from_secs(60),
            max_dumps: 5,
            interval: Duration::from_millis(200),
        }
    }

    /// A machine as a cgroup with a 1 GiB limit and one 80 GiB GPU shows it.
    fn machine() -> Machine {
        Machine {
            limit: Some(HostLimit {
                bytes: GIB,
                source: "cgroup memory.max".to_owned(),
            }),
            system_memory: Some(16 * GIB),
            gpus: vec![GpuDevice {
                index: 3,
                name: "NVIDIA H100 80GB HBM3".to_owned(),
                uuid: "GPU-1".to_owned(),
                memory_bytes: 80 * GIB,
            }],
            notes: vec!["PSS and USS are not measured".to_owned()],
        }
    }

    fn subject() -> Subject {
        Subject::child(4242, vec!["python3".into(), "serve.py".into()])
    }

    fn sample(t_ms: u64, rss: u64, gpu: Option<u64>) -> Sample {
        Sample {
            t_ms,
            rss,
            processes: 1,
            gpus: vec![GpuReading {
                process: gpu,
                ..GpuReading::default()
            }],
            ..Sample::default()
        }
    }

    fn kinds(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|event| match event {
                Event::Crossed(crossing) => {
                    format!("{} {}", crossing.level.name(), crossing.resource.name())
                }
                Event::DumpDue { .. } => "dump".to_owned(),
                Event::NoDump { reason, .. } => format!("no dump: {reason}"),
            })
            .collect()
    }

    #[test]
    fn shares_resolve_against_the_limit_and_each_gpu() {
        let mut plan = plan();
        plan.warn = Some(Level::Share(0.8));
        plan.act = Some(Level::Bytes(900 * MIB));
        let session = Session::new(plan, subject(), machine()).unwrap();
        let watched: Vec<(String, &str, u64, String)> = session
            .thresholds()
            .iter()
            .map(|t| {
                (
                    t.resource.name(),
                    t.level.name(),
                    t.bytes(),
                    t.spec.to_string(),
                )
            })
            .collect();
        // A host size is about host memory only; the share is the GPU's warn level too.
        assert_eq!(
            watched,
            [
                ("host".into(), "warn", 858_993_459, "80%".into()),
                ("host".into(), "act", 900 * MIB, "900MiB".into()),
                ("gpu:3".into(), "warn", 64 * GIB, "80%".into()),
            ]
        );
    }

    #[test]
    fn gpu_levels_of_their_own_replace_the_host_share() {
        let mut plan = plan();
        plan.act = Some(Level::Share(0.9));
        plan.gpu_act = Some(Level::Bytes(70 * GIB));
        let session = Session::new(plan, subject(), machine()).unwrap();
        let gpu = &session.thresholds()[1];
        assert_eq!(gpu.resource, Resource::Gpu(3));
        assert_eq!(gpu.bytes(), 70 * GIB);
    }

    #[test]
    fn a_share_without_a_limit_is_refused() {
        let mut plan = plan();
        plan.act = Some(Level::Share(0.9));
        let machine = Machine {
            limit: None,
            ..machine()
        };
        let err = Session::new(plan, subject(), machine).unwrap_err();
        assert!(err.to_string().starts_with("--act 90%: no limit is known"));
    }

    #[test]
    fn an_act_crossing_asks_for_a_dump_once_per_crossing() {
        let mut plan = plan();
        plan.warn = Some(Level::Bytes(100 * MIB));
        plan.act = Some(Level::Bytes(200 * MIB));
        let mut session = Session::new(plan, subject(), machine()).unwrap();
        let mut seen = Vec::new();
        for (t_ms, rss) in [(0, 50), (200, 150), (400, 250), (600, 260), (800, 198)] {
            seen.push(kinds(&session.observe(&sample(t_ms, rss * MIB, None))));
        }
        let expected: [&[&str]; 5] = [
            &[],
            &["warn host"],
            &["act host", "dump"],
            &[],
            // 198 MiB is within 5% of 200 MiB: not re-armed, so no crossing.
            &[],
        ];
        assert_eq!(seen, expected);
        assert_eq!(session.samples(), 5);
        assert_eq!(session.peak_rss(), 260 * MIB);
    }

    #[test]
    fn the_policy_spaces_and_caps_dumps_and_takes_one_at_a_time() {
        let mut plan = plan();
        plan.act = Some(Level::Bytes(200 * MIB));
        plan.max_dumps = 2;
        plan.act_every = Duration::from_secs(10);
        let mut session = Session::new(plan, subject(), machine()).unwrap();
        // Memory crosses 200 MiB at every other sample, one second apart.
        let mut log = Vec::new();
        for second in 0..30u64 {
            let rss = if second % 2 == 1 { 300 } else { 100 } * MIB;
            for event in session.observe(&sample(second * 1000, rss, None)) {
                match event {
                    Event::DumpDue { t_ms } => {
                        log.push(format!("{t_ms}: dump"));
                        session.dump_started(t_ms);
                    }
                    Event::NoDump { t_ms, reason } => log.push(format!("{t_ms}: {reason}")),
                    Event::Crossed(_) => {}
                }
            }
            // The first dump takes 2.5 s; the second ends at once.
            if second == 3 || second == 11 {
                session.dump_ended();
            }
        }
        assert_eq!(
            log[..6],
            [
                "1000: dump",
                "3000: a dump is already being taken",
                "5000: the last dump was 4s ago (--act-every 10s)",
                "7000: the last dump was 6s ago (--act-every 10s)",
                "9000: the last dump was 8s ago (--act-every 10s)",
                "11000: dump",
            ]
        );
        assert!(
            log[6..]
                .iter()
                .all(|line| line.ends_with("2 dumps were taken already (--max-dumps 2)")),
            "{log:?}"
        );
        assert!(!session.dump_in_flight());
    }

    #[test]
    fn both_crossings_of_one_sample_get_one_dump() {
        let mut plan = plan();
        plan.act = Some(Level::Share(0.5));
        let mut session = Session::new(plan, subject(), machine()).unwrap();
        let events = session.observe(&sample(0, GIB, Some(50 * GIB)));
        assert_eq!(
            kinds(&events),
            [
                "act host",
                "dump",
                "act gpu:3",
                "no dump: a dump is already being taken"
            ]
        );
    }

    #[test]
    fn a_gpu_not_measured_crosses_nothing() {
        let mut plan = plan();
        plan.warn = Some(Level::Share(0.5));
        let mut session = Session::new(plan, subject(), machine()).unwrap();
        assert!(session.observe(&sample(0, 0, None)).is_empty());
        assert_eq!(
            kinds(&session.observe(&sample(200, 0, Some(41 * GIB)))),
            ["warn gpu:3"]
        );
    }

    #[test]
    fn events_are_written_under_their_names() {
        let crossing = Crossing {
            t_ms: 400,
            resource: Resource::Host,
            level: ThresholdLevel::Act,
            bytes: 250 * MIB,
            threshold_bytes: 200 * MIB,
            spec: Level::Bytes(200 * MIB),
        };
        let chunk = Event::Crossed(crossing).chunk().unwrap();
        assert_eq!(
            (chunk.event.as_str(), chunk.resource.as_deref()),
            ("act", Some("host"))
        );
        assert_eq!(chunk.threshold_bytes, Some(200 * MIB));
        let note = Event::NoDump {
            t_ms: 5,
            reason: Refusal::MaxDumps(5),
        }
        .chunk()
        .unwrap();
        assert_eq!(note.event, "note");
        assert_eq!(
            note.message.as_deref(),
            Some("no dump at this crossing: 5 dumps were taken already (--max-dumps 5)")
        );
        assert_eq!(Event::DumpDue { t_ms: 5 }.chunk(), None);
    }

    #[test]
    fn the_header_says_what_is_recorded_against_what() {
        let mut plan = plan();
        plan.act = Some(Level::Share(0.9));
        let session = Session::new(plan, subject(), machine()).unwrap();
        let (header, info) = session.timeline_start(Some(1_700_000_000_000));
        assert_eq!(header.kind, KIND_TIMELINE);
        assert_eq!(header.source_format, SOURCE_FORMAT);
        assert_eq!(header.runtime, "python");
        assert_eq!(header.pid, Some(4242));
        assert_eq!(header.notes, ["PSS and USS are not measured"]);
        assert_eq!(info.interval_ms, 200);
        assert_eq!(info.command, ["python3", "serve.py"]);
        assert_eq!(info.host_limit_bytes, Some(GIB));
        assert_eq!(info.host_limit_source.as_deref(), Some("cgroup memory.max"));
        assert_eq!(info.gpus[0].index, 3);
        let thresholds: Vec<(&str, &str, u64, &str)> = info
            .thresholds
            .iter()
            .map(|t| {
                (
                    t.resource.as_str(),
                    t.level.as_str(),
                    t.bytes,
                    t.spec.as_str(),
                )
            })
            .collect();
        assert_eq!(
            thresholds,
            [
                ("host", "act", 966_367_642, "90%"),
                ("gpu:3", "act", 77_309_411_328, "90%"),
            ]
        );
        assert_eq!(session.subject().timeline_name(), "serve-4242.hgt");
    }
}
