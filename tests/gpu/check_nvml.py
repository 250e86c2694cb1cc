#!/usr/bin/env python3
"""NVML on a real GPU: heapgraph record's per-process GPU memory against nvidia-smi's.

Run on a CUDA machine with torch (the device machine of this workplace has both), from the
repository root, with a heapgraph binary built there or carried along:

    python3 tests/gpu/check_nvml.py [HEAPGRAPH_BIN] [OUT_DIR]

It records tests/gpu/nvml_child.py (1, 2, then 4 GiB allocated by torch on cuda:0, each held
for 3 s) at a 200 ms interval, then, for every step, compares the timeline's GPU memory of the
process at the samples taken while the step held (from 0.5 s before nvidia-smi was asked to
1.5 s after) with what nvidia-smi said: they must agree within 1%. It also checks that the
timeline names the GPU with nvidia-smi's total memory, and that the device's used memory is at
least the process's. Prints one JSON object with every comparison; exits 1 when one fails.
OUT_DIR (default $OUT, else a temporary directory) keeps the timeline, the child's account and
the result.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
heapgraph = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/heapgraph")
out_dir = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("OUT") or tempfile.mkdtemp()
os.makedirs(out_dir, exist_ok=True)
timeline_path = os.path.join(out_dir, "nvml.hgt")
account_path = os.path.join(out_dir, "nvml-account.jsonl")

record = subprocess.run(
    [heapgraph, "record", "--interval", "200ms", "-q", "-o", timeline_path, "--",
     sys.executable, os.path.join(ROOT, "tests/gpu/nvml_child.py"), account_path],
    capture_output=True, text=True)
view = json.loads(subprocess.run(
    [heapgraph, "summary", timeline_path, "--format", "json"],
    capture_output=True, text=True, check=True).stdout)
account = [json.loads(line) for line in open(account_path)]
smi_total = subprocess.run(
    ["nvidia-smi", "--id=0", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
    capture_output=True, text=True, check=True).stdout.strip()

result = {"record_exit": record.returncode, "record_stderr": record.stderr[-2000:],
          "notes": view["dump"]["notes"], "gpus": view["gpus"], "steps": [], "ok": True}
MIB = 1 << 20
if not view["gpus"]:
    result["ok"] = False
    result["failure"] = "the timeline has no GPU: NVML did not load"
else:
    gpu = view["series"]["gpus"][0]
    t_s = view["series"]["t_s"]
    started = view["started_at_ms"] / 1000
    # nvidia-smi's memory.total is in MiB, NVML's total in bytes.
    total_ok = abs(view["gpus"][0]["memory_bytes"] / MIB - int(smi_total)) <= 1
    result["total_mib"] = {"timeline": view["gpus"][0]["memory_bytes"] / MIB, "nvidia_smi": int(smi_total),
                           "ok": total_ok}
    result["ok"] &= total_ok
    for step in account:
        at = step["t"] - started
        samples = [(t, p, d) for t, p, d in zip(t_s, gpu["process_bytes"], gpu["device_bytes"])
                   if at - 0.5 <= t <= at + 1.5 and p is not None]
        smi = step["smi_mib"]
        compared = []
        for t, process, device in samples:
            error = abs(process / MIB - smi) / smi if smi else None
            compared.append({"t_s": t, "timeline_mib": process / MIB, "device_mib": device and device / MIB,
                             "error": error, "ok": error is not None and error <= 0.01
                             and (device is None or device >= process)})
        ok = bool(compared) and all(c["ok"] for c in compared)
        result["steps"].append({"step_gib": step["step_gib"], "nvidia_smi_mib": smi,
                                "torch_reserved_mib": step["torch_reserved"] / MIB,
                                "samples": compared, "ok": ok})
        result["ok"] &= ok
        if smi is None:
            result["failure"] = ("nvidia-smi lists no process with the child's pid %d (%s): the pid "
                                 "namespaces differ" % (step["pid"], step["smi_all"]))
json.dump(result, open(os.path.join(out_dir, "nvml-result.json"), "w"), indent=1)
print(json.dumps(result, indent=1))
sys.exit(0 if result["ok"] else 1)
