#!/usr/bin/env bash
# What `heapgraph record` costs the process it records, and what it costs itself, side by side
# with memory_profiler's `mprof run` (psutil), the tool it replaces.
#
# Usage (from anywhere inside the repository):
#   benches/record_overhead.sh
#   REPEAT=5 RESIDENT_MIB=2048 ROUNDS=300 benches/record_overhead.sh
# Environment:
#   RESIDENT_MIB  memory the recorded program keeps resident (default 1024): the more, the more
#                 page tables a PSS reading walks
#   ROUNDS        rounds of object churn the program times (default 200, about 4 s here)
#   REPEAT        runs of each case, taken in turns; the median churn time is reported
#                 (default 7)
#   HEAPGRAPH_BIN use this heapgraph binary and skip `cargo build --release`
# Needs: python3, cargo, GNU time (/usr/bin/time; installed with apt-get when missing and run as
# root), and memory_profiler (`pip install memory_profiler`; installed when missing). The
# machine should be otherwise idle.
#
# Part 1, the target's slowdown: benches/record_workload.py prints the seconds its churn took,
# (a) alone, (b) under `heapgraph record --interval 50ms`, (c) under `heapgraph record
# --interval 1s`, (d) under `mprof run -C -T 0.05` (RSS of the tree, as heapgraph's RSS),
# (e) under `mprof run -C -T 0.05 --backend psutil_pss` (PSS at every sample, the reading
# heapgraph paces). Ratios are against (a).
# Part 2, the recorder's own cost: each recorder attached by pid to the running program (so
# that /usr/bin/time measures the recorder alone), at a 50 ms interval, for the program's whole
# churn: peak RSS, and CPU seconds as a share of the wall time.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
RESIDENT_MIB="${RESIDENT_MIB:-1024}"
ROUNDS="${ROUNDS:-200}"
REPEAT="${REPEAT:-7}"
WORKLOAD="$ROOT/benches/record_workload.py"
LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT
# shellcheck source=benches/timing.sh
source "$ROOT/benches/timing.sh"
require_gnu_time
if ! python3 -c "import memory_profiler" 2>/dev/null; then
  python3 -m pip install --quiet memory_profiler 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages memory_profiler
fi
MPROF="$(python3 -c 'import shutil; print(shutil.which("mprof") or "")')"
[[ -n "$MPROF" ]] || { echo "mprof is not on PATH after installing memory_profiler" >&2; exit 2; }
if [[ -z "${HEAPGRAPH_BIN:-}" ]]; then
  cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
  HEAPGRAPH_BIN="$ROOT/target/release/heapgraph"
fi

# The cases of part 1, run in turns (one run of each, REPEAT times over) so that a slow moment
# of the machine does not fall on one case alone; each case keeps the median of its churn
# seconds.
CASES=(plain hg50 hg1s mp50 mppss)
case_command() {
  case "$1" in
    plain) echo python3 "$WORKLOAD" "$RESIDENT_MIB" "$ROUNDS" ;;
    hg50) echo "$HEAPGRAPH_BIN" record --interval 50ms -q -o "$LOGS/hg50.hgt" -- python3 "$WORKLOAD" "$RESIDENT_MIB" "$ROUNDS" ;;
    hg1s) echo "$HEAPGRAPH_BIN" record --interval 1s -q -o "$LOGS/hg1s.hgt" -- python3 "$WORKLOAD" "$RESIDENT_MIB" "$ROUNDS" ;;
    mp50) echo "$MPROF" run -C -T 0.05 -o "$LOGS/mp50.dat" python3 "$WORKLOAD" "$RESIDENT_MIB" "$ROUNDS" ;;
    mppss) echo "$MPROF" run -C -T 0.05 --backend psutil_pss -o "$LOGS/mppss.dat" python3 "$WORKLOAD" "$RESIDENT_MIB" "$ROUNDS" ;;
  esac
}

echo "== part 1: the recorded program's churn, $RESIDENT_MIB MiB resident, $ROUNDS rounds, median of $REPEAT" >&2
for name in "${CASES[@]}"; do : >"$LOGS/$name.churn"; done
for ((i = 1; i <= REPEAT; i++)); do
  for name in "${CASES[@]}"; do
    # shellcheck disable=SC2046 # the command's words, none with spaces
    (cd "$LOGS" && timed "$name" $(case_command "$name"))
    tail -n 1 "$LOGS/$name.out" >>"$LOGS/$name.churn"
  done
done
median_of() { sort -n "$LOGS/$1.churn" | sed -n "$(((REPEAT + 1) / 2))p"; }
plain=$(median_of plain)
hg50=$(median_of hg50)
hg1s=$(median_of hg1s)
mp50=$(median_of mp50)
mppss=$(median_of mppss)
samples_hg50=$("$HEAPGRAPH_BIN" summary "$LOGS/hg50.hgt" --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(v is not None for v in d["series"]["pss_bytes"]), "of", d["samples"])')

# attached NAME CMD...: starts the program waiting, attaches CMD (with PID in place of {pid})
# under /usr/bin/time, lets the program churn, and prints "peak_rss_kib cpu_seconds wall".
attached() {
  local name="$1"; shift
  local go="$LOGS/$name.go"
  rm -f "$go"
  python3 "$WORKLOAD" "$RESIDENT_MIB" "$ROUNDS" "$go" >"$LOGS/$name.program" &
  local pid=$!
  sleep 2 # the ballast is resident
  local args=()
  for arg in "$@"; do args+=("${arg//\{pid\}/$pid}"); done
  /usr/bin/time -v -o "$LOGS/$name.time" "${args[@]}" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
  local recorder=$!
  sleep 1
  touch "$go"
  wait "$pid"
  wait "$recorder" || true
  awk '
    /Maximum resident set size/ { rss = $NF }
    /User time/ { cpu += $NF }
    /System time/ { cpu += $NF }
    /Elapsed \(wall clock\)/ { n = split($NF, p, ":"); wall = (n == 3 ? p[1] * 3600 + p[2] * 60 + p[3] : p[1] * 60 + p[2]) }
    END { printf "%d %.2f %.2f\n", rss, cpu, wall }
  ' "$LOGS/$name.time"
}

echo "== part 2: the recorders' own cost, attached at 50 ms" >&2
read -r hg_rss hg_cpu hg_wall < <(attached hgpid "$HEAPGRAPH_BIN" record --pid '{pid}' --interval 50ms -q -o "$LOGS/hgpid.hgt")
read -r mp_rss mp_cpu mp_wall < <(attached mppid "$MPROF" attach -T 0.05 -o "$LOGS/mppid.dat" '{pid}')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
share() { awk -v cpu="$1" -v wall="$2" 'BEGIN { printf "%.1f%%", 100 * cpu / wall }'; }

cat <<EOF

| recorded program ($RESIDENT_MIB MiB resident) | churn seconds | vs alone |
| --- | ---: | ---: |
| alone | $plain | 1.000 |
| heapgraph record, 50 ms (RSS every sample, PSS/USS paced: $samples_hg50 of the samples) | $hg50 | $(ratio "$hg50" "$plain") |
| heapgraph record, 1 s | $hg1s | $(ratio "$hg1s" "$plain") |
| mprof run -C, 50 ms (RSS) | $mp50 | $(ratio "$mp50" "$plain") |
| mprof run -C, 50 ms, psutil_pss (PSS every sample) | $mppss | $(ratio "$mppss" "$plain") |

| recorder, attached at 50 ms | peak RSS | CPU | of wall time |
| --- | ---: | ---: | ---: |
| heapgraph record --pid | $((hg_rss / 1024)) MiB | ${hg_cpu} s | $(share "$hg_cpu" "$hg_wall") |
| mprof attach | $((mp_rss / 1024)) MiB | ${mp_cpu} s | $(share "$mp_cpu" "$mp_wall") |
EOF
