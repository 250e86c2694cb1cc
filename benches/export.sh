#!/usr/bin/env bash
# export's speed: `heapgraph export` of the whole graph and `--summary-only`, against
# `heapgraph summary` on the same dump, in the same run. All three load the dump and compute the
# analysis; summary then sums per type, export --summary-only writes every table but objects and
# references (it also hashes the file for the dump id and computes the holders' signatures),
# export writes the objects and references too. Issue 19 asks export to write at least 1 M
# objects per second per core, and --summary-only to take no more than 10% over summary.
# Usage: benches/export.sh DUMP.hprof [RUNS]   (the dumps come from benches/corpus/gen_hprof.py)
# Prints, per command, the best wall time and its user+sys CPU time over RUNS runs, then the
# ratios and the writing rate: (objects + references) / (export cpu - summary cpu). CPU time is
# the steadier figure on a shared machine.
set -euo pipefail
dump=${1:?usage: benches/export.sh DUMP.hprof [RUNS]}
runs=${2:-3}
bin=${HEAPGRAPH:-target/release/heapgraph}
if [[ "$(/usr/bin/time -f %e true 2>&1)" != 0* ]]; then
    echo "/usr/bin/time (GNU time) is needed: apt-get install time" >&2
    exit 2
fi
log=$(mktemp)
out=$(mktemp -d)
trap 'rm -rf "$log" "$out"' EXIT
best() { # "wall cpu" of the run with the best wall time; the export folder emptied each time
    local best_wall= best_cpu=
    for _ in $(seq "$runs"); do
        rm -rf "${out:?}"/*
        /usr/bin/time -o "$log" -f '%e %U %S' "$@" >/dev/null
        read -r wall user sys <"$log"
        cpu=$(echo "$user + $sys" | bc)
        if [[ -z $best_wall ]] || (($(echo "$wall < $best_wall" | bc))); then
            best_wall=$wall best_cpu=$cpu
        fi
    done
    echo "$best_wall $best_cpu"
}
cat "$dump" >/dev/null # all start from the page cache
read -r summary_wall summary_cpu < <(best "$bin" summary "$dump" -n 1 --format json)
read -r small_wall small_cpu < <(best "$bin" export --summary-only -o "$out" "$dump")
read -r full_wall full_cpu < <(best "$bin" export -o "$out" "$dump")
report=$("$bin" summary "$dump" -n 1 --format json)
objects=$(echo "$report" | python3 -c 'import json,sys; print(json.load(sys.stdin)["objects"])')
references=$(echo "$report" | python3 -c 'import json,sys; print(json.load(sys.stdin)["references"])')
du_out=$(du -sh "$out" | cut -f1)
printf 'dump %s: %s MB, %s objects, %s references\n' "$dump" \
    "$(echo "scale=1; $(stat -c %s "$dump") / 1000000" | bc)" "$objects" "$references"
printf 'summary:               %7.2f s wall %7.2f s cpu\n' "$summary_wall" "$summary_cpu"
printf 'export --summary-only: %7.2f s wall %7.2f s cpu\n' "$small_wall" "$small_cpu"
printf 'export:                %7.2f s wall %7.2f s cpu (%s of Parquet)\n' "$full_wall" "$full_cpu" "$du_out"
printf 'export --summary-only / summary: %.3f wall, %.3f cpu\n' \
    "$(echo "scale=4; $small_wall / $summary_wall" | bc)" "$(echo "scale=4; $small_cpu / $summary_cpu" | bc)"
printf 'export / summary: %.3f wall, %.3f cpu\n' \
    "$(echo "scale=4; $full_wall / $summary_wall" | bc)" "$(echo "scale=4; $full_cpu / $summary_cpu" | bc)"
printf 'writing the graph: %.2f M objects/s per core (%.2f M objects and references), from cpu after summary\n' \
    "$(echo "scale=4; $objects / ($full_cpu - $summary_cpu) / 1000000" | bc)" \
    "$(echo "scale=4; ($objects + $references) / ($full_cpu - $summary_cpu) / 1000000" | bc)"
