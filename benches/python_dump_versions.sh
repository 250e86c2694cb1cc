#!/usr/bin/env bash
# The Python dumper's speed on each CPython it claims: the same program
# (benches/python_dump_program.py, about a million objects) dumped by heapgraph_dump on 3.9,
# 3.13 and 3.14 (Debian's, in the roots of tests/python-roots/build.sh, run with chroot) and on
# this machine's python3.11; beside it, in the same process, objgraph 3.6.2's whole-heap pass
# (typestats and get_leaking_objects on one gc.get_objects() list), the peer. Prints a
# markdown table: objects written, objects per second and the time against objgraph's, the
# median of REPEAT runs each.
#
# Usage: benches/python_dump_versions.sh    (as root: chroot)
# Environment: OBJECTS (default 1000000), REPEAT (default 3), HEAPGRAPH_PYTHON_ROOTS (default
# /var/cache/heapgraph/python-roots), BENCH_DIR (default /tmp/heapgraph-bench/python-versions).
set -euo pipefail
ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
OBJECTS="${OBJECTS:-1000000}"
REPEAT="${REPEAT:-3}"
ROOTS="${HEAPGRAPH_PYTHON_ROOTS:-/var/cache/heapgraph/python-roots}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench/python-versions}"
"$ROOT/tests/python-roots/build.sh" --check
mkdir -p "$BENCH_DIR"

median() { sort -n | sed -n "$(((REPEAT + 1) / 2))p"; }

# Copies the program and the dumper where VERSION's interpreter sees them; prints the command
# prefix that runs it, and the directory as it sees it.
stage() {
  local version=$1 outer inner
  if [[ $version == 3.11 ]]; then
    outer=$BENCH_DIR/py$version
    inner=$outer
    echo "python$version $inner"
  else
    outer=$ROOTS/py$version/tmp/heapgraph-bench
    inner=/tmp/heapgraph-bench
    echo "chroot $ROOTS/py$version /usr/bin/python$version $inner"
  fi
  rm -rf "$outer"
  mkdir -p "$outer/benches" "$outer/crates/capture/python"
  cp "$ROOT/benches/python_dump_program.py" "$outer/benches/"
  cp "$ROOT/crates/capture/python/heapgraph_dump.py" "$outer/crates/capture/python/"
}

echo "| CPython | objects written (gc-tracked) | dumper, objects/s | objgraph's pass, s | dumper, s | dumper / objgraph |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for version in 3.9 3.11 3.13 3.14; do
  read -r -a staged <<<"$(stage "$version")"
  inner=${staged[-1]}
  unset 'staged[-1]'
  results=$BENCH_DIR/py$version.jsonl
  : >"$results"
  for ((i = 1; i <= REPEAT; i++)); do
    "${staged[@]}" "$inner/benches/python_dump_program.py" "$inner/out.hgd" \
      --objects "$OBJECTS" --peer >>"$results"
  done
  python3 - "$results" "$REPEAT" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
middle = (int(sys.argv[2]) + 1) // 2 - 1
def median(key):
    return sorted(run[key] for run in runs)[middle]
rate, dump_s, peer_s = median("objects_per_second"), median("seconds"), median("objgraph_seconds")
ratio = sorted(run["seconds"] / run["objgraph_seconds"] for run in runs)[middle]
last = runs[-1]
print("| %s | %s (%s) | **%s** | %.2f | %.2f | %.1f× |" % (
    last["python"], format(last["objects"], ","), format(last["gc_tracked"], ","),
    format(rate, ","), peer_s, dump_s, ratio))
PY
done
rm -rf "$ROOTS"/py*/tmp/heapgraph-bench
