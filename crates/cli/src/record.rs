//! `heapgraph record`: samples a process tree's memory at an interval into a timeline (`.hgt`),
//! alerts at `--warn`, and at `--act` takes a dump of the right kind while there is still time.
//! The policy (thresholds, when a dump is due, the timeline's header) is
//! `heapgraph_capture::sampler::Session`'s, and the sampler, the writer and the triggers live
//! beside it; this module runs the loop on the interval's grid, the status line, and the dumps
//! (one at a time, on a thread of their own, so that sampling goes on while a dump is written:
//! its memory cost shows on the chart).

use crate::args::RecordArgs;
use crate::capture::{absolute, dump_python};
use anyhow::{Context, bail};
use heapgraph_capture::sampler::session::Crossing;
use heapgraph_capture::sampler::trigger::{self, DumpMethod, Dumped, Target};
use heapgraph_capture::sampler::{
    Event, HostLimit, Plan, Sample, Sampler, Session, Subject, TimelineWriter, procfs,
};
use heapgraph_format::units::{Level, duration_text as duration_text_of};
use heapgraph_format::{EventChunk, Resource};
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

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A crossing, in a sentence: `act: host memory is 122.2 MiB, at or above 120.0 MiB, at 4.8 s`.
fn alert(crossing: &Crossing) -> String {
    let what = match crossing.resource {
        Resource::Host => "host memory".to_owned(),
        Resource::Gpu(index) => format!("GPU {index} memory"),
    };
    let line = match crossing.spec {
        Level::Share(_) => format!(
            "{} of the limit, {}",
            crossing.spec,
            human_bytes(crossing.threshold_bytes)
        ),
        Level::Bytes(_) => human_bytes(crossing.threshold_bytes),
    };
    format!(
        "{}: {what} is {}, at or above {line}, at {}",
        crossing.level.name(),
        human_bytes(crossing.bytes),
        duration_text(crossing.t_ms as f64 / 1000.0)
    )
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

/// The dumps of a recording: where they go, how many were written, the one under way. When
/// one may start is the session's to say.
struct Dumps {
    dir: PathBuf,
    timeout: Duration,
    started: u32,
    written: u32,
    in_flight: Option<InFlight>,
}

impl Dumps {
    /// A dump is due at `t_ms`: dumps the process of the tree that holds the most, or records
    /// why it cannot.
    fn start(
        &mut self,
        sample: &Sample,
        t_ms: u64,
        session: &mut Session,
        writer: &mut TimelineWriter,
        console: &mut Console,
    ) -> WriteResult<()> {
        let Some(target) = trigger::choose_target(&sample.processes_rss) else {
            return Ok(());
        };
        let method = match target.method.clone() {
            Ok(method) => method,
            Err(reason) => {
                console.say(&format!("cannot dump process {}: {reason}", target.pid));
                return writer.event(EventChunk::dump_failed(
                    t_ms,
                    target.runtime.name(),
                    target.pid,
                    reason,
                ));
            }
        };
        session.dump_started(t_ms);
        self.started += 1;
        let name = trigger::dump_file_name(
            &procfs::command_line(target.pid),
            target.pid,
            self.started,
            t_ms,
            &method,
        );
        let path = self.dir.join(name);
        console.say(&format!(
            "taking a {} dump of process {}",
            method.dump_kind(),
            target.pid
        ));
        let (send, done) = mpsc::channel();
        let (kind, pid) = (method.dump_kind(), target.pid);
        let (dir, timeout) = (self.dir.clone(), self.timeout);
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

    /// Records the dump under way if it has ended; with `wait`, waits for it first.
    fn settle(
        &mut self,
        t_ms: u64,
        wait: bool,
        session: &mut Session,
        writer: &mut TimelineWriter,
        console: &mut Console,
    ) -> WriteResult<()> {
        let Some(dump) = &self.in_flight else {
            return Ok(());
        };
        let outcome = if wait {
            console.say("waiting for the dump under way");
            dump.done
                .recv_timeout(self.timeout)
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
                    writer.event(EventChunk::dump(
                        t_ms,
                        file.path.display().to_string(),
                        file.kind,
                        dump.pid,
                        took,
                    ))?;
                    console.say(&format!(
                        "wrote {} ({}, in {})",
                        file.path.display(),
                        file.kind,
                        duration_text(took as f64 / 1000.0)
                    ));
                }
            }
            Err(reason) => {
                console.say(&format!(
                    "the {} dump of process {} failed: {reason}",
                    dump.kind, dump.pid
                ));
                writer.event(EventChunk::dump_failed(t_ms, dump.kind, dump.pid, reason))?;
            }
        }
        self.in_flight = None;
        session.dump_ended();
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

/// The session's plan: the thresholds and the dump policy the arguments give.
fn plan(args: &RecordArgs) -> Plan {
    Plan {
        warn: args.warn,
        act: args.act,
        gpu_warn: args.gpu_warn,
        gpu_act: args.gpu_act,
        act_every: args.act_every,
        max_dumps: args.max_dumps,
        interval: args.interval,
    }
}

pub(crate) fn record(args: &RecordArgs) -> anyhow::Result<(String, ExitCode)> {
    if args.interval < MIN_INTERVAL {
        bail!(
            "--interval {} is below the shortest, {}",
            duration_text_of(args.interval),
            duration_text_of(MIN_INTERVAL)
        );
    }
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
    let prepared = prepare(args, &recorded, started_at_ms);
    let (mut recording, output) = match prepared {
        Ok(prepared) => prepared,
        Err(err) => {
            recorded.abandon();
            return Err(err);
        }
    };
    let exit_status = recording
        .run(&mut recorded, started, &interrupts, &terminations)
        .with_context(|| format!("cannot write {}", output.display()))?;
    recording
        .finish(&recorded, exit_status, started)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let summary = format!(
        "wrote {} ({} samples over {}, peak RSS {}, {} dump{}); `heapgraph report {}` draws it\n",
        output.display(),
        recording.session.samples(),
        duration_text(started.elapsed().as_secs_f64()),
        human_bytes(recording.session.peak_rss()),
        recording.dumps.written,
        if recording.dumps.written == 1 {
            ""
        } else {
            "s"
        },
        output.display()
    );
    // Everything goes to stderr: stdout belongs to the recorded command.
    let _ = write!(std::io::stderr().lock(), "{summary}");
    Ok((String::new(), exit_code_of(exit_status)))
}

/// A recording under way.
struct Recording<'a> {
    args: &'a RecordArgs,
    sampler: Sampler,
    session: Session,
    writer: TimelineWriter,
    console: Console,
    dumps: Dumps,
    oom_kills_before: Option<u64>,
}

/// Everything that can fail before the first sample, done while the child, if any, can still
/// be stopped: the output, the dump directory, the thresholds, the timeline's header.
fn prepare<'a>(
    args: &'a RecordArgs,
    recorded: &Recorded,
    started_at_ms: Option<u64>,
) -> anyhow::Result<(Recording<'a>, PathBuf)> {
    let pid = recorded.pid();
    let subject = match recorded {
        Recorded::Child(_) => Subject::child(pid, args.command.clone()),
        Recorded::Running(_) => Subject::running(pid),
    };
    let output = match &args.output {
        Some(output) => absolute(output)?,
        None => absolute(Path::new(&subject.timeline_name()))?,
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
    let session = Session::new(plan(args), subject, sampler.machine())?;
    let mut console = Console {
        status: !args.quiet && std::io::stderr().is_terminal(),
        shown: false,
    };
    for note in sampler.notes() {
        console.say(note);
    }
    let (header, info) = session.timeline_start(started_at_ms);
    let writer = TimelineWriter::create(&output, &header, info)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let recording = Recording {
        args,
        oom_kills_before: procfs::Cgroup::of(pid).and_then(|cgroup| cgroup.oom_kills()),
        sampler,
        session,
        writer,
        console,
        dumps: Dumps {
            dir: dump_dir,
            timeout: args.dump_timeout,
            started: 0,
            written: 0,
            in_flight: None,
        },
    };
    Ok((recording, output))
}

impl Recording<'_> {
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
            self.take(&sample)?;
            self.dumps.settle(
                millis(started.elapsed()),
                false,
                &mut self.session,
                &mut self.writer,
                &mut self.console,
            )?;
            let limit = self.session.machine().limit.as_ref();
            self.console.status(&status_line(
                &sample,
                self.session.peak_rss(),
                limit,
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

    /// Hands the sample to the session, and writes, says and does what it calls for.
    fn take(&mut self, sample: &Sample) -> WriteResult<()> {
        for event in self.session.observe(sample) {
            match &event {
                Event::Crossed(crossing) => self.console.say(&alert(crossing)),
                Event::NoDump { reason, .. } => self.console.say(&format!("no dump: {reason}")),
                Event::DumpDue { t_ms } => {
                    self.dumps.start(
                        sample,
                        *t_ms,
                        &mut self.session,
                        &mut self.writer,
                        &mut self.console,
                    )?;
                }
            }
            if let Some(chunk) = event.chunk() {
                self.writer.event(chunk)?;
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
            &mut self.session,
            &mut self.writer,
            &mut self.console,
        )?;
        let t_ms = millis(started.elapsed());
        let pid = recorded.pid();
        if let Some(status) = exit_status {
            self.writer
                .event(EventChunk::exit(t_ms, status.code(), status.signal()))?;
        } else if !Path::new(&format!("/proc/{pid}")).exists() {
            self.writer.event(EventChunk::exit(t_ms, None, None))?;
        }
        let oom_kills_after = procfs::Cgroup::of(pid).and_then(|cgroup| cgroup.oom_kills());
        if let (Some(before), Some(after)) = (self.oom_kills_before, oom_kills_after)
            && after > before
        {
            self.writer.event(EventChunk::note(
                t_ms,
                format!(
                    "the cgroup's OOM killer killed {} process{} during the recording",
                    after - before,
                    if after - before == 1 { "" } else { "es" }
                ),
            ))?;
        }
        self.console.clear();
        self.writer.finish()
    }
}
