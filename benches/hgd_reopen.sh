#!/usr/bin/env bash
# Reopening a converted `.hgd` against parsing its source dump: peak RSS and CPU seconds of
# `heapgraph summary` on each, in one run (issue 20: reopening is the lean path, its peak no
# higher than the parse's).
#
# Usage (from anywhere inside the repository):
#   benches/hgd_reopen.sh DUMP [DUMP...]
# Environment:
#   HEAPGRAPH_BIN  use this heapgraph binary and skip `cargo build --release`
#   WORK_DIR       where each DUMP's `.hgd` is written (default: a temporary folder, deleted at
#                  the end; an `.hgd` of a 2.5 GB HPROF is 2.7 GB)
#   KEEP_HGD       1: convert only when WORK_DIR/NAME.hgd is missing, and keep it
#   NICE           the niceness every step runs at (default 19: the machine is shared)
# Needs GNU time as /usr/bin/time.
#
# Steps per DUMP, each under /usr/bin/time:
#   (a) heapgraph summary DUMP --format json             (the parse and the analysis)
#   (b) heapgraph convert DUMP -o NAME.hgd              (skipped with KEEP_HGD=1 and a .hgd)
#   (c) heapgraph summary NAME.hgd --format json         (the reopening)
# Prints a markdown table: wall s, CPU s (user + sys), peak RSS MiB, and the reopening's peak
# over the parse's. Wall times on a loaded machine mean little: the CPU seconds and the peaks
# are what compare, and `uptime` is printed beside them.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
NICE="${NICE:-19}"
KEEP_HGD="${KEEP_HGD:-0}"
[[ $# -ge 1 ]] || { echo "usage: benches/hgd_reopen.sh DUMP [DUMP...]" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 2; }

if [[ -n "${HEAPGRAPH_BIN:-}" ]]; then
  HG="$HEAPGRAPH_BIN"
else
  echo "building heapgraph (cargo build --release)" >&2
  (cd "$ROOT" && nice -n "$NICE" cargo build --release --locked --quiet)
  HG="$ROOT/target/release/heapgraph"
fi
if [[ -n "${WORK_DIR:-}" ]]; then
  mkdir -p "$WORK_DIR"
  WORK="$WORK_DIR"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/heapgraph-reopen.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
fi

# step NAME CMD...: runs CMD under GNU time; prints "wall cpu peak_kib" for it.
step() {
  local name="$1"; shift
  echo "running $name: $*" >&2
  if ! nice -n "$NICE" /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.time" "$@" \
      >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    echo "$name failed:" >&2
    tail -n 20 "$WORK/$name.err" >&2
    exit 1
  fi
  awk '{ printf "%.2f %.2f %d\n", $1, $2 + $3, $4 }' "$WORK/$name.time"
}

echo "| dump | step | wall s | CPU s | peak RSS MiB | load (1 min) |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for dump in "$@"; do
  name="$(basename "$dump")"
  name="${name%.*}"
  hgd="$WORK/$name.hgd"
  cat "$dump" >/dev/null # page cache warm for every step
  read -r pw pc pk < <(step "$name-parse" "$HG" summary "$dump" --format json)
  echo "| $name | summary of the dump | $pw | $pc | $((pk / 1024)) | $(cut -d' ' -f1 /proc/loadavg) |"
  if [[ "$KEEP_HGD" != 1 || ! -s "$hgd" ]]; then
    read -r cw cc ck < <(step "$name-convert" "$HG" convert "$dump" -o "$hgd")
    echo "| $name | convert → .hgd | $cw | $cc | $((ck / 1024)) | $(cut -d' ' -f1 /proc/loadavg) |"
  fi
  cat "$hgd" >/dev/null
  read -r rw rc rk < <(step "$name-reopen" "$HG" summary "$hgd" --format json)
  echo "| $name | summary of the .hgd | $rw | $rc | $((rk / 1024)) | $(cut -d' ' -f1 /proc/loadavg) |"
  # The same answers but for what names the file: its path and format, and an HPROF's list of
  # the heap dumps it holds (the .hgd holds the one that was read).
  if ! python3 - "$WORK/$name-parse.out" "$WORK/$name-reopen.out" <<'PY'
import json, sys
parse, reopen = (json.load(open(path)) for path in sys.argv[1:])
for summary in (parse, reopen):
    summary.pop("dump", None)
    summary.pop("dumps", None)
sys.exit(parse != reopen)
PY
  then
    echo "warning: $name: summary of the .hgd differs from summary of the dump" >&2
  fi
  awk -v r="$rk" -v p="$pk" -v n="$name" 'BEGIN {
    printf "| %s | reopen peak / parse peak | | | %.2f× | |\n", n, r / p }'
  [[ "$KEEP_HGD" == 1 ]] || rm -f "$hgd"
done
