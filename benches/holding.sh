#!/usr/bin/env bash
# `paths` and `dominated-by` over a type with a million instances, on a Java HPROF dump of the
# benchmark corpus: what each costs once the dump is loaded.
#
# Usage (from anywhere inside the repository):
#   benches/holding.sh
#   SIZE=large benches/holding.sh
# Environment:
#   SIZE        medium | large (default medium: 499 MB, 7.0M objects, 1,261,465 LeakApp$Event;
#               large is 2.5 GB and needs an 8 GB Java heap to generate)
#   TYPE        the type asked about (default LeakApp$Event)
#   BENCH_DIR   where the dump and its .hgd are kept between runs (default /tmp/heapgraph-bench);
#               the dump is made once, as BENCH_DIR/hprof/java-SIZE.hprof, and converted once
#   HEAPGRAPH_BIN   use this heapgraph binary and skip `cargo build --release`
#   REPEAT      runs of each step; the median is reported (default 3)
# Needs: cargo, python3 + a JDK (javac, java, jcmd) when the dump must be generated, GNU time.
#
# Steps, each timed alone with /usr/bin/time -v (the median of REPEAT runs), page cache warm, all
# on the .hgd (which stores the analysis, so that loading is the same for every step):
#   (a) heapgraph dominated-by X.hgd --ids ID --format json, ID one object: loading, and next to
#       nothing else
#   (b) heapgraph paths X.hgd --type TYPE --format json
#   (c) heapgraph dominated-by X.hgd --type TYPE --format json
# and prints (b) − (a) and (c) − (a): each query's own cost after the load. The peers that answer
# these questions (Eclipse MAT's merged shortest paths and immediate dominators) are a desktop
# application that none of the registries this project reaches serves, so the figure stands
# alone.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
CORPUS="$ROOT/benches/corpus"
SIZE="${SIZE:-medium}"
TYPE="${TYPE:-LeakApp\$Event}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench}"
REPEAT="${REPEAT:-3}"
case "$SIZE" in medium|large) ;; *) echo "SIZE must be medium or large" >&2; exit 2 ;; esac

source "$ROOT/benches/timing.sh"
require_gnu_time

DUMP_DIR="$BENCH_DIR/hprof"
DUMP="$DUMP_DIR/java-$SIZE.hprof"
HGD="$DUMP_DIR/java-$SIZE.hgd"
if [[ ! -f "$DUMP" ]]; then
  echo "generating $DUMP" >&2
  python3 "$CORPUS/gen_hprof.py" --size "$SIZE" --out "$DUMP_DIR" >&2
fi

if [[ -n "${HEAPGRAPH_BIN:-}" ]]; then
  HG="$HEAPGRAPH_BIN"
else
  cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" >&2
  HG="$ROOT/target/release/heapgraph"
fi
# Converted again by a newer binary: what a `.hgd` stores (the chain parents `paths` reads) may
# have changed since.
if [[ ! -f "$HGD" || "$HGD" -ot "$DUMP" || "$HGD" -ot "$HG" ]]; then
  echo "converting $DUMP" >&2
  "$HG" convert "$DUMP" -o "$HGD" >&2
fi

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/heapgraph-bench-logs.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

median paths "$REPEAT" "$HG" paths "$HGD" --type "$TYPE" --format json || exit 1
median dominated "$REPEAT" "$HG" dominated-by "$HGD" --type "$TYPE" --format json || exit 1
read -r TARGETS ONE_ID < <(python3 -c 'import json,sys; d = json.load(open(sys.argv[1]))
print(d["targets"], d["nodes"][-1]["id"])' "$LOGS/paths.out")
median load "$REPEAT" "$HG" dominated-by "$HGD" --ids "$ONE_ID" --format json || exit 1

read -r LW LR <"$LOGS/load"
read -r PW PR <"$LOGS/paths"
read -r DW DR <"$LOGS/dominated"
echo
echo "SIZE=$SIZE, $TARGETS objects of type $TYPE, $(nproc) CPUs, median of $REPEAT"
echo
awk -v lw="$LW" -v lr="$LR" -v pw="$PW" -v pr="$PR" -v dw="$DW" -v dr="$DR" 'BEGIN {
  printf "| step | wall s | peak RSS MiB | after the load |\n| --- | ---: | ---: | ---: |\n"
  printf "| (a) dominated-by --ids ONE (loading) | %.2f | %.0f | |\n", lw, lr / 1024
  printf "| (b) paths --type | %.2f | %.0f | %.2f s |\n", pw, pr / 1024, pw - lw
  printf "| (c) dominated-by --type | %.2f | %.0f | %.2f s |\n", dw, dr / 1024, dw - lw
}'
