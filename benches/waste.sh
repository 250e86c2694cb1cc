#!/usr/bin/env bash
# waste after load: `heapgraph waste` against `heapgraph summary` on the same dump, in the same
# run. Both load the dump and compute the analysis (dominators, retained sizes); summary then
# sums per type, waste measures every collection. The difference is what waste adds after the
# load, the figure issue 17 bounds (under 2 s on the large HPROF).
# Usage: benches/waste.sh DUMP.hprof [RUNS]   (the dumps come from benches/corpus/gen_hprof.py)
# Prints, per command, the best wall time and its user+sys CPU time over RUNS runs, then the
# differences. CPU time is the steadier figure on a shared machine.
set -euo pipefail
dump=${1:?usage: benches/waste.sh DUMP.hprof [RUNS]}
runs=${2:-3}
bin=${HEAPGRAPH:-target/release/heapgraph}
if [[ "$(/usr/bin/time -f %e true 2>&1)" != 0* ]]; then
    echo "/usr/bin/time (GNU time) is needed: apt-get install time" >&2
    exit 2
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
best() { # "wall cpu" of the run with the best wall time
    local best_wall= best_cpu=
    for _ in $(seq "$runs"); do
        /usr/bin/time -o "$log" -f '%e %U %S' "$@" >/dev/null
        read -r wall user sys <"$log"
        cpu=$(echo "$user + $sys" | bc)
        if [[ -z $best_wall ]] || (($(echo "$wall < $best_wall" | bc))); then
            best_wall=$wall best_cpu=$cpu
        fi
    done
    echo "$best_wall $best_cpu"
}
cat "$dump" >/dev/null # both start from the page cache
read -r summary_wall summary_cpu < <(best "$bin" summary "$dump" -n 1 --format json)
read -r waste_wall waste_cpu < <(best "$bin" waste "$dump" --format json)
printf 'dump %s: %s MB\n' "$dump" "$(echo "scale=1; $(stat -c %s "$dump") / 1000000" | bc)"
printf 'summary: %7.2f s wall %7.2f s cpu\n' "$summary_wall" "$summary_cpu"
printf 'waste:   %7.2f s wall %7.2f s cpu\n' "$waste_wall" "$waste_cpu"
printf 'waste after load: %.2f s wall, %.2f s cpu; waste / summary wall: %.2f\n' \
    "$(echo "$waste_wall - $summary_wall" | bc)" "$(echo "$waste_cpu - $summary_cpu" | bc)" \
    "$(echo "scale=3; $waste_wall / $summary_wall" | bc)"
