"""The recorded program of tests/gpu/check_nvml.py: makes torch allocate known amounts on
cuda:0 in steps, and after each step writes its own account, with what `nvidia-smi
--query-compute-apps` says this process uses, to ACCOUNT (one JSON line per step).

    python3 tests/gpu/nvml_child.py ACCOUNT [GIB ...]
"""
import json
import os
import subprocess
import sys
import time

import torch

account_path = sys.argv[1]
steps = [float(step) for step in sys.argv[2:]] or [1, 2, 4]


def smi_used_mib():
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True).stdout
    used = {}
    for line in out.strip().splitlines():
        pid, mib = (field.strip() for field in line.split(","))
        used[int(pid)] = int(mib)
    return used.get(os.getpid()), used


torch.empty(1, device="cuda:0")  # the CUDA context, first
torch.cuda.synchronize()
held = []
with open(account_path, "w") as account:
    for gib in steps:
        held.append(torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda:0"))
        torch.cuda.synchronize()
        time.sleep(1.0)
        mine, everyone = smi_used_mib()
        account.write(json.dumps({
            "t": time.time(), "step_gib": gib, "smi_mib": mine, "smi_all": everyone,
            "torch_reserved": torch.cuda.memory_reserved(), "pid": os.getpid(),
        }) + "\n")
        account.flush()
        time.sleep(2.0)
