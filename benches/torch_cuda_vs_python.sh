#!/usr/bin/env bash
# heapgraph vs plain Python on a PyTorch CUDA memory snapshot: wall time and peak RSS.
#
# Usage (from anywhere inside the repository):
#   benches/torch_cuda_vs_python.sh
#   FILE=fixtures/torch-cuda/kv_cache_cat_growth.pickle.gz benches/torch_cuda_vs_python.sh
# Environment:
#   FILE        the snapshot, a gzipped pickle of torch.cuda.memory._snapshot() (default
#               fixtures/torch-cuda/transformer_train_large.pickle.gz: 1.5 MB gzipped,
#               18.6 MB raw, 215,687 trace events; relative paths are taken from the repository root)
#   HEAPGRAPH_BIN   use this heapgraph binary and skip `cargo build --release`
#   SKIP_HEAPGRAPH  1: time Python only (step a); no build, no heapgraph step
#   REPEAT      runs of each step; the median is reported (default 5)
# Needs: python3 (no torch: the snapshot is plain dicts and lists), cargo, and GNU time as
# /usr/bin/time (Debian package `time`; when it is missing and this runs as root, it is installed
# with apt-get). The machine should be otherwise idle while this runs.
#
# Steps, each timed alone with /usr/bin/time -v (the median of REPEAT runs), page cache warm:
#   (a) python3 -c "import pickle,gzip; pickle.load(gzip.open(F))" (gunzip + unpickle, GC on
#       as by default: the floor of any Python tool that reads the file, before any analysis)
#   (b) heapgraph gpu F --timeline --format json (read + per-stack report + timeline replay)
# Before step (b) is timed, it runs once untimed: when heapgraph cannot read the file (e.g. a
# build without the PyTorch importer) the script stops there, exit 3. Any step that fails stops
# the run (exit 1).
# Prints a markdown table with wall seconds, peak RSS and the ratios python/heapgraph.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
CORPUS="$ROOT/benches/corpus"
FILE="${FILE:-$ROOT/fixtures/torch-cuda/transformer_train_large.pickle.gz}"
[[ "$FILE" == /* ]] || FILE="$ROOT/$FILE"
SKIP_HEAPGRAPH="${SKIP_HEAPGRAPH:-0}"
REPEAT="${REPEAT:-5}"
case "$SKIP_HEAPGRAPH" in 0|1) ;; *) echo "SKIP_HEAPGRAPH must be 0 or 1" >&2; exit 2 ;; esac
[[ -s "$FILE" ]] || { echo "no snapshot at $FILE" >&2; exit 2; }

source "$ROOT/benches/timing.sh"
require_gnu_time

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

# Warm the page cache, so that no step pays for the first read of the file.
cat "$FILE" >/dev/null

# Pre-flight: can heapgraph read this snapshot at all? (Untimed; also warms heapgraph up.)
if [[ -n "$HG" ]]; then
  echo "checking that heapgraph reads $FILE: $HG gpu $FILE --timeline --format json" >&2
  rc=0
  "$HG" gpu "$FILE" --timeline --format json >/dev/null 2>"$LOGS/preflight.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo >&2
    echo "heapgraph cannot read $FILE (exit $rc):" >&2
    tail -n 20 "$LOGS/preflight.err" >&2
    echo >&2
    echo "This build of heapgraph ($HG) has no working PyTorch snapshot import for this file." >&2
    echo "Nothing of heapgraph's was timed. Run with SKIP_HEAPGRAPH=1 to time Python only." >&2
    exit 3
  fi
fi

# The file goes in as sys.argv[1], so that no path needs quoting inside the program text.
median python "$REPEAT" python3 -c 'import pickle,gzip,sys; pickle.load(gzip.open(sys.argv[1]))' "$FILE"
if [[ -n "$HG" ]]; then
  median gpu "$REPEAT" "$HG" gpu "$FILE" --timeline --format json
  read -r GW GR <"$LOGS/gpu"
else
  GW=skip GR=0
fi
read -r PW PR <"$LOGS/python"

awk -v name="$(basename "$FILE")" -v bytes="$(stat -c %s "$FILE")" -v repeat="$REPEAT" \
    -v pyv="$(python3 -c 'import platform; print(platform.python_version())')" \
    -v pw="$PW" -v pr="$PR" -v gw="$GW" -v gr="$GR" '
  function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f×", a / b) : "n/a" }
  BEGIN {
    printf "\nPyTorch CUDA snapshot `%s`: %s gzipped (median of %d runs)\n\n", name,
      (bytes >= 1e6 ? sprintf("%.2f MB", bytes / 1e6) : sprintf("%.0f KB", bytes / 1e3)), repeat
    print "| step | wall s | peak RSS MiB | python/heapgraph wall | python/heapgraph RSS |"
    print "| --- | ---: | ---: | ---: | ---: |"
    printf "| (a) Python %s gunzip + pickle.load (GC on) | %.3f | %.0f | | |\n", pyv, pw, pr / 1024
    if (gw == "skip") print "| (b) heapgraph gpu --timeline | skip | | | |"
    else printf "| (b) heapgraph gpu --timeline | %.3f | %.0f | %s | %s |\n", gw, gr / 1024,
      ratio(pw, gw), ratio(pr, gr)
  }'
