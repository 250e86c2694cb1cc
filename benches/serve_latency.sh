#!/usr/bin/env bash
# heapgraph serve on a Java HPROF dump: time to the first answer, latency of each API endpoint
# (p50 and p95), peak RSS against `heapgraph summary`'s on the same dump, and the load test
# (50 concurrent clients, answers checked) for LOAD_SECONDS.
#
# Usage (from anywhere inside the repository):
#   benches/serve_latency.sh
#   SIZE=large benches/serve_latency.sh
# Environment:
#   SIZE          medium | large (default medium: 499 MB; large is the 2.5 GB, 35M-object dump
#                 of docs/performance.md); the dump is made once with benches/corpus/gen_hprof.py
#   BENCH_DIR     where the dumps are kept (default /tmp/heapgraph-bench), as hprof_vs_peers.sh
#   HEAPGRAPH_BIN use this heapgraph binary and skip `cargo build --release`
#   REQUESTS      requests per endpoint (default 200; each a different object or page where the
#                 endpoint takes one)
#   LOAD_SECONDS  length of the load test (default 30)
# Needs: cargo, python3 (+ a JDK when the dump must be generated), GNU time as /usr/bin/time.
#
# Steps:
#   (a) heapgraph summary DUMP --format json under /usr/bin/time -v: its wall time and peak RSS,
#       the reference for the memory budget (summary's peak + 20%);
#   (b) heapgraph convert DUMP -o X.hgd once, then heapgraph serve X.hgd: seconds from start to
#       the URL printed, to the first API answer (object/root) and to the summary's answer (the
#       stored analysis adopted; the chain index, the rendered answers and the explorer's
#       indexes are built behind the first answers);
#   (c) heapgraph serve DUMP: the same three times; then the first request of each endpoint
#       alone, then REQUESTS more to each (20 to paths and strings, which read the whole dump
#       per request), one client, keep-alive, timed from the client (p50, p95, max in ms); then
#       the load test; then the 20 requests to paths and strings again (what is built behind
#       the first answers, the kept paths answers among it, has finished by then); then the
#       server's peak RSS (VmHWM) against (a)'s.
# Prints a markdown table; docs/performance.md keeps the figures and this command.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIZE="${SIZE:-medium}"
BENCH_DIR="${BENCH_DIR:-/tmp/heapgraph-bench}"
REQUESTS="${REQUESTS:-200}"
LOAD_SECONDS="${LOAD_SECONDS:-30}"
DUMP_DIR="$BENCH_DIR/hprof"
DUMP="$DUMP_DIR/java-$SIZE.hprof"
HGD="$DUMP_DIR/java-$SIZE.hgd"
mkdir -p "$DUMP_DIR"

if [[ -n "${HEAPGRAPH_BIN:-}" ]]; then
  HG="$HEAPGRAPH_BIN"
else
  (cd "$ROOT" && cargo build --release --locked >&2)
  HG="$ROOT/target/release/heapgraph"
fi
if [[ ! -s "$DUMP" ]]; then
  echo "generating $DUMP (once)" >&2
  python3 "$ROOT/benches/corpus/gen_hprof.py" --size "$SIZE" --out "$DUMP_DIR" >&2
fi
[[ -s "$HGD" ]] || "$HG" convert "$DUMP" -o "$HGD" >&2

peak() { # peak RSS in MiB and wall seconds of a command, from GNU time
  local log; log="$(mktemp)"
  /usr/bin/time -v "$@" >/dev/null 2>"$log"
  python3 - "$log" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
seconds = sum(float(part) * 60 ** i for i, part in enumerate(reversed(wall.split(":"))))
print("%.0f %.2f" % (rss, seconds))
EOF
  rm -f "$log"
}

# Warm the page cache, so that neither `summary` nor a server's start pays for the first read.
cat "$DUMP" "$HGD" >/dev/null

read -r SUMMARY_RSS SUMMARY_WALL < <(peak "$HG" summary "$DUMP" --format json)
echo "summary: ${SUMMARY_WALL} s, peak ${SUMMARY_RSS} MiB" >&2

python3 - "$HG" "$DUMP" "$HGD" "$REQUESTS" "$LOAD_SECONDS" "$SUMMARY_RSS" "$SUMMARY_WALL" "$SIZE" <<'EOF'
import http.client, json, random, statistics, subprocess, sys, threading, time, urllib.parse

hg, dump, hgd, requests, load_seconds, summary_rss, summary_wall, size = sys.argv[1:]
requests, load_seconds, summary_rss = int(requests), int(load_seconds), float(summary_rss)

def start(path):
    """Starts serve on `path`; seconds from start to: the URL printed (listening), the first
    API answer (`object/root`), the summary answered (rendered behind the first answers)."""
    began = time.time()
    server = subprocess.Popen([hg, "serve", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = server.stdout.readline().strip()
    listening = time.time() - began
    parts = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(parts.query)["token"][0]
    connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=600)
    def get(path):
        sep = "&" if "?" in path else "?"
        connection.request("GET", path + sep + "token=" + token)
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, (path, response.status, body[:200])
        return body
    get("/api/v1/object/root")
    first = time.time() - began
    get("/api/v1/summary")
    return server, get, parts.port, token, (listening, first, time.time() - began)

def vm_hwm(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

server, _, _, _, hgd_ready = start(hgd)
server.kill(); server.wait()
server, get, port, token, ready = start(dump)
hprof_ready = ready

random.seed(1)
types = json.loads(get("/api/v1/types"))["types"]
# The types with the most instances: their pages are the slowest to choose.
by_count = sorted(types, key=lambda t: -t["count"])[:50]
big_types = [t["type"] for t in by_count]
counts_of = {t["type"]: t["count"] for t in by_count}
ids = []
for name in big_types[:10]:
    page = json.loads(get("/api/v1/instances?type=%s&limit=50" % urllib.parse.quote(name)))
    ids += [o["id"] for o in page["objects"]]
random.shuffle(ids)
root = json.loads(get("/api/v1/children/root?limit=1000"))
parents = [c["id"] for c in root["children"] if c["hidden_children"] > 0] or ["root"]

endpoints = {
    "summary": lambda i: "/api/v1/summary",
    "types": lambda i: "/api/v1/types",
    "findings": lambda i: "/api/v1/findings",
    "instances": lambda i: "/api/v1/instances?type=%s&offset=%d&limit=100" % (urllib.parse.quote(big_types[i % len(big_types)]), (i // len(big_types)) * 100 % counts_of[big_types[i % len(big_types)]]),
    "object": lambda i: "/api/v1/object/%d" % ids[i % len(ids)],
    "referrers": lambda i: "/api/v1/referrers/%d" % ids[i % len(ids)],
    "holders": lambda i: "/api/v1/holders/%d" % ids[i % len(ids)],
    "children (root)": lambda i: "/api/v1/children/root?offset=%d&limit=100" % (i * 100 % max(root["total"], 1)),
    "children": lambda i: "/api/v1/children/%s" % parents[i % len(parents)],
    "paths": lambda i: "/api/v1/paths?type=%s" % urllib.parse.quote(big_types[i % len(big_types)]),
    "strings": lambda i: "/api/v1/strings?duplicates=1&limit=%d" % (100 + i % 7),
}
# Each still reads the whole dump per request (docs/api.md): fewer requests.
slow = {"paths", "strings"}
# The first request of each endpoint, timed alone: it waits for the index the endpoint reads
# if the thread building them behind the first answers has not finished it yet.
firsts = {}
for name, path in endpoints.items():
    t = time.perf_counter()
    get(path(0))
    firsts[name] = (time.perf_counter() - t) * 1000
def timed(name):
    """p50, p95 and max in ms of the requests to one endpoint."""
    path = endpoints[name]
    times = []
    for i in range(1, 1 + (min(requests, 20) if name in slow else requests)):
        t = time.perf_counter()
        get(path(i))
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], times[-1]
rows = [("`%s`" % name, firsts[name]) + timed(name) for name in endpoints]

# The load test: 50 clients, each answer compared with the one given alone.
paths = [endpoints[name](i) for name in endpoints if name not in slow for i in range(3)]
expected = {path: get(path) for path in paths}
deadline = time.time() + load_seconds
counts, failures = [0] * 50, []
def client(k):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    i = k
    while time.time() < deadline:
        path = paths[i % len(paths)]
        sep = "&" if "?" in path else "?"
        try:
            connection.request("GET", path + sep + "token=" + token)
            response = connection.getresponse()
            body = response.read()
            if response.status != 200 or body != expected[path]:
                failures.append((path, response.status))
        except Exception as error:  # noqa: BLE001
            failures.append((path, repr(error)))
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        counts[k] += 1
        i += 7
threads = [threading.Thread(target=client, args=(k,)) for k in range(50)]
for thread in threads: thread.start()
for thread in threads: thread.join()
# The slow endpoints again, once whatever the server builds behind the first answers (the
# kept `paths` answers among it) has had the load test's seconds to finish.
again = [("`%s`, again after the load test" % name, None) + timed(name) for name in endpoints if name in slow]
rss = vm_hwm(server.pid)
server.kill(); server.wait()

print("| `%s` | value |" % size)
print("| --- | --- |")
print("| `heapgraph summary` (the reference) | %s s, peak RSS %.0f MiB |" % (summary_wall, summary_rss))
print("| `serve` of the `.hprof`: listening / first answer / summary answered | %.2f / %.2f / %.2f s |" % hprof_ready)
print("| `serve` of the `.hgd`: listening / first answer / summary answered | %.2f / %.2f / %.2f s |" % hgd_ready)
print("| `serve` peak RSS (VmHWM, after the load test) | %.0f MiB, **%.2f×** summary's (budget 1.20×) |" % (rss, rss / summary_rss))
print("| load test: 50 clients, %d s | %d answers, %d wrong or failed |" % (load_seconds, sum(counts), len(failures)))
print()
print("| endpoint | first ms | p50 ms | p95 ms | max ms |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, first, p50, p95, worst in rows + again:
    first = "" if first is None else "%.1f" % first
    print("| %s | %s | %.1f | %.1f | %.1f |" % (name, first, p50, p95, worst))
if failures:
    print("failures: %s" % failures[:10], file=sys.stderr)
    sys.exit(1)
EOF
