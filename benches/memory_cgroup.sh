#!/usr/bin/env bash
# A memory cgroup for one benchmark run: a command held to a memory limit, as a container with
# that limit would hold it, so that the kernel must write spilled pages out rather than leave
# them resident. Used by larger_than_memory.sh (MEMORY_LIMIT) and hprof_vs_peers.sh
# (IN_PEER_MEMORY); needs root and a writable memory cgroup: v2 where the unified hierarchy
# gives its children the memory controller (cgroup.subtree_control), else v1's controller.
#
#   DIR=$(benches/memory_cgroup.sh make BYTES)   a new cgroup limited to BYTES; prints its folder
#   benches/memory_cgroup.sh run DIR CMD...      runs CMD inside it (exec: CMD keeps this pid)
#   benches/memory_cgroup.sh end DIR             prints "PEAK_BYTES OOM_KILLS" and removes it
set -euo pipefail

unified=/sys/fs/cgroup
case "${1:-}" in
  make)
    bytes="${2:?make BYTES}"
    if [[ -r $unified/cgroup.subtree_control ]] && grep -qw memory $unified/cgroup.subtree_control; then
      dir="$(mktemp -d $unified/heapgraph-bench.XXXXXX)"
      echo "$bytes" >"$dir/memory.max"
      echo 0 >"$dir/memory.swap.max" 2>/dev/null || true
    elif [[ -d $unified/memory ]]; then
      dir="$(mktemp -d $unified/memory/heapgraph-bench.XXXXXX)"
      echo "$bytes" >"$dir/memory.limit_in_bytes"
      # Where there is swap, the limit holds for memory and swap together.
      echo "$bytes" >"$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
    else
      echo "memory_cgroup.sh: no memory cgroup hierarchy under $unified" >&2
      exit 2
    fi
    echo "$dir"
    ;;
  run)
    dir="${2:?run DIR CMD...}"
    shift 2
    echo $$ >"$dir/cgroup.procs"
    exec "$@"
    ;;
  end)
    dir="${2:?end DIR}"
    if [[ -e $dir/memory.max ]]; then
      peak="$(cat "$dir/memory.peak")"
      kills="$(awk '$1 == "oom_kill" { print $2 }' "$dir/memory.events")"
    else
      peak="$(cat "$dir/memory.max_usage_in_bytes")"
      kills="$(awk '$1 == "oom_kill" { print $2 }' "$dir/memory.oom_control")"
    fi
    echo "$peak ${kills:-0}"
    rmdir "$dir"
    ;;
  *)
    echo "usage: memory_cgroup.sh make BYTES | run DIR CMD... | end DIR" >&2
    exit 2
    ;;
esac
