"""The recorded program of benches/record_overhead.sh: keeps RESIDENT_MIB of memory resident
(so that reading its smaps_rollup has real page tables to walk), then churns Python objects
(dicts, lists, strings: allocation and freeing, as a request handler does) for ROUNDS rounds,
and prints the seconds the churn took. That figure, with and without a recorder, is the
overhead the recorder imposes.

    python3 benches/record_workload.py [RESIDENT_MIB] [ROUNDS] [WAIT_FILE]

With WAIT_FILE, it waits until that file exists before churning (the bench attaches a recorder
to it first).
"""
import os
import sys
import time

resident_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
wait_file = sys.argv[3] if len(sys.argv) > 3 else None

ballast = [bytearray(b"\x01" * (1 << 20)) for _ in range(resident_mib)]
if wait_file:
    while not os.path.exists(wait_file):
        time.sleep(0.01)

started = time.perf_counter()
kept = []
for round_ in range(rounds):
    batch = []
    for i in range(20000):
        batch.append({"id": i, "path": "/v1/items/%d" % i, "tags": [str(i), "x" * (i % 64)]})
    kept.append(batch[::100])
    del batch
print("%.4f" % (time.perf_counter() - started))
