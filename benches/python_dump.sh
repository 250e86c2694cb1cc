#!/usr/bin/env bash
# The Python dumper's speed on a process of about a million objects, and heapgraph's time to
# load that dump and compute dominators and retained sizes (`summary`).
#
# Usage: benches/python_dump.sh            (REPEAT=3 by default; the median run is reported)
# Environment: OBJECTS (default 1000000), REPEAT, BENCH_DIR (default /tmp/heapgraph-bench/python),
# HEAPGRAPH_BIN (skip `cargo build --release`). Needs python3 and GNU time as /usr/bin/time.
set -euo pipefail
ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
OBJECTS="${OBJECTS:-1000000}"
REPEAT="${REPEAT:-3}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench/python}"
mkdir -p "$BENCH_DIR"
if [[ -n "${HEAPGRAPH_BIN:-}" ]]; then
  HG="$HEAPGRAPH_BIN"
else
  (cd "$ROOT" && cargo build --release --quiet)
  HG="$ROOT/target/release/heapgraph"
fi
DUMP="$BENCH_DIR/service-$OBJECTS.hgd"

median() { sort -n | sed -n "$(((REPEAT + 1) / 2))p"; }

: >"$BENCH_DIR/dumps.txt"
for ((i = 1; i <= REPEAT; i++)); do
  python3 "$ROOT/benches/python_dump_program.py" "$DUMP" --objects "$OBJECTS" | tee -a "$BENCH_DIR/dumps.txt" >&2
done
rate=$(python3 -c 'import json,sys; print("\n".join(str(json.loads(l)["objects_per_second"]) for l in open(sys.argv[1])))' "$BENCH_DIR/dumps.txt" | median)
facts=$(tail -n 1 "$BENCH_DIR/dumps.txt")

: >"$BENCH_DIR/summary.txt"
for ((i = 1; i <= REPEAT; i++)); do
  /usr/bin/time -f "%e %M" -o "$BENCH_DIR/time.txt" "$HG" summary "$DUMP" >/dev/null
  cat "$BENCH_DIR/time.txt" >>"$BENCH_DIR/summary.txt"
done
read -r wall rss < <(sort -n "$BENCH_DIR/summary.txt" | sed -n "$(((REPEAT + 1) / 2))p")

echo
echo "Python dump of ~$OBJECTS objects: $facts"
echo
echo "| step | result |"
echo "| --- | ---: |"
echo "| dumper, objects per second (median of $REPEAT) | $rate |"
echo "| \`heapgraph summary\` of the dump (load, dominators, retained sizes): wall s | $wall |"
echo "| … peak RSS MiB | $((rss / 1024)) |"
