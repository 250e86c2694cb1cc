//! The `heapgraph` command: clap arguments become library options at this edge, each verb
//! lives in its own module, and `run` is the one place errors turn into exit codes.

mod alloc;
#[cfg(target_os = "linux")]
mod allocator;
/// Spilling needs Linux's unnamed files; elsewhere the system's allocator, and no spilling.
#[cfg(not(target_os = "linux"))]
mod allocator {
    pub(crate) const SPILL_FROM: usize = 64 << 20;

    pub(crate) fn spill_to(_dir: &std::path::Path, _from: usize) -> anyhow::Result<()> {
        anyhow::bail!("--spill needs Linux; run with --spill never")
    }

    pub(crate) fn spilled() -> Option<(usize, usize, &'static std::path::Path)> {
        None
    }

    /// No scratch files either: the indexes stay in memory.
    pub(crate) fn scratch_in(_dir: &std::path::Path) {}
}
mod args;
mod capture;
mod export;
mod holding;
mod load;
mod mcp;
mod record;
mod report;
mod serve;
mod verbs;
mod waste;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            let mut message = format!("heapgraph: {error}");
            for cause in error.chain().skip(1) {
                message.push_str(&format!(": {cause}"));
            }
            let _ = writeln!(std::io::stderr(), "{message}");
            ExitCode::from(2)
        }
    }
}

/// Runs one command. Exit codes: 0 success, 1 a gate failed, 2 bad usage or unreadable input.
fn run(cli: args::Cli) -> anyhow::Result<ExitCode> {
    #[cfg(target_os = "linux")]
    // SAFETY: `FileBlocks` lists every block it maps in the global allocator's own list,
    // which frees it (by address) as the block of the size and alignment it was made for.
    unsafe {
        heapgraph_model::file_pages::set_block_mapper(&allocator::FileBlocks);
    }
    #[cfg(target_os = "linux")]
    {
        allocator::choose_page_size();
        allocator::fix_mmap_threshold();
    }
    heapgraph_model::on_memory_freed(load::release_freed_memory);
    if cli.timings {
        heapgraph_model::keep_timings();
    }
    load::set_spill(cli.spill, cli.temp_dir.clone(), cli.spill_from)?;
    let mut code = ExitCode::SUCCESS;
    let output = match cli.command {
        args::Command::Summary(args) => verbs::summary(&args)?,
        args::Command::Top(args) => verbs::top(&args)?,
        args::Command::WhoHolds(args) => verbs::who_holds(&args)?,
        args::Command::Dominators(args) => verbs::dominators(&args)?,
        args::Command::Suspects(args) => verbs::suspects(&args)?,
        args::Command::Strings(args) => verbs::strings(&args)?,
        args::Command::Paths(args) => holding::paths(&args)?,
        args::Command::DominatedBy(args) => holding::dominated_by(&args)?,
        args::Command::Diff(args) => {
            let (output, gate_failed) = verbs::diff(&args)?;
            if gate_failed {
                code = ExitCode::from(1);
            }
            output
        }
        args::Command::Gpu(args) => alloc::gpu(&args)?,
        args::Command::Leaking(args) => verbs::leaking(&args)?,
        args::Command::Leaks(args) => verbs::leaks(&args)?,
        args::Command::Report(args) => report::report(&args)?,
        args::Command::Graph(args) => verbs::graph(&args)?,
        args::Command::Record(args) => {
            let (output, exit) = record::record(&args)?;
            code = exit;
            output
        }
        args::Command::Capture(args::CaptureCommand::Python(args)) => capture::python(&args)?,
        args::Command::Convert(args) => verbs::convert(&args)?,
        args::Command::Waste(args) => waste::waste(&args)?,
        args::Command::Redact(args) => waste::redact(&args)?,
        args::Command::Serve(args) => serve::serve(&args)?,
        args::Command::Mcp(args) => mcp::mcp(&args)?,
        args::Command::Export(args) => {
            let (output, failed) = export::export(&args)?;
            if failed {
                code = ExitCode::from(2);
            }
            output
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(output.as_bytes())?;
    stdout.flush()?;
    if cli.timings {
        write_timings(&mut std::io::stderr().lock())?;
    }
    Ok(code)
}

/// `--timings`: each pass kept, in the order they started, with the start's offset so that
/// passes run inside or beside others show as such, and the memory resident when it ended and
/// at most until then (where the peak was: the first pass whose peak is the run's).
fn write_timings(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "passes ({} threads): start, wall time, resident at its end, peak until then, pass",
        rayon::current_num_threads()
    )?;
    let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
    for pass in heapgraph_model::take_timings() {
        let (resident, peak) = pass.memory.map_or_else(
            || ("? MiB".to_owned(), "? MiB".to_owned()),
            |memory| (mib(memory.resident), mib(memory.peak)),
        );
        writeln!(
            out,
            "{:>9.3} s {:>9.3} s {resident:>10} {peak:>10}  {}",
            pass.start.as_secs_f64(),
            pass.wall.as_secs_f64(),
            pass.name
        )?;
    }
    if let Some((blocks, peak, dir)) = allocator::spilled() {
        writeln!(
            out,
            "spilled: {blocks} blocks to files in {}, at most {} MiB at once",
            dir.display(),
            peak >> 20
        )?;
    }
    Ok(())
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
