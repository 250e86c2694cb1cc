#!/usr/bin/env bash
# The Rust allocation recorder's overhead: one allocation-heavy workload
# (crates/capture/examples/alloc_workload.rs: parse a JSON-like document into Strings, Vecs and
# BTreeMaps, count its keys in a hash map, render and sort its records, drop it all, round after
# round) built three ways, all with frame pointers, and timed side by side:
#   system   plain std::alloc::System
#   every    heapgraph_capture::Recorder::new(), every allocation recorded
#   sampled  heapgraph_capture::Recorder::sampling(512 * 1024)
# Prints wall time and peak RSS (median of REPEAT runs) and the ratios against `system`, then
# one untimed run of each recorder that writes a snapshot and says how long that took.
#
# Usage (from anywhere inside the repository):
#   benches/alloc_recorder.sh
#   ROUNDS=40 REPEAT=5 benches/alloc_recorder.sh
# Environment:
#   ROUNDS   rounds of the workload per run (default 20: about 1.5 s under System here)
#   REPEAT   runs of each build; the median is reported (default 5)
# Needs: cargo, and GNU time as /usr/bin/time (Debian package `time`; installed with apt-get
# when missing and this runs as root). The machine should be otherwise idle while this runs.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
ROUNDS="${ROUNDS:-20}"
REPEAT="${REPEAT:-5}"
TARGET="$ROOT/target/frame-pointers"

source "$ROOT/benches/timing.sh"
require_gnu_time

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/heapgraph-bench-logs.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

# One build per allocator: `cargo rustc` passes the cfg to the example alone, so the
# dependencies are built once and shared.
for mode in system every sampled; do
  echo "building the workload with allocator $mode" >&2
  (cd "$ROOT" && RUSTFLAGS="-C force-frame-pointers=yes" cargo rustc --release --locked --quiet \
    -p heapgraph-capture --example alloc_workload --target-dir "$TARGET" \
    -- --cfg "heapgraph_workload=\"$mode\"")
  cp "$TARGET/release/examples/alloc_workload" "$LOGS/workload-$mode"
done

# The three must compute the same thing.
sums=$(for mode in system every sampled; do "$LOGS/workload-$mode" 1; done | sort -u | wc -l)
[[ "$sums" -eq 1 ]] || { echo "the three builds disagree on the checksum" >&2; exit 1; }

# Interleaved, so that a change in the machine's load hits all three alike.
for mode in system every sampled; do : >"$LOGS/$mode.all"; done
for ((i = 1; i <= REPEAT; i++)); do
  for mode in system every sampled; do
    timed "$mode" "$LOGS/workload-$mode" "$ROUNDS"
    cat "$LOGS/$mode" >>"$LOGS/$mode.all"
  done
done
for mode in system every sampled; do
  sort -n "$LOGS/$mode.all" | sed -n "$(((REPEAT + 1) / 2))p" >"$LOGS/$mode"
done

for mode in every sampled; do
  "$LOGS/workload-$mode" "$ROUNDS" "$LOGS/$mode.hgd" 2>"$LOGS/$mode.snapshot" >/dev/null
done

read -r SW SR <"$LOGS/system"
read -r EW ER <"$LOGS/every"
read -r PW PR <"$LOGS/sampled"
awk -v rounds="$ROUNDS" -v repeat="$REPEAT" -v sw="$SW" -v sr="$SR" -v ew="$EW" -v er="$ER" \
    -v pw="$PW" -v pr="$PR" '
  function row(label, w, r) {
    printf "| %s | %.3f | %.1f | %.2f× | %.2f× |\n", label, w, r / 1024, w / sw, r / sr
  }
  BEGIN {
    printf "\nalloc_workload, %d rounds (median of %d interleaved runs)\n\n", rounds, repeat
    print "| allocator | wall s | peak RSS MiB | wall / System | RSS / System |"
    print "| --- | ---: | ---: | ---: | ---: |"
    row("System", sw, sr)
    row("Recorder::new() (every allocation)", ew, er)
    row("Recorder::sampling(512 KiB)", pw, pr)
  }'
echo
for mode in every sampled; do
  echo "$mode: $(cat "$LOGS/$mode.snapshot")"
done
