//! `heapgraph record`: samples a process tree's memory at an interval into a timeline (`.hgt`),
//! alerts at `--warn`, and at `--act` takes a dump of the right kind while there is still time.
//! The sampler, the writer and the triggers live in `heapgraph_capture::sampler`; this module
//! runs the loop, the status line and the dumps (one at a time, on a thread of their own, so
//! that sampling goes on while a dump is written: its memory cost shows on the chart).

use crate::args::RecordArgs;
use crate::capture::{absolute, dump_python};
use anyhow::{Context, bail};
use heapgraph_capture::sampler::trigger::{self, DumpMethod, Dumped, Target};
use heapgraph_capture::sampler::{
    GpuDevice, HostLimit, LevelSpec, SOURCE_FORMAT, Sample, Sampler, TimelineWriter, Watch, procfs,
};
use heapgraph_format::{
    EventChunk, GpuInfo, Header, KIND_TIMELINE, ThresholdInfo, TimelineInfoChunk,
};
use heapgraph_report::{duration_text, human_bytes};
use std::io::{IsTerminal, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// The shortest interval: below it, reading `/proc` of a large tree is no longer cheap.
const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// How long a recording of a command waits, after Ctrl-C or SIGTERM, for the command to end
/// before it stops on its own.
const STOP_GRACE: Duration = Duration::from_secs(10);

type WriteResult<T> = Result<T, heapgraph_format::Error>;

/// The thresholds as given, parsed before anything starts.
struct Specs {
    warn: Option<LevelSpec>,
    act: Option<LevelSpec>,
    gpu_warn: Option<LevelSpec>,
    gpu_act: Option<LevelSpec>,
}

impl Specs {
    fn parse(args: &RecordArgs) -> anyhow::Result<Specs> {
        let parse = |flag: &str, text: &Option<String>| -> anyhow::Result<Option<LevelSpec>> {
            text.as_deref()
                .map(|text| {
                    text.parse::<LevelSpec>()
                        .map_err(|message| anyhow::anyhow!("{flag}: {message}"))
                })
                .transpose()
        };
        let warn = parse("--warn", &args.warn)?;
        let act = parse("--act", &args.act)?;
        // A size is about host memory; a share means the same on every GPU.
        let shares_only =
            |spec: Option<LevelSpec>| spec.filter(|spec| matches!(spec, LevelSpec::Share(_)));
        Ok(Specs {
            gpu_warn: parse("--gpu-warn", &args.gpu_warn)?.or(shares_only(warn)),
            gpu_act: parse("--gpu-act", &args.gpu_act)?.or(shares_only(act)),
            warn,
            act,
        })
    }
}

/// A threshold being watched.
struct Watched {
    /// `host` or `gpu:N`.
    resource: String,
    /// `warn` or `act`.
    level: &'static str,
    /// As the user wrote it.
    spec: String,
    watch: Watch,
    /// For a GPU threshold, the GPU's position in the sample.
    gpu: Option<usize>,
}

impl Watched {
    fn measure(&self, sample: &Sample) -> Option<u64> {
        match self.gpu {
            None => Some(sample.rss),
            Some(index) => sample.gpus.get(index).and_then(|gpu| gpu.process),
        }
    }

    fn what(&self) -> String {
        match self.gpu {
            None => "host memory".to_owned(),
            Some(_) => format!("{} memory", self.resource.replace("gpu:", "GPU ")),
        }
    }

    /// The alert, in a sentence.
    fn alert(&self, bytes: u64, t_ms: u64) -> String {
        let line = if self.spec.ends_with('%') {
            format!(
                "{} of the limit, {}",
                self.spec,
                human_bytes(self.watch.threshold())
            )
        } else {
            human_bytes(self.watch.threshold())
        };
        format!(
            "{}: {} is {}, at or above {line}, at {}",
            self.level,
            self.what(),
            human_bytes(bytes),
            duration_text(t_ms as f64 / 1000.0)
        )
    }
}

fn watches(
    args: &RecordArgs,
    specs: &Specs,
    limit: Option<&HostLimit>,
    gpus: &[GpuDevice],
) -> anyhow::Result<Vec<Watched>> {
    let mut watched = Vec::new();
    for (level, spec, text) in [
        ("warn", specs.warn, &args.warn),
        ("act", specs.act, &args.act),
    ] {
        let Some(spec) = spec else { continue };
        let bytes = match (spec, limit) {
            (LevelSpec::Bytes(bytes), _) => bytes,
            (LevelSpec::Share(_), Some(limit)) => spec.bytes(limit.bytes),
            (LevelSpec::Share(_), None) => bail!(
                "--{level} {}: no limit is known to take a share of (no cgroup limit, and \
                 /proc/meminfo cannot be read); give a size such as 12GiB",
                text.as_deref().unwrap_or_default()
            ),
        };
        watched.push(Watched {
            resource: "host".to_owned(),
            level,
            spec: text.clone().unwrap_or_default(),
            watch: Watch::new(bytes),
            gpu: None,
        });
    }
    for (index, gpu) in gpus.iter().enumerate() {
        for (level, spec, text) in [
            (
                "warn",
                specs.gpu_warn,
                args.gpu_warn.as_ref().or(args.warn.as_ref()),
            ),
            (
                "act",
                specs.gpu_act,
                args.gpu_act.as_ref().or(args.act.as_ref()),
            ),
        ] {
            let Some(spec) = spec else { continue };
            watched.push(Watched {
                resource: format!("gpu:{}", gpu.index),
                level,
                spec: text.cloned().unwrap_or_default(),
                watch: Watch::new(spec.bytes(gpu.memory_bytes)),
                gpu: Some(index),
            });
        }
    }
    Ok(watched)
}

/// The recorded process: a child this command started, or one it was pointed at.
enum Recorded {
    Child(Child),
    Running(u32),
}

impl Recorded {
    fn pid(&self) -> u32 {
        match self {
            Recorded::Child(child) => child.id(),
            Recorded::Running(pid) => *pid,
        }
    }

    /// The child's exit status, once it has ended.
    fn exited(&mut self) -> Option<ExitStatus> {
        match self {
            Recorded::Child(child) => child.try_wait().ok().flatten(),
            Recorded::Running(_) => None,
        }
    }

    /// The child's exit status, waiting for it to finish exiting.
    fn wait_exit(&mut self) -> Option<ExitStatus> {
        match self {
            Recorded::Child(child) => child.wait().ok(),
            Recorded::Running(_) => None,
        }
    }

    /// Stops a child that was started for nothing (the timeline could not be written).
    fn abandon(&mut self) {
        if let Recorded::Child(child) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Passes SIGTERM on to a child.
    fn terminate(&self) {
        if let Recorded::Child(child) = self
            && let Ok(pid) = libc::pid_t::try_from(child.id())
        {
            // SAFETY: kill has no memory preconditions; the pid is this process's child.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
}

/// A short name for the program a command line runs, fit for a file name: the script of
/// `python3 serve.py`, the module of `python3 -m app`, else the executable's name.
fn program_name(args: &[String]) -> String {
    let stem = |arg: &str| {
        Path::new(arg)
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut name = args.first().map(|arg| stem(arg)).unwrap_or_default();
    let interpreter = name == "env"
        || trigger::runtime_of(None, std::slice::from_ref(&name)) != trigger::Runtime::Other;
    if interpreter {
        let mut rest = args.iter().skip(1);
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "-c" | "-e" | "--eval" => break,
                "-m" => {
                    if let Some(module) = rest.next() {
                        name.clone_from(module);
                    }
                    break;
                }
                arg if arg.starts_with('-') => {}
                arg => {
                    name = stem(arg);
                    break;
                }
            }
        }
    }
    let clean: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(40)
        .collect();
    if clean.is_empty() {
        "process".to_owned()
    } else {
        clean
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Prints on stderr, above the status line when there is one.
struct Console {
    status: bool,
    shown: bool,
}

impl Console {
    fn say(&mut self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        if self.shown {
            let _ = write!(stderr, "\r\x1b[K");
            self.shown = false;
        }
        let _ = writeln!(stderr, "heapgraph record: {text}");
    }

    fn status(&mut self, text: &str) {
        if self.status {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[K{text}");
            let _ = stderr.flush();
            self.shown = true;
        }
    }

    fn clear(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
            self.shown = false;
        }
    }
}

/// The status line: memory now and at its peak, its share of the limit, GPU memory.
fn status_line(
    sample: &Sample,
    peak_rss: u64,
    limit: Option<&HostLimit>,
    elapsed: Duration,
    dumps: u32,
) -> String {
    let mut line = format!(
        "rss {} (peak {})",
        human_bytes(sample.rss),
        human_bytes(peak_rss)
    );
    if let Some(limit) = limit {
        line.push_str(&format!(
            ", {:.0}% of {}",
            sample.rss as f64 * 100.0 / limit.bytes.max(1) as f64,
            human_bytes(limit.bytes)
        ));
    }
    for (index, gpu) in sample.gpus.iter().enumerate() {
        if let Some(bytes) = gpu.process {
            line.push_str(&format!(" · gpu{index} {}", human_bytes(bytes)));
        }
    }
    line.push_str(&format!(
        " · {} process{} · {}",
        sample.processes,
        if sample.processes == 1 { "" } else { "es" },
        duration_text(elapsed.as_secs_f64())
    ));
    if dumps > 0 {
        line.push_str(&format!(
            " · {dumps} dump{}",
            if dumps == 1 { "" } else { "s" }
        ));
    }
    line
}

/// A dump under way on its own thread.
struct InFlight {
    kind: &'static str,
    pid: u32,
    started: Instant,
    t_ms: u64,
    done: mpsc::Receiver<Result<Vec<Dumped>, String>>,
}

/// The dumps of a recording: how many, when the last was, the one under way.
struct Dumps<'a> {
    args: &'a RecordArgs,
    dir: PathBuf,
    taken: u32,
    written: u32,
    last_at: Option<Instant>,
    in_flight: Option<InFlight>,
}

impl Dumps<'_> {
    /// Why no dump may start now, if one may not.
    fn refusal(&self) -> Option<String> {
        if self.in_flight.is_some() {
            return Some("a dump is already being taken".to_owned());
        }
        if self.taken >= self.args.max_dumps {
            return Some(format!(
                "{} dumps were taken already (--max-dumps)",
                self.args.max_dumps
            ));
        }
        let since = self.last_at?.elapsed();
        (since < self.args.act_every).then(|| {
            format!(
                "the last dump was {} ago (--act-every {})",
                duration_text(since.as_secs_f64()),
                duration_text(self.args.act_every.as_secs_f64())
            )
        })
    }

    /// An act threshold was crossed at `t_ms`: dumps the process of the tree that holds the
    /// most, or records why it cannot.
    fn act(
        &mut self,
        sample: &Sample,
        t_ms: u64,
        writer: &mut TimelineWriter,
        console: &mut Console,
    ) -> WriteResult<()> {
        if let Some(reason) = self.refusal() {
            let mut event = EventChunk::new(t_ms, "note");
            event.message = Some(format!("no dump at this crossing: {reason}"));
            console.say(&format!("no dump: {reason}"));
            return writer.event(event);
        }
        let Some(target) = trigger::choose_target(&sample.processes_rss) else {
            return Ok(());
        };
        let method = match target.method.clone() {
            Ok(method) => method,
            Err(reason) => {
                let mut event = EventChunk::new(t_ms, "dump_failed");
                event.pid = Some(target.pid);
                event.dump_kind = Some(target.runtime.name().to_owned());
                console.say(&format!("cannot dump process {}: {reason}", target.pid));
                event.message = Some(reason);
                return writer.event(event);
            }
        };
        self.taken += 1;
        self.last_at = Some(Instant::now());
        let path = self.path(&target, t_ms, &method);
        console.say(&format!(
            "taking a {} dump of process {}",
            method.dump_kind(),
            target.pid
        ));
        let (send, done) = mpsc::channel();
        let (kind, pid) = (method.dump_kind(), target.pid);
        let (dir, timeout) = (self.dir.clone(), self.args.dump_timeout);
        std::thread::spawn(move || {
            let _ = send.send(take_dump(&target, &method, &path, &dir, timeout));
        });
        self.in_flight = Some(InFlight {
            kind,
            pid,
            started: Instant::now(),
            t_ms,
            done,
        });
        Ok(())
    }

    /// Where the next dump of `target` goes.
    fn path(&self, target: &Target, t_ms: u64, method: &DumpMethod) -> PathBuf {
        let extension = match method {
            DumpMethod::PythonSignal { .. } | DumpMethod::PythonInject => "hgd",
            DumpMethod::NodeSignal { .. } => "heapsnapshot",
            DumpMethod::Jcmd { .. } => "hprof.gz",
        };
        let program = program_name(&procfs::command_line(target.pid));
        self.dir.join(format!(
            "{program}-{}-dump{}-{}s.{extension}",
            target.pid,
            self.taken,
            t_ms / 1000
        ))
    }

    /// Records the dump under way if it has ended; with `wait`, waits for it first.
    fn settle(
        &mut self,
        t_ms: u64,
        wait: bool,
        writer: &mut TimelineWriter,
        console: &mut Console,
    ) -> WriteResult<()> {
        let Some(dump) = &self.in_flight else {
            return Ok(());
        };
        let outcome = if wait {
            console.say("waiting for the dump under way");
            dump.done
                .recv_timeout(self.args.dump_timeout)
                .unwrap_or_else(|_| Err("the dump did not finish".to_owned()))
        } else {
            match dump.done.try_recv() {
                Ok(outcome) => outcome,
                Err(mpsc::TryRecvError::Empty) => return Ok(()),
                Err(mpsc::TryRecvError::Disconnected) => Err("the dump stopped".to_owned()),
            }
        };
        let took = millis(dump.started.elapsed());
        // A dump is marked when it was asked for: what it holds is that moment's memory.
        let t_ms = dump.t_ms.min(t_ms);
        match outcome {
            Ok(files) => {
                self.written += 1;
                for file in files {
                    let mut event = EventChunk::new(t_ms, "dump");
                    event.path = Some(file.path.display().to_string());
                    event.dump_kind = Some(file.kind.to_owned());
                    event.pid = Some(dump.pid);
                    event.duration_ms = Some(took);
                    writer.event(event)?;
                    console.say(&format!(
                        "wrote {} ({}, in {})",
                        file.path.display(),
                        file.kind,
                        duration_text(took as f64 / 1000.0)
                    ));
                }
            }
            Err(reason) => {
                let mut event = EventChunk::new(t_ms, "dump_failed");
                event.dump_kind = Some(dump.kind.to_owned());
                event.pid = Some(dump.pid);
                console.say(&format!(
                    "the {} dump of process {} failed: {reason}",
                    dump.kind, dump.pid
                ));
                event.message = Some(reason);
                writer.event(event)?;
            }
        }
        self.in_flight = None;
        Ok(())
    }
}

/// Takes one dump of `target` by `method` (on the dump's own thread).
fn take_dump(
    target: &Target,
    method: &DumpMethod,
    path: &Path,
    dump_dir: &Path,
    timeout: Duration,
) -> Result<Vec<Dumped>, String> {
    match method {
        DumpMethod::PythonSignal { signal } => {
            trigger::python_signal(target, *signal, path, true, timeout)
        }
        DumpMethod::PythonInject => dump_python(target.pid, path, timeout)
            .map(|_| {
                vec![Dumped {
                    path: path.to_owned(),
                    kind: "python-hgd",
                }]
            })
            .map_err(|err| format!("{err:#}")),
        DumpMethod::NodeSignal { signal, dir } => {
            trigger::node_signal(target, *signal, dir, dump_dir, timeout)
        }
        DumpMethod::Jcmd { jcmd } => trigger::jcmd(target, jcmd, path, timeout),
    }
}

/// The exit code of `heapgraph record -- COMMAND`: the command's, or 128 + the signal that
/// ended it, as shells report it.
fn exit_code_of(status: Option<ExitStatus>) -> ExitCode {
    match status {
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            (None, Some(signal)) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
            _ => ExitCode::FAILURE,
        },
        None => ExitCode::SUCCESS,
    }
}

/// Counts SIGINT and SIGTERM from now on. Ctrl-C reaches the whole foreground process group,
/// the command too; SIGTERM reaches this process alone, and is passed on to the command.
fn count_stop_signals() -> anyhow::Result<(Arc<AtomicUsize>, Arc<AtomicUsize>)> {
    let interrupts = Arc::new(AtomicUsize::new(0));
    let terminations = Arc::new(AtomicUsize::new(0));
    for (signal, count) in [
        (signal_hook::consts::SIGINT, &interrupts),
        (signal_hook::consts::SIGTERM, &terminations),
    ] {
        let count = Arc::clone(count);
        // SAFETY: the handler only adds to an atomic, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(signal, move || {
                count.fetch_add(1, Ordering::SeqCst);
            })
        }
        .context("cannot handle SIGINT and SIGTERM")?;
    }
    Ok((interrupts, terminations))
}

/// The header and first chunk of the timeline: what is recorded, against what.
fn timeline_start(
    args: &RecordArgs,
    recorded: &Recorded,
    started_at_ms: Option<u64>,
    sampler: &Sampler,
    limit: Option<&HostLimit>,
    watched: &[Watched],
) -> (Header, TimelineInfoChunk) {
    let pid = recorded.pid();
    // A child just spawned may not have run its program yet: its command names the runtime.
    let (runtime, command) = match recorded {
        Recorded::Child(_) => (
            trigger::runtime_of(None, &args.command),
            args.command.clone(),
        ),
        Recorded::Running(_) => (trigger::inspect(pid).runtime, procfs::command_line(pid)),
    };
    let mut header = Header::new(KIND_TIMELINE, SOURCE_FORMAT, runtime.name());
    header.pid = Some(pid);
    header.captured_at_ms = started_at_ms;
    header.notes = sampler.notes().to_vec();
    let mut info = TimelineInfoChunk::default();
    info.interval_ms = millis(args.interval);
    info.command = command;
    info.host_limit_bytes = limit.map(|limit| limit.bytes);
    info.host_limit_source = limit.map(|limit| limit.source.clone());
    info.system_memory_bytes = sampler.system_memory();
    info.gpus = sampler
        .gpus()
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
    info.thresholds = watched
        .iter()
        .map(|watched| {
            ThresholdInfo::new(
                watched.resource.clone(),
                watched.level.to_owned(),
                watched.watch.threshold(),
                watched.spec.clone(),
            )
        })
        .collect();
    (header, info)
}

pub(crate) fn record(args: &RecordArgs) -> anyhow::Result<(String, ExitCode)> {
    if args.interval < MIN_INTERVAL {
        bail!(
            "--interval {} ms is below the shortest, {} ms",
            args.interval.as_millis(),
            MIN_INTERVAL.as_millis()
        );
    }
    let specs = Specs::parse(args)?;
    let (interrupts, terminations) = count_stop_signals()?;
    let mut recorded = match (args.pid, args.command.split_first()) {
        (Some(pid), _) => {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                bail!("no process has pid {pid}");
            }
            Recorded::Running(pid)
        }
        (None, Some((program, rest))) => Recorded::Child(
            Command::new(program)
                .args(rest)
                .spawn()
                .with_context(|| format!("cannot start {program}"))?,
        ),
        (None, None) => bail!("give the command to record after `--`, or --pid PID"),
    };
    // Samples count from here, and the header says when here was: loading NVML, in between,
    // can take a second.
    let started = Instant::now();
    let started_at_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(millis);
    let prepared = prepare(args, &specs, &recorded, started_at_ms);
    let (mut session, output) = match prepared {
        Ok(prepared) => prepared,
        Err(err) => {
            recorded.abandon();
            return Err(err);
        }
    };
    let exit_status = session
        .run(&mut recorded, started, &interrupts, &terminations)
        .with_context(|| format!("cannot write {}", output.display()))?;
    session
        .finish(&recorded, exit_status, started)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let summary = format!(
        "wrote {} ({} samples over {}, peak RSS {}, {} dump{}); `heapgraph report {}` draws it\n",
        output.display(),
        session.samples,
        duration_text(started.elapsed().as_secs_f64()),
        human_bytes(session.peak_rss),
        session.dumps.written,
        if session.dumps.written == 1 { "" } else { "s" },
        output.display()
    );
    // Everything goes to stderr: stdout belongs to the recorded command.
    let _ = write!(std::io::stderr().lock(), "{summary}");
    Ok((String::new(), exit_code_of(exit_status)))
}

/// A recording under way.
struct Session<'a> {
    args: &'a RecordArgs,
    sampler: Sampler,
    limit: Option<HostLimit>,
    watched: Vec<Watched>,
    writer: TimelineWriter,
    console: Console,
    dumps: Dumps<'a>,
    oom_kills_before: Option<u64>,
    samples: u64,
    peak_rss: u64,
}

/// Everything that can fail before the first sample, done while the child, if any, can still
/// be stopped: the output, the dump directory, the thresholds, the timeline's header.
fn prepare<'a>(
    args: &'a RecordArgs,
    specs: &Specs,
    recorded: &Recorded,
    started_at_ms: Option<u64>,
) -> anyhow::Result<(Session<'a>, PathBuf)> {
    let pid = recorded.pid();
    let output = match &args.output {
        Some(output) => absolute(output)?,
        None => {
            let command = match recorded {
                Recorded::Child(_) => args.command.clone(),
                Recorded::Running(pid) => procfs::command_line(*pid),
            };
            absolute(Path::new(&format!("{}-{pid}.hgt", program_name(&command))))?
        }
    };
    let dump_dir = match &args.dump_dir {
        Some(dir) => absolute(dir)?,
        None => output
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_owned),
    };
    std::fs::create_dir_all(&dump_dir)
        .with_context(|| format!("cannot create the dump directory {}", dump_dir.display()))?;
    let sampler = Sampler::new(pid);
    let limit = sampler.host_limit();
    let watched = watches(args, specs, limit.as_ref(), sampler.gpus())?;
    let mut console = Console {
        status: !args.quiet && std::io::stderr().is_terminal(),
        shown: false,
    };
    for note in sampler.notes() {
        console.say(note);
    }
    let (header, info) = timeline_start(
        args,
        recorded,
        started_at_ms,
        &sampler,
        limit.as_ref(),
        &watched,
    );
    let writer = TimelineWriter::create(&output, &header, info)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let session = Session {
        args,
        oom_kills_before: procfs::Cgroup::of(pid).and_then(|cgroup| cgroup.oom_kills()),
        sampler,
        limit,
        watched,
        writer,
        console,
        dumps: Dumps {
            args,
            dir: dump_dir,
            taken: 0,
            written: 0,
            last_at: None,
            in_flight: None,
        },
        samples: 0,
        peak_rss: 0,
    };
    Ok((session, output))
}

impl Session<'_> {
    /// Samples until the process ends, the recording is stopped, or its duration is over;
    /// returns the child's exit status, when it was seen.
    fn run(
        &mut self,
        recorded: &mut Recorded,
        started: Instant,
        interrupts: &AtomicUsize,
        terminations: &AtomicUsize,
    ) -> anyhow::Result<Option<ExitStatus>> {
        let mut tick: u32 = 0;
        let mut stop_seen_at: Option<Instant> = None;
        loop {
            let t_ms = millis(started.elapsed());
            let Some(sample) = self.sampler.sample(t_ms) else {
                // The process is ending (its memory is gone) or has ended: a child's status is
                // there once it has finished exiting.
                return Ok(recorded.wait_exit());
            };
            self.writer.sample(&sample)?;
            self.samples += 1;
            self.peak_rss = self.peak_rss.max(sample.rss);
            self.check_thresholds(&sample, t_ms)?;
            self.dumps.settle(
                millis(started.elapsed()),
                false,
                &mut self.writer,
                &mut self.console,
            )?;
            self.console.status(&status_line(
                &sample,
                self.peak_rss,
                self.limit.as_ref(),
                started.elapsed(),
                self.dumps.written,
            ));
            if let Some(status) = recorded.exited() {
                return Ok(Some(status));
            }
            let stops = interrupts.load(Ordering::SeqCst) + terminations.load(Ordering::SeqCst);
            if stops > 0 {
                if matches!(recorded, Recorded::Running(_)) {
                    return Ok(None);
                }
                if stop_seen_at.is_none() && terminations.load(Ordering::SeqCst) > 0 {
                    recorded.terminate();
                }
                let since = *stop_seen_at.get_or_insert_with(Instant::now);
                if stops > 1 || since.elapsed() > STOP_GRACE {
                    self.console.say(&format!(
                        "stopped recording; process {} goes on",
                        recorded.pid()
                    ));
                    return Ok(None);
                }
            }
            if self
                .args
                .duration
                .is_some_and(|limit| started.elapsed() >= limit)
            {
                return Ok(None);
            }
            // Samples keep to the interval's grid, whatever each one cost.
            tick = tick.saturating_add(1);
            if let Some(wait) = (self.args.interval * tick).checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }

    fn check_thresholds(&mut self, sample: &Sample, t_ms: u64) -> WriteResult<()> {
        for index in 0..self.watched.len() {
            let watched = &mut self.watched[index];
            let Some(bytes) = watched.measure(sample) else {
                continue;
            };
            if !watched.watch.observe(bytes) {
                continue;
            }
            let mut event = EventChunk::new(t_ms, watched.level);
            event.resource = Some(watched.resource.clone());
            event.bytes = Some(bytes);
            event.threshold_bytes = Some(watched.watch.threshold());
            self.console.say(&watched.alert(bytes, t_ms));
            let act = watched.level == "act";
            self.writer.event(event)?;
            if act {
                self.dumps
                    .act(sample, t_ms, &mut self.writer, &mut self.console)?;
            }
        }
        Ok(())
    }

    /// Waits for a dump under way, records how the process ended, and closes the timeline.
    fn finish(
        &mut self,
        recorded: &Recorded,
        exit_status: Option<ExitStatus>,
        started: Instant,
    ) -> WriteResult<()> {
        self.dumps.settle(
            millis(started.elapsed()),
            true,
            &mut self.writer,
            &mut self.console,
        )?;
        let t_ms = millis(started.elapsed());
        let pid = recorded.pid();
        if let Some(status) = exit_status {
            let mut event = EventChunk::new(t_ms, "exit");
            event.exit_code = status.code();
            event.signal = status.signal();
            self.writer.event(event)?;
        } else if !Path::new(&format!("/proc/{pid}")).exists() {
            self.writer.event(EventChunk::new(t_ms, "exit"))?;
        }
        let oom_kills_after = procfs::Cgroup::of(pid).and_then(|cgroup| cgroup.oom_kills());
        if let (Some(before), Some(after)) = (self.oom_kills_before, oom_kills_after)
            && after > before
        {
            let mut event = EventChunk::new(t_ms, "note");
            event.message = Some(format!(
                "the cgroup's OOM killer killed {} process{} during the recording",
                after - before,
                if after - before == 1 { "" } else { "es" }
            ));
            self.writer.event(event)?;
        }
        self.console.clear();
        self.writer.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::program_name;

    fn name(args: &[&str]) -> String {
        program_name(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn programs_are_named_by_what_they_run() {
        assert_eq!(
            name(&["python3", "-u", "/srv/app/serve.py", "--port", "8"]),
            "serve"
        );
        assert_eq!(name(&["python3", "-m", "uvicorn", "app:api"]), "uvicorn");
        assert_eq!(name(&["python3", "-c", "import x\nprint(1)"]), "python3");
        assert_eq!(
            name(&["node", "--heapsnapshot-signal=SIGUSR2", "server.js"]),
            "server"
        );
        assert_eq!(name(&["./my service"]), "myservice");
        assert_eq!(name(&[]), "process");
    }
}
