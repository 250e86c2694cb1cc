#!/usr/bin/env bash
# heapgraph on dumps up to larger than this machine's memory: wall time and memory per verb and
# size, to show how both grow (issue 20, item 4). The dumps are real JVM heaps replicated:
#
#   python3 benches/corpus/gen_hprof.py --size medium --out DIR     # 0.5 GB
#   python3 benches/corpus/gen_hprof.py --size large --out DIR      # 2.5 GB
#   cargo build --release --example replicate_hprof
#   target/release/examples/replicate_hprof DIR/java-large.hprof DIR/java-x4.hprof 4    # 10 GB
#   target/release/examples/replicate_hprof DIR/java-large.hprof DIR/java-x12.hprof 12  # 30 GB
#
# Usage (from anywhere inside the repository):
#   HEAPGRAPH_BIN=target/release/heapgraph benches/larger_than_memory.sh DUMP...
# Environment:
#   HEAPGRAPH_BIN  the heapgraph binary (default: target/release/heapgraph, built if missing)
#   VERBS          the verbs to run on each dump, space-separated (default "summary"); each runs
#                  as `heapgraph --timings VERB DUMP --format json`, but `who-holds`, which takes
#                  `--type LeakApp$Session`, and `convert`, which writes DUMP.hgd and deletes it
#                  after
#   TEMP_DIR       passed as --temp-dir (default: the system's)
#   SPILL          passed as --spill: auto (the default), always, never
#   LOG_DIR        where each run's stdout and stderr (--timings) are kept, as
#                  DUMP-NAME.VERB.SPILL.out and .err (default: not kept)
#   MEMORY_LIMIT   bytes of memory a byte of dump (e.g. 0.35): each run is put in a memory
#                  cgroup of its own limited to that share of the dump, as a container with that
#                  limit would be, so that the kernel must write spilled pages out rather than
#                  leave them resident; the dump's pages are dropped from the page cache first,
#                  so that the run reads them inside its limit; the table adds the cgroup's
#                  peak usage (which counts the page cache it was charged for, the dump's pages
#                  read among them) and its out-of-memory kills (benches/memory_cgroup.sh
#                  makes it: root and a writable memory cgroup, v2 or v1). Default: no limit.
# Needs: python3. The machine should be otherwise idle.
#
# Memory is sampled from /proc/PID/status every 0.2 s: VmHWM (the peak resident set, which
# counts the spilled columns' pages while they are resident) and the peak of RssAnon (memory
# the kernel cannot write out without swap: what an out-of-memory kill counts). Prints a
# markdown table, a row as each run ends, with the `spilled:` line of --timings where the run
# spilled; a run that fails is a row that says so, and the script exits 1 at the end.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
HG="${HEAPGRAPH_BIN:-$ROOT/target/release/heapgraph}"
if [[ ! -x "$HG" ]]; then
  cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" --bin heapgraph
fi
if [[ $# -eq 0 ]]; then
  echo "usage: $0 DUMP..." >&2
  exit 2
fi

HG="$HG" VERBS="${VERBS:-summary}" TEMP_DIR="${TEMP_DIR:-}" LOG_DIR="${LOG_DIR:-}" SPILL="${SPILL:-auto}" \
  MEMORY_LIMIT="${MEMORY_LIMIT:-}" CGROUP_TOOL="$ROOT/benches/memory_cgroup.sh" python3 - "$@" <<'EOF'
import os, subprocess, sys, time

hg, verbs, temp_dir = os.environ["HG"], os.environ["VERBS"].split(), os.environ["TEMP_DIR"]
log_dir, spill = os.environ["LOG_DIR"], os.environ["SPILL"]
memory_limit = float(os.environ["MEMORY_LIMIT"]) if os.environ["MEMORY_LIMIT"] else None

cgroup_tool = os.environ["CGROUP_TOOL"]

def cgroup(command, *args):
    return subprocess.run([cgroup_tool, command, *args], check=True, capture_output=True,
                          text=True).stdout.strip()

def status(pid):
    values = {}
    try:
        for line in open("/proc/%d/status" % pid):
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                values[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return values

if memory_limit is None:
    print("| dump | bytes | verb | wall s | peak RSS MiB (bytes a byte) | peak anonymous MiB (bytes a byte) | spilled |")
    print("| --- | ---: | --- | ---: | ---: | ---: | --- |", flush=True)
else:
    print("| dump | bytes | verb | cgroup limit MiB | wall s | peak RSS MiB (bytes a byte) | peak anonymous MiB (bytes a byte) | cgroup peak MiB | OOM kills | spilled |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |", flush=True)
failed = False
for dump in sys.argv[1:]:
    size = os.path.getsize(dump)
    for verb in verbs:
        args = [hg, "--timings", "--spill", spill] + (["--temp-dir", temp_dir] if temp_dir else []) + [verb, dump]
        hgd = dump + ".hgd"
        if verb == "convert":
            args += ["-o", hgd]
        elif verb == "who-holds":
            args += ["--type", "LeakApp$Session", "--format", "json"]
        else:
            args += ["--format", "json"]
        print("running: %s" % " ".join(args), file=sys.stderr, flush=True)
        log = os.path.join(log_dir, "%s.%s.%s" % (os.path.basename(dump), verb, spill)) if log_dir else None
        stdout = open(log + ".out", "w") if log else subprocess.DEVNULL
        limit = int(size * memory_limit) if memory_limit is not None else None
        cgroup_dir = cgroup("make", str(limit)) if limit is not None else None
        if cgroup_dir:
            # The dump's pages still cached from an earlier run (or from writing it) are
            # charged to another cgroup, where this one's limit would not count them: dropped,
            # so that the run reads the dump inside its own limit.
            subprocess.run(["dd", "if=" + dump, "iflag=nocache", "count=0", "status=none"],
                           check=True)
        began = time.time()
        # In a cgroup, `run` execs the verb: the pid sampled is heapgraph's.
        process = subprocess.Popen(([cgroup_tool, "run", cgroup_dir] if cgroup_dir else []) + args,
                                   stdout=stdout, stderr=subprocess.PIPE, text=True)
        hwm = anon = 0
        while process.poll() is None:
            values = status(process.pid)
            hwm = max(hwm, values.get("VmHWM", 0))
            anon = max(anon, values.get("RssAnon", 0))
            time.sleep(0.2)
        wall = time.time() - began
        stderr = process.stderr.read()
        if log:
            stdout.close()
            with open(log + ".err", "w") as err:
                err.write(stderr)
        if verb == "convert" and os.path.exists(hgd):
            os.remove(hgd)
        if process.returncode != 0:
            failed = True
            print("%s failed (exit %d): %s" % (" ".join(args), process.returncode, stderr[-2000:]), file=sys.stderr)
            spilled = "**failed, exit %d**" % process.returncode
        else:
            spilled = next((line for line in stderr.splitlines() if line.startswith("spilled: ")), "")
            spilled = spilled.replace("spilled: ", "") or "no"
        if cgroup_dir is None:
            print("| %s | %d | `%s` | %.1f | %.0f (%.2f) | %.0f (%.2f) | %s |" % (
                os.path.basename(dump), size, verb, wall, hwm / 2**20, hwm / size, anon / 2**20,
                anon / size, spilled), flush=True)
        else:
            peak, kills = cgroup("end", cgroup_dir).split()
            print("| %s | %d | `%s` | %.0f | %.1f | %.0f (%.2f) | %.0f (%.2f) | %.0f | %s | %s |" % (
                os.path.basename(dump), size, verb, limit / 2**20, wall, hwm / 2**20, hwm / size,
                anon / 2**20, anon / size, int(peak) / 2**20, kills, spilled), flush=True)
sys.exit(1 if failed else 0)
EOF
