#!/usr/bin/env bash
# heapgraph vs CPython's own tracemalloc analysis on a pair of Snapshot.dump files: wall time and
# peak RSS.
#
# Usage (from anywhere inside the repository):
#   benches/tracemalloc_vs_python.sh
#   BENCH_DIR=/tmp/tm-bench benches/tracemalloc_vs_python.sh   # a pair generated there already
#   SKIP_HEAPGRAPH=1 SIZE=small benches/tracemalloc_vs_python.sh  # time Python only
# Environment:
#   SIZE        tiny | small | large (default large: 10.7M traces, 139 MB after-dump; generating
#               it takes a few minutes and several GB of memory; small is 315k traces)
#   BENCH_DIR   where the pair is kept between runs (default /tmp/heapgraph-bench/tracemalloc):
#               BENCH_DIR/tm-SIZE-before.pickle and BENCH_DIR/tm-SIZE-after.pickle, made once by
#               `python3 benches/corpus/gen_tracemalloc.py --size SIZE --out BENCH_DIR`. A pair
#               counts as complete when BENCH_DIR/manifest.jsonl (written by the generator after
#               both dumps) has the after-dump with its current byte size; otherwise it is made
#               again. Don't point two runs at a folder where a generation is still going on.
#   HEAPGRAPH_BIN   use this heapgraph binary and skip `cargo build --release`
#   SKIP_HEAPGRAPH  1: time Python only (steps a and b); no build, no heapgraph steps
#   REPEAT      runs of each step, Python's and heapgraph's; the median is reported (default 3)
# Needs: python3 (3.11: the dumps are pickles of its tracemalloc classes), cargo, and GNU time as
# /usr/bin/time (Debian package `time`; when it is missing and this runs as root, it is installed
# with apt-get). The machine should be otherwise idle while this runs.
#
# Steps, each timed alone with /usr/bin/time -v (the median of REPEAT runs), page cache warm:
#   (a) python3 benches/corpus/tm_bench.py --mode traceback BEFORE AFTER
#       (Snapshot.load of both + after.compare_to(before, 'traceback'))
#   (b) python3 benches/corpus/tm_bench.py --mode lineno BEFORE AFTER
#   (c) heapgraph diff BEFORE AFTER --by traceback --format json
#   (d) heapgraph diff BEFORE AFTER --by lineno --format json
# Before anything of heapgraph's is timed, heapgraph diff --by lineno runs once untimed: when it
# cannot read the pair (e.g. a build without the tracemalloc importer) the script stops there,
# exit 3. Any step that fails stops the run (exit 1).
# Prints a markdown table with wall seconds, peak RSS and the ratios python/heapgraph. The
# generator and the Python driver are in benches/corpus.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
CORPUS="$ROOT/benches/corpus"
SIZE="${SIZE:-large}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench/tracemalloc}"
SKIP_HEAPGRAPH="${SKIP_HEAPGRAPH:-0}"
REPEAT="${REPEAT:-3}"
case "$SIZE" in tiny|small|large) ;; *) echo "SIZE must be tiny, small or large" >&2; exit 2 ;; esac
case "$SKIP_HEAPGRAPH" in 0|1) ;; *) echo "SKIP_HEAPGRAPH must be 0 or 1" >&2; exit 2 ;; esac

source "$ROOT/benches/timing.sh"
require_gnu_time

mkdir -p "$BENCH_DIR"
BEFORE="$BENCH_DIR/tm-$SIZE-before.pickle"
AFTER="$BENCH_DIR/tm-$SIZE-after.pickle"
# pair_complete: the generator's manifest lists the after-dump with its current size (it writes
# the manifest only once both dumps are on disk).
pair_complete() {
  [[ -s "$BEFORE" && -s "$AFTER" && -s "$BENCH_DIR/manifest.jsonl" ]] || return 1
  python3 - "$BENCH_DIR/manifest.jsonl" "$AFTER" <<'EOF'
import json, os, sys
manifest, after = sys.argv[1], sys.argv[2]
sizes = [r.get("bytes") for r in map(json.loads, filter(str.strip, open(manifest)))
         if r.get("file") == os.path.basename(after)]
sys.exit(0 if sizes and sizes[-1] == os.path.getsize(after) else 1)
EOF
}
if ! pair_complete; then
  echo "generating $BEFORE and $AFTER (once)" >&2
  python3 "$CORPUS/gen_tracemalloc.py" --size "$SIZE" --out "$BENCH_DIR" >&2
  pair_complete || { echo "the generator did not leave a complete pair in $BENCH_DIR" >&2; exit 1; }
fi

if [[ "$SKIP_HEAPGRAPH" == 1 ]]; then
  HG=""
elif [[ -n "${HEAPGRAPH_BIN:-}" ]]; then
  HG="$HEAPGRAPH_BIN"
else
  echo "building heapgraph (cargo build --release)" >&2
  (cd "$ROOT" && cargo build --release --quiet)
  HG="$ROOT/target/release/heapgraph"
fi

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/heapgraph-bench-logs.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

# Warm the page cache, so that no step pays for the first read of the dumps.
echo "reading $BEFORE and $AFTER into the page cache" >&2
cat "$BEFORE" "$AFTER" >/dev/null

# Pre-flight: can heapgraph read this pair at all? (Untimed; also warms heapgraph up.)
if [[ -n "$HG" ]]; then
  echo "checking that heapgraph reads the pair: $HG diff $BEFORE $AFTER --by lineno --format json" >&2
  rc=0
  "$HG" diff "$BEFORE" "$AFTER" --by lineno --format json >/dev/null 2>"$LOGS/preflight.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo >&2
    echo "heapgraph cannot diff $BEFORE and $AFTER (exit $rc):" >&2
    tail -n 20 "$LOGS/preflight.err" >&2
    echo >&2
    echo "This build of heapgraph ($HG) has no working tracemalloc import for this pair." >&2
    echo "Nothing of heapgraph's was timed. Run with SKIP_HEAPGRAPH=1 to time Python only." >&2
    exit 3
  fi
fi

median py_traceback "$REPEAT" python3 "$CORPUS/tm_bench.py" --mode traceback "$BEFORE" "$AFTER"
median py_lineno "$REPEAT" python3 "$CORPUS/tm_bench.py" --mode lineno "$BEFORE" "$AFTER"
# Python's own split of its time (load vs compare_to), from tm_bench.py's last run.
for m in traceback lineno; do
  echo "python --mode $m: $(cat "$LOGS/py_$m.out")" >&2
done
if [[ -n "$HG" ]]; then
  median hg_traceback "$REPEAT" "$HG" diff "$BEFORE" "$AFTER" --by traceback --format json
  median hg_lineno "$REPEAT" "$HG" diff "$BEFORE" "$AFTER" --by lineno --format json
  read -r HTW HTR <"$LOGS/hg_traceback"
  read -r HLW HLR <"$LOGS/hg_lineno"
else
  HTW=skip HTR=0 HLW=skip HLR=0
fi
read -r PTW PTR <"$LOGS/py_traceback"
read -r PLW PLR <"$LOGS/py_lineno"

awk -v size="$SIZE" -v before="$(stat -c %s "$BEFORE")" -v after="$(stat -c %s "$AFTER")" \
    -v repeat="$REPEAT" -v pyv="$(python3 -c 'import platform; print(platform.python_version())')" \
    -v ptw="$PTW" -v ptr="$PTR" -v plw="$PLW" -v plr="$PLR" \
    -v htw="$HTW" -v htr="$HTR" -v hlw="$HLW" -v hlr="$HLR" '
  function ok(w) { return w != "skip" }
  function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f×", a / b) : "n/a" }
  # row LABEL WALL RSS PYWALL PYRSS: one heapgraph row with its ratios against Python.
  function row(label, w, r, pw, pr) {
    if (!ok(w)) { printf "| %s | skip | | | |\n", label; return }
    printf "| %s | %.3f | %.0f | %s | %s |\n", label, w, r / 1024, ratio(pw, w), ratio(pr, r)
  }
  BEGIN {
    printf "\ntracemalloc pair `%s`: before %.1f MB, after %.1f MB (median of %d runs)\n\n", size,
      before / 1e6, after / 1e6, repeat
    print "| step | wall s | peak RSS MiB | python/heapgraph wall | python/heapgraph RSS |"
    print "| --- | ---: | ---: | ---: | ---: |"
    printf "| (a) Python %s load + compare_to(traceback) | %.3f | %.0f | | |\n", pyv, ptw, ptr / 1024
    row("(c) heapgraph diff --by traceback", htw, htr, ptw, ptr)
    printf "| (b) Python %s load + compare_to(lineno) | %.3f | %.0f | | |\n", pyv, plw, plr / 1024
    row("(d) heapgraph diff --by lineno", hlw, hlr, plw, plr)
  }'
