#!/usr/bin/env bash
# heapgraph vs memlab on a large V8 heap snapshot: wall time and peak RSS.
#
# Usage (from anywhere inside the repository):
#   benches/v8_vs_memlab.sh
# Environment:
#   SIZE        small | medium | large (default large: 698 MB, 8.8M nodes;
#               generating it takes about 2 minutes and 12 GB of heap)
#   SNAP        time this .heapsnapshot instead of the generator's (a real application's
#               snapshot from benches/corpus/gen_apps.sh, say); SIZE is then ignored and the
#               .hgd is written beside it
#   BENCH_DIR   where the snapshot and the .hgd are kept between runs
#               (default /tmp/heapgraph-bench); the snapshot is made once
#   HEAPGRAPH_MEMLAB_DIR  folder with node_modules/@memlab/core (memlab 2.0.5);
#               default tests/oracle, installed there with
#               `npm ci --ignore-scripts` when missing
#   MEMLAB_HEAP_MB  --max-old-space-size for memlab (default 16000)
#   HEAPGRAPH_BIN   use this heapgraph binary and skip `cargo build --release`
#   REPEAT          runs of each heapgraph step; the median is reported (default 3)
#   MEMLAB_REPEAT   runs of memlab, likewise (default 1: one run takes about a minute)
# Needs: node 20, cargo, and GNU time as /usr/bin/time (Debian package `time`;
# when it is missing and this runs as root, it is installed with apt-get).
#
# Steps, each timed alone with /usr/bin/time -v (the median of REPEAT runs):
#   (a) memlab: benches/corpus/memlab_bench.js --mode full (parse + shortest
#       paths + dominators + retained sizes)
#   (b) heapgraph summary FILE --format json
#   (c) heapgraph convert FILE -o X.hgd, then heapgraph summary X.hgd
# Prints a markdown table with wall seconds, peak RSS and memlab/heapgraph
# ratios. The snapshot generator and the memlab driver are in benches/corpus.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
CORPUS="$ROOT/benches/corpus"
SIZE="${SIZE:-large}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench}"
MEMLAB_HEAP_MB="${MEMLAB_HEAP_MB:-16000}"
REPEAT="${REPEAT:-3}"
MEMLAB_REPEAT="${MEMLAB_REPEAT:-1}"
case "$SIZE" in small|medium|large) ;; *) echo "SIZE must be small, medium or large" >&2; exit 2 ;; esac

source "$ROOT/benches/timing.sh"
require_gnu_time

MEMLAB_DIR="${HEAPGRAPH_MEMLAB_DIR:-$ROOT/tests/oracle}"
if [[ ! -d "$MEMLAB_DIR/node_modules/@memlab/core" ]]; then
  if [[ -z "${HEAPGRAPH_MEMLAB_DIR:-}" ]]; then
    echo "installing memlab into tests/oracle (npm ci --ignore-scripts)" >&2
    (cd "$ROOT/tests/oracle" && npm ci --ignore-scripts --no-audit --no-fund >&2)
  else
    echo "no node_modules/@memlab/core under HEAPGRAPH_MEMLAB_DIR=$MEMLAB_DIR" >&2
    exit 2
  fi
fi

if [[ -n "${SNAP:-}" ]]; then
  [[ -s "$SNAP" ]] || { echo "SNAP=$SNAP is not a file" >&2; exit 2; }
  SIZE="$(basename "$SNAP" .heapsnapshot)"
  HGD="${SNAP%.heapsnapshot}.hgd"
else
  mkdir -p "$BENCH_DIR"
  SNAP="$BENCH_DIR/v8-$SIZE-target.heapsnapshot"
  if [[ ! -s "$SNAP" ]]; then
    echo "generating $SNAP (once)" >&2
    node --max-old-space-size=12000 "$CORPUS/gen_v8.js" --size "$SIZE" --out "$BENCH_DIR" --phases target >&2
  fi
  HGD="$BENCH_DIR/v8-$SIZE-target.hgd"
fi

if [[ -n "${HEAPGRAPH_BIN:-}" ]]; then
  HG="$HEAPGRAPH_BIN"
else
  echo "building heapgraph (cargo build --release)" >&2
  (cd "$ROOT" && cargo build --release --quiet)
  HG="$ROOT/target/release/heapgraph"
fi

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/heapgraph-bench-logs.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

# Warm the page cache, so that no step pays for the first read of the snapshot.
cat "$SNAP" >/dev/null

rm -f "$HGD"
median memlab "$MEMLAB_REPEAT" node --max-old-space-size="$MEMLAB_HEAP_MB" \
  "$CORPUS/memlab_bench.js" --memlab "$MEMLAB_DIR" --mode full "$SNAP"
median summary "$REPEAT" "$HG" summary "$SNAP" --format json
median convert "$REPEAT" "$HG" convert "$SNAP" -o "$HGD"
median summary_hgd "$REPEAT" "$HG" summary "$HGD" --format json

read -r MW MR <"$LOGS/memlab"
read -r SW SR <"$LOGS/summary"
read -r CW CR <"$LOGS/convert"
read -r HW HR <"$LOGS/summary_hgd"

awk -v size="$SIZE" -v bytes="$(stat -c %s "$SNAP")" -v hgd="$(stat -c %s "$HGD")" \
    -v mw="$MW" -v mr="$MR" -v sw="$SW" -v sr="$SR" -v cw="$CW" -v cr="$CR" -v hw="$HW" -v hr="$HR" '
  function mib(k) { return k / 1024 }
  function ratio(a, b) { return b > 0 ? sprintf("%.1f×", a / b) : "n/a" }
  BEGIN {
    printf "\nV8 snapshot `%s`: %.0f MB; .hgd %.0f MB\n\n", size, bytes / 1e6, hgd / 1e6
    print "| step | wall s | peak RSS MiB | memlab/this wall | memlab/this RSS |"
    print "| --- | ---: | ---: | ---: | ---: |"
    printf "| memlab full (parse + paths + dominators + retained) | %.3f | %.0f | | |\n", mw, mib(mr)
    printf "| heapgraph summary .heapsnapshot | %.3f | %.0f | %s | %s |\n", sw, mib(sr), ratio(mw, sw), ratio(mr, sr)
    printf "| heapgraph convert → .hgd | %.3f | %.0f | %s | %s |\n", cw, mib(cr), ratio(mw, cw), ratio(mr, cr)
    printf "| heapgraph summary .hgd | %.3f | %.0f | %s | %s |\n", hw, mib(hr), ratio(mw, hw), ratio(mr, hr)
    maxr = cr > hr ? cr : hr
    printf "| heapgraph convert + summary .hgd | %.3f | %.0f | %s | %s |\n", cw + hw, mib(maxr), ratio(mw, cw + hw), ratio(mr, maxr)
  }'
