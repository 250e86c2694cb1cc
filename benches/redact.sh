#!/usr/bin/env bash
# redact against cp: `heapgraph redact` reads a whole HPROF, zeroes its values in place and
# writes it back; cp of the same file is the disk's speed, the peer it must keep up with.
# Usage: benches/redact.sh DUMP.hprof [RUNS]   (an uncompressed dump: gzip would dominate)
# The dumps come from benches/corpus/gen_hprof.py. Prints MB/s for both and the ratio.
set -euo pipefail
dump=${1:?usage: benches/redact.sh DUMP.hprof [RUNS]}
runs=${2:-3}
bin=${HEAPGRAPH:-target/release/heapgraph}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bytes=$(stat -c %s "$dump")
best() { # best wall time of $runs runs of "$@", in seconds
    local best_s=
    for _ in $(seq "$runs"); do
        sync
        local start end
        start=$(date +%s.%N)
        "$@" >/dev/null
        end=$(date +%s.%N)
        local s
        s=$(echo "$end - $start" | bc)
        if [[ -z $best_s ]] || (($(echo "$s < $best_s" | bc))); then best_s=$s; fi
    done
    echo "$best_s"
}
cat "$dump" >/dev/null # both start from the page cache
cp_s=$(best cp "$dump" "$out/copy.hprof")
redact_s=$(best "$bin" redact "$dump" -o "$out/redacted.hprof")
mb=$(echo "scale=1; $bytes / 1000000" | bc)
printf 'dump %s: %s MB\n' "$dump" "$mb"
printf 'cp:     %6.2f s  %7.1f MB/s\n' "$cp_s" "$(echo "scale=1; $mb / $cp_s" | bc)"
printf 'redact: %6.2f s  %7.1f MB/s\n' "$redact_s" "$(echo "scale=1; $mb / $redact_s" | bc)"
printf 'redact / cp time: %.2f\n' "$(echo "scale=3; $redact_s / $cp_s" | bc)"
