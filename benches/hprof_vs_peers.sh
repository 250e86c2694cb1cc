#!/usr/bin/env bash
# heapgraph vs hprof-slurp and hprof-analyzer on a Java HPROF heap dump: wall time and peak RSS.
#
# Usage (from anywhere inside the repository):
#   benches/hprof_vs_peers.sh
#   SIZE=medium benches/hprof_vs_peers.sh
#   SKIP_HEAPGRAPH=1 benches/hprof_vs_peers.sh      # time the peers only
# Environment:
#   SIZE        medium | large (default large: 2.5 GB, 1.6M leaked sessions; generating it takes
#               about a minute and an 8 GB Java heap; medium is 499 MB)
#   DUMP        time this .hprof instead of the generator's (a real application's dump from
#               benches/corpus/gen_apps.sh, say); SIZE is then ignored and the .hgd is written
#               beside it
#   BENCH_DIR   where the dump and the .hgd are kept between runs (default /tmp/heapgraph-bench);
#               the dump is made once, as BENCH_DIR/hprof/java-SIZE.hprof
#   PEERS_ROOT  cargo install root holding bin/hprof-slurp and bin/hprof-analyzer (default
#               /tmp/hprof-peers); a missing peer is installed there with
#               `cargo install --locked --root PEERS_ROOT` (retried without --locked), built in
#               cargo's own temporary folder, never in this repository's target/
#   HPROF_SLURP_VERSION     version installed when missing (default 0.10.0)
#   HPROF_ANALYZER_VERSION  likewise (default 0.3.2)
#   HPROF_ANALYZER_ARGS     extra arguments for hprof-analyzer (default none: its standard
#               analysis, which builds the dominator tree and retained sizes for the histogram,
#               leak suspects and top consumers; "--full-analysis" adds duplicates, collections
#               and the object graph on top, which heapgraph summary does not do)
#   HEAPGRAPH_BIN   use this heapgraph binary and skip `cargo build --release`
#   SKIP_HEAPGRAPH  1: time the peers only (steps a and b); no build, no heapgraph steps
#   REPEAT          runs of each heapgraph step; the median is reported (default 3)
#   IN_PEER_MEMORY  1: also step (e), heapgraph summary held to hprof-analyzer's peak RSS by a
#               memory cgroup (benches/memory_cgroup.sh: root and a writable memory cgroup), as a
#               container with only the peer's memory would hold it (default 0)
#   PEER_REPEAT     runs of each peer, likewise (default REPEAT)
# Needs: cargo, python3 + a JDK (javac, java, jcmd) when the dump must be generated, and GNU time
# as /usr/bin/time (Debian package `time`; when it is missing and this runs as root, it is
# installed with apt-get). The machine should be otherwise idle while this runs.
#
# Steps, each timed alone with /usr/bin/time -v (the median of REPEAT runs), page cache warm:
#   (a) hprof-slurp FILE (shallow sizes per class only: no graph, no dominators)
#   (b) hprof-analyzer FILE --format json (parse + dominator tree + retained sizes + report)
#   (c) heapgraph summary FILE --format json (parse + dominators + retained sizes)
#   (d) heapgraph convert FILE -o X.hgd, then heapgraph summary X.hgd --format json
#   (e) with IN_PEER_MEMORY=1: (c) inside a memory cgroup limited to (b)'s peak RSS, where
#       --spill auto sees the limit and spills; the dump's pages are dropped from the page
#       cache first and read again inside the cgroup, which is then charged for them
# Before anything is timed, heapgraph summary runs once on the dump untimed: when heapgraph cannot
# read the file (exit 2, e.g. a build without the HPROF importer) the script stops there, exit 3.
# A peer that fails is reported as failed in the table (its error printed) and the run goes on;
# a heapgraph step that fails stops the run (exit 1).
# Prints a markdown table with wall seconds, peak RSS and the ratios against the peers, and the
# issue's targets beside it. The dump generator is read from benches/corpus.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
CORPUS="$ROOT/benches/corpus"
SIZE="${SIZE:-large}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench}"
PEERS_ROOT="${PEERS_ROOT:-/tmp/hprof-peers}"
HPROF_SLURP_VERSION="${HPROF_SLURP_VERSION:-0.10.0}"
HPROF_ANALYZER_VERSION="${HPROF_ANALYZER_VERSION:-0.3.2}"
read -r -a ANALYZER_ARGS <<<"${HPROF_ANALYZER_ARGS:-}"
SKIP_HEAPGRAPH="${SKIP_HEAPGRAPH:-0}"
REPEAT="${REPEAT:-3}"
PEER_REPEAT="${PEER_REPEAT:-$REPEAT}"
case "$SIZE" in medium|large) ;; *) echo "SIZE must be medium or large" >&2; exit 2 ;; esac
case "$SKIP_HEAPGRAPH" in 0|1) ;; *) echo "SKIP_HEAPGRAPH must be 0 or 1" >&2; exit 2 ;; esac
IN_PEER_MEMORY="${IN_PEER_MEMORY:-0}"
case "$IN_PEER_MEMORY" in 0|1) ;; *) echo "IN_PEER_MEMORY must be 0 or 1" >&2; exit 2 ;; esac

source "$ROOT/benches/timing.sh"
require_gnu_time

# install_peer CRATE VERSION: cargo install into PEERS_ROOT when bin/CRATE is missing. Runs from /
# with CARGO_TARGET_DIR unset so that nothing is built in this repository's target/.
install_peer() {
  local crate="$1" version="$2"
  if [[ -x "$PEERS_ROOT/bin/$crate" ]]; then
    return
  fi
  echo "installing $crate $version into $PEERS_ROOT (cargo install, a few minutes)" >&2
  if ! (cd / && env -u CARGO_TARGET_DIR cargo install --quiet --locked --root "$PEERS_ROOT" \
        "$crate" --version "=$version" >&2); then
    echo "cargo install --locked $crate failed; retrying without --locked" >&2
    (cd / && env -u CARGO_TARGET_DIR cargo install --quiet --root "$PEERS_ROOT" \
      "$crate" --version "=$version" >&2)
  fi
}
install_peer hprof-slurp "$HPROF_SLURP_VERSION"
install_peer hprof-analyzer "$HPROF_ANALYZER_VERSION"
SLURP="$PEERS_ROOT/bin/hprof-slurp"
ANALYZER="$PEERS_ROOT/bin/hprof-analyzer"
SLURP_V="$("$SLURP" --version | awk '{print $NF}')"
ANALYZER_V="$("$ANALYZER" --version | awk '{print $NF}')"
[[ "$SLURP_V" == "$HPROF_SLURP_VERSION" ]] ||
  echo "warning: $SLURP is version $SLURP_V, not $HPROF_SLURP_VERSION" >&2
[[ "$ANALYZER_V" == "$HPROF_ANALYZER_VERSION" ]] ||
  echo "warning: $ANALYZER is version $ANALYZER_V, not $HPROF_ANALYZER_VERSION" >&2

if [[ -n "${DUMP:-}" ]]; then
  [[ -s "$DUMP" ]] || { echo "DUMP=$DUMP is not a file" >&2; exit 2; }
  SIZE="$(basename "$DUMP" .hprof)"
  HGD="${DUMP%.hprof}.hgd"
else
  DUMP_DIR="$BENCH_DIR/hprof"
  mkdir -p "$DUMP_DIR"
  DUMP="$DUMP_DIR/java-$SIZE.hprof"
  if [[ ! -s "$DUMP" ]]; then
    echo "generating $DUMP (once)" >&2
    python3 "$CORPUS/gen_hprof.py" --size "$SIZE" --out "$DUMP_DIR" >&2
  fi
  HGD="$DUMP_DIR/java-$SIZE.hgd"
fi

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

# Warm the page cache, so that no step pays for the first read of the dump.
echo "reading $DUMP into the page cache" >&2
cat "$DUMP" >/dev/null

# Pre-flight: can heapgraph read this dump at all? (Untimed; also warms heapgraph up.)
if [[ -n "$HG" ]]; then
  echo "checking that heapgraph reads $DUMP: $HG summary $DUMP --format json" >&2
  rc=0
  "$HG" summary "$DUMP" --format json >/dev/null 2>"$LOGS/preflight.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo >&2
    echo "heapgraph cannot read $DUMP (exit $rc):" >&2
    tail -n 20 "$LOGS/preflight.err" >&2
    echo >&2
    echo "This build of heapgraph ($HG) has no working HPROF import for this dump." >&2
    echo "Nothing was timed. Run with SKIP_HEAPGRAPH=1 to time the peers only." >&2
    exit 3
  fi
fi

# Peers: a failure is recorded ("fail" in the table) and the run goes on.
median slurp "$PEER_REPEAT" "$SLURP" "$DUMP" || echo "fail 0" >"$LOGS/slurp"
median analyzer "$PEER_REPEAT" "$ANALYZER" "$DUMP" --format json --progress never \
  "${ANALYZER_ARGS[@]}" || echo "fail 0" >"$LOGS/analyzer"

# heapgraph: a failure stops the run.
if [[ -n "$HG" ]]; then
  rm -f "$HGD"
  median summary "$REPEAT" "$HG" summary "$DUMP" --format json || exit 1
  median convert "$REPEAT" "$HG" convert "$DUMP" -o "$HGD" || exit 1
  median summary_hgd "$REPEAT" "$HG" summary "$HGD" --format json || exit 1
  read -r SW SR <"$LOGS/summary"
  read -r CW CR <"$LOGS/convert"
  read -r HW HR <"$LOGS/summary_hgd"
  HGD_BYTES="$(stat -c %s "$HGD")"
else
  SW=skip SR=0 CW=skip CR=0 HW=skip HR=0 HGD_BYTES=0
fi
read -r PW PR <"$LOGS/slurp"
read -r AW AR <"$LOGS/analyzer"
# (e): a run the cgroup kills is a row that says so, not the end of the table.
LW=skip LR=0 LIMIT=0 OOM_KILLS=0
if [[ -n "$HG" && "$IN_PEER_MEMORY" == 1 && "$AW" != fail ]]; then
  LIMIT=$((AR * 1024))
  CGROUP_DIR="$("$ROOT/benches/memory_cgroup.sh" make "$LIMIT")"
  # The dump's pages that the warming `cat` above read are charged to this script's cgroup,
  # where (e)'s limit would not count them: dropped from the page cache, then read again
  # inside (e)'s cgroup, as a container that read its dump would hold them.
  dd if="$DUMP" iflag=nocache count=0 status=none
  "$ROOT/benches/memory_cgroup.sh" run "$CGROUP_DIR" cat "$DUMP" >/dev/null
  median summary_in_peer "$REPEAT" "$ROOT/benches/memory_cgroup.sh" run "$CGROUP_DIR" \
    "$HG" summary "$DUMP" --format json || LW=fail
  read -r _ OOM_KILLS <<<"$("$ROOT/benches/memory_cgroup.sh" end "$CGROUP_DIR")"
  [[ "$LW" == fail ]] || read -r LW LR <"$LOGS/summary_in_peer"
fi

awk -v size="$SIZE" -v bytes="$(stat -c %s "$DUMP")" -v hgd="$HGD_BYTES" \
    -v slurp_v="$SLURP_V" -v analyzer_v="$ANALYZER_V" -v aargs="${HPROF_ANALYZER_ARGS:-}" \
    -v repeat="$REPEAT" -v peer_repeat="$PEER_REPEAT" \
    -v pw="$PW" -v pr="$PR" -v aw="$AW" -v ar="$AR" \
    -v sw="$SW" -v sr="$SR" -v cw="$CW" -v cr="$CR" -v hw="$HW" -v hr="$HR" \
    -v lw="$LW" -v lr="$LR" -v limit="$LIMIT" -v kills="$OOM_KILLS" '
  function ok(w) { return w != "fail" && w != "skip" }
  function wall(w) { return ok(w) ? sprintf("%.3f", w) : w }
  function mib(w, k) { return ok(w) ? sprintf("%.0f", k / 1024) : "" }
  function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f×", a / b) : "n/a" }
  # row LABEL WALL RSS: one heapgraph row with its three ratios.
  function row(label, w, r) {
    if (!ok(w)) { printf "| %s | %s | | | | |\n", label, w; return }
    printf "| %s | %.3f | %.0f | %s | %s | %s |\n", label, w, r / 1024,
      ok(aw) ? ratio(aw, w) : "n/a", ok(aw) ? ratio(r, ar) : "n/a", ok(pw) ? ratio(w, pw) : "n/a"
  }
  function verdict(label, w, r) {
    if (!ok(w)) return
    printf "- %s: ", label
    if (ok(aw)) {
      printf "%s faster than hprof-analyzer (target ≥ 4×: %s), ", ratio(aw, w), (aw / w >= 4 ? "met" : "NOT met")
      printf "%s its peak RSS (target ≤ 1.0×: %s)", ratio(r, ar), (r / ar <= 1.0 ? "met" : "NOT met")
    } else printf "hprof-analyzer failed, no comparison"
    if (ok(pw)) printf ", %s hprof-slurp wall (aim ≤ 3×: %s)", ratio(w, pw), (w / pw <= 3 ? "met" : "not met")
    printf "\n"
  }
  BEGIN {
    printf "\nJava HPROF `%s`: %.0f MB", size, bytes / 1e6
    if (hgd > 0) printf "; .hgd %.0f MB", hgd / 1e6
    printf " (median of %d heapgraph runs, %d peer runs)\n\n", repeat, peer_repeat
    print "| step | wall s | peak RSS MiB | hprof-analyzer/this wall | this/hprof-analyzer RSS | this/hprof-slurp wall |"
    print "| --- | ---: | ---: | ---: | ---: | ---: |"
    printf "| (a) hprof-slurp %s (shallow sizes only) | %s | %s | | | |\n", slurp_v, wall(pw), mib(pw, pr)
    printf "| (b) hprof-analyzer %s%s (dominators + retained) | %s | %s | | | |\n", analyzer_v,
      (aargs != "" ? " " aargs : ""), wall(aw), mib(aw, ar)
    row("(c) heapgraph summary .hprof", sw, sr)
    row("(d) heapgraph convert → .hgd", cw, cr)
    row("(d) heapgraph summary .hgd", hw, hr)
    if (ok(cw)) row("(d) heapgraph convert + summary .hgd", cw + hw, cr > hr ? cr : hr)
    if (lw != "skip") row(sprintf("(e) heapgraph summary .hprof in a %.0f MiB cgroup%s", limit / 1048576,
      lw == "fail" ? sprintf(" (out-of-memory kills: %d)", kills) : ""), lw, lr)
    print ""
    print "Targets for the full analysis (c) (issue 20): at least 4× faster than hprof-analyzer, at no"
    print "more than its peak RSS; the aim is within 3× of hprof-slurp'\''s shallow-only time."
    verdict("(c) heapgraph summary .hprof", sw, sr)
    if (ok(lw)) verdict("(e) heapgraph summary .hprof in the peer'\''s memory", lw, lr)
  }'
