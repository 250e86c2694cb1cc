# Sourced by the side-by-side benchmark scripts: GNU time, and each step's wall time and peak RSS
# as the median of several runs. The caller sets LOGS, a folder for the runs' files.

# require_gnu_time: /usr/bin/time with its -v report, installed from Debian when run as root.
require_gnu_time() {
  if [[ ! -x /usr/bin/time ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
      echo "installing GNU time (Debian package 'time')" >&2
      apt-get update -qq && apt-get install -y -qq time >/dev/null
    else
      echo "/usr/bin/time is missing: apt-get install time" >&2
      exit 2
    fi
  fi
  if [[ "$(/usr/bin/time -v true 2>&1)" != *'Maximum resident set size'* ]]; then
    echo "/usr/bin/time is not GNU time (no -v report): apt-get install time" >&2
    exit 2
  fi
}

# timed NAME CMD...: runs CMD under /usr/bin/time -v (its stdout kept in $LOGS/NAME.out) and
# leaves "wall_seconds peak_rss_kib" in $LOGS/NAME. Returns 1, after printing CMD's exit status
# and stderr, if CMD fails.
timed() {
  local name="$1"; shift
  echo "running $name: $*" >&2
  local t0 t1
  t0=$(date +%s%N)
  if ! /usr/bin/time -v -o "$LOGS/$name.time" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err"; then
    echo "$name failed ($(grep -hE 'Exit status|terminated by signal' "$LOGS/$name.time" |
      sed 's/^[[:space:]]*//' | tr '\n' ' ')):" >&2
    tail -n 20 "$LOGS/$name.err" >&2
    return 1
  fi
  t1=$(date +%s%N)
  # Wall time from date (ns); GNU time's "Elapsed (wall clock)" has 10 ms steps.
  awk -v ns="$((t1 - t0))" '
    /Maximum resident set size/ { rss = $NF }
    END { printf "%.3f %d\n", ns / 1e9, rss }
  ' "$LOGS/$name.time" >"$LOGS/$name"
}

# median NAME N CMD...: runs `timed` N times and keeps the run with the median wall time (the
# machine is shared and single runs vary by a third). Returns 1 at the first failed run.
median() {
  local name="$1" n="$2"; shift 2
  : >"$LOGS/$name.all"
  for ((i = 1; i <= n; i++)); do
    timed "$name" "$@" || return 1
    cat "$LOGS/$name" >>"$LOGS/$name.all"
  done
  sort -n "$LOGS/$name.all" | sed -n "$(((n + 1) / 2))p" >"$LOGS/$name"
}
