#!/usr/bin/env bash
# The Rust allocation recorder's overhead on two allocation-heavy workloads
# (crates/capture/examples/alloc_workload.rs): `json` parses a JSON-like document into Strings,
# Vecs and BTreeMaps, counts its keys in a hash map, renders and sorts its records and drops it
# all, round after round (malloc and free take about 30% of its time under System); `churn`
# makes and drops small Strings, Vecs, Boxes and BTreeMap nodes with little work between, the
# allocator's worst case. Each is built three ways, all with frame pointers, and timed side by
# side:
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
#   ROUNDS   rounds of `json` per run (default 20: about 1.4 s under System here)
#   CHURN_ROUNDS  rounds of `churn` per run (default 400: about 1 s under System here)
#   REPEAT   runs of each build; the median is reported (default 5)
# Needs: cargo, and GNU time as /usr/bin/time (Debian package `time`; installed with apt-get
# when missing and this runs as root). The machine should be otherwise idle while this runs.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
ROUNDS="${ROUNDS:-20}"
CHURN_ROUNDS="${CHURN_ROUNDS:-400}"
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
for workload in json churn; do
  sums=$(for mode in system every sampled; do "$LOGS/workload-$mode" "$workload" 1; done | sort -u | wc -l)
  [[ "$sums" -eq 1 ]] || { echo "the three builds disagree on the $workload checksum" >&2; exit 1; }
done

# measure WORKLOAD ROUNDS: REPEAT runs of each build, interleaved so that a change in the
# machine's load hits all three alike, then a table of medians and ratios.
measure() {
  local workload="$1" rounds="$2" mode i
  for mode in system every sampled; do : >"$LOGS/$workload-$mode.all"; done
  for ((i = 1; i <= REPEAT; i++)); do
    for mode in system every sampled; do
      timed "$workload-$mode" "$LOGS/workload-$mode" "$workload" "$rounds"
      cat "$LOGS/$workload-$mode" >>"$LOGS/$workload-$mode.all"
    done
  done
  for mode in system every sampled; do
    sort -n "$LOGS/$workload-$mode.all" | sed -n "$(((REPEAT + 1) / 2))p" >"$LOGS/$workload-$mode"
  done
  read -r SW SR <"$LOGS/$workload-system"
  read -r EW ER <"$LOGS/$workload-every"
  read -r PW PR <"$LOGS/$workload-sampled"
  awk -v workload="$workload" -v rounds="$rounds" -v repeat="$REPEAT" -v sw="$SW" -v sr="$SR" \
      -v ew="$EW" -v er="$ER" -v pw="$PW" -v pr="$PR" '
    function row(label, w, r) {
      printf "| %s | %.3f | %.1f | %.2f× | %.2f× |\n", label, w, r / 1024, w / sw, r / sr
    }
    BEGIN {
      printf "\nalloc_workload %s, %d rounds (median of %d interleaved runs)\n\n", workload, rounds, repeat
      print "| allocator | wall s | peak RSS MiB | wall / System | RSS / System |"
      print "| --- | ---: | ---: | ---: | ---: |"
      row("System", sw, sr)
      row("Recorder::new() (every allocation)", ew, er)
      row("Recorder::sampling(512 KiB)", pw, pr)
    }'
}
measure json "$ROUNDS"
measure churn "$CHURN_ROUNDS"

echo
for mode in every sampled; do
  "$LOGS/workload-$mode" json "$ROUNDS" "$LOGS/$mode.hgd" 2>"$LOGS/$mode.snapshot" >/dev/null
  echo "$mode, json: $(cat "$LOGS/$mode.snapshot")"
done
