#!/usr/bin/env python3
"""A Python process of about a million objects, dumped by heapgraph_dump; prints one JSON line.

Usage: python3 benches/python_dump_program.py OUT.hgd [--objects N] [--peer]

The heap looks like a small service's: request objects with a headers dict, a body string and
a payload list, kept in a cache; modules and classes as any program has. It reports the dump's
object count, wall time and objects per second (the dumper's own speed: gc.get_objects, the walk
and writing the file). With --peer, also the time objgraph takes for its whole-heap questions on
the same process, right after: `typestats` and `get_leaking_objects` on one `gc.get_objects()`
list (every object's type, and every object's referents).
"""
import argparse
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates",
                                "capture", "python"))
import heapgraph_dump  # noqa: E402


class Request:
    def __init__(self, i):
        self.path = "/api/v1/items/%d" % i
        self.headers = {"id": i, "trace": "t-%d" % i, "retries": [i % 3, i % 5]}
        self.body = ("payload-%d " % i) * 3


class Cache:
    def __init__(self):
        self.entries = []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--peer", action="store_true", help="time objgraph too")
    args = parser.parse_args()
    cache = Cache()
    # Each request is about 8 objects: itself, 2 dicts' worth, 5 strings, ints, a list.
    for i in range(args.objects // 8):
        cache.entries.append(Request(i))
    started = time.perf_counter()
    written = heapgraph_dump.dump(args.out)
    seconds = time.perf_counter() - started
    peer = {}
    if args.peer:
        import objgraph
        started = time.perf_counter()
        objects = gc.get_objects()
        objgraph.typestats(objects, shortnames=False)
        objgraph.get_leaking_objects(objects)
        objects = None
        peer = {"objgraph": objgraph.__version__,
                "objgraph_seconds": round(time.perf_counter() - started, 3)}
    print(json.dumps(dict({
        "python": "%d.%d.%d" % sys.version_info[:3],
        "objects": written,
        "gc_tracked": len(gc.get_objects()),
        "seconds": round(seconds, 3),
        "objects_per_second": int(written / seconds),
        "bytes": os.path.getsize(args.out),
    }, **peer)))


if __name__ == "__main__":
    main()
