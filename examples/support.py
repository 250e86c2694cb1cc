"""What every example shares: the command line, the dumps a CI gate compares, a memory budget
that makes the leaking version run out of memory for real, and heapgraph's dumper installed so
that `heapgraph record --act` can ask the program for a dump before it does.

Every example runs as

    python3 examples/<scenario>/<program>.py [--fixed] [--steps N] [--dumps DIR] [--budget-mib MIB]

- `--fixed` runs the fixed version; without it, the leaking one.
- `--steps N` is the amount of work (requests, reloads, queries); each example has a default.
- `--dumps DIR` writes DIR/warm.hgd once the program has warmed up and DIR/end.hgd when the work
  is done: the pair that `heapgraph diff` and `heapgraph report` compare.
- `--budget-mib MIB` limits the process's address space to what it has mapped after warming
  up plus MIB (on a GPU, its share of the GPU's memory to what torch has reserved plus MIB),
  and makes the work go on until it is done or memory runs out: the leaking version then dies
  with MemoryError (torch's OutOfMemoryError on a GPU), as a service does when its container's
  memory is exhausted. Run it under `heapgraph record --act …` (`--gpu-act` on a GPU) and the
  recorder takes a dump while there is still room.

Standard library only, but for numpy where an example needs arrays (the CPU stand-ins of GPU
work). No network, no model download: weights and embeddings are made in code.
"""

import argparse
import gc
import os
import resource
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "crates", "capture", "python"))
import heapgraph_dump  # noqa: E402

# One thread for numpy's BLAS: each of its threads maps a large stack, which a budget on the
# address space would spend before the program allocates anything.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def mapped_bytes():
    """The process's address space now (VmSize), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Example:
    """The parsed command line and the checkpoints of one run."""

    def __init__(self, description, default_steps):
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--fixed", action="store_true", help="run the fixed version")
        parser.add_argument("--steps", type=int, default=default_steps,
                            help="how much work to do (default %(default)s)")
        parser.add_argument("--dumps", metavar="DIR",
                            help="write DIR/warm.hgd after warming up and DIR/end.hgd at the end")
        parser.add_argument("--budget-mib", type=int, metavar="MIB",
                            help="run out of memory past MIB more than the start's address space")
        self.args = parser.parse_args()
        self.fixed = self.args.fixed
        self.steps = self.args.steps
        heapgraph_dump.install()
        if self.args.dumps:
            os.makedirs(self.args.dumps, exist_ok=True)

    def version(self):
        return "fixed" if self.fixed else "leaking"

    def start_budget(self):
        """Caps the memory the work may use (after the imports and the warm-up, which every
        version needs): from here on the program has `--budget-mib` to spend. On the CPU that
        is the address space; when the program's tensors are on a GPU, it is the process's
        share of the GPU's memory (`torch.cuda.set_per_process_memory_fraction`, the cap under
        which torch raises its own OutOfMemoryError), since GPU memory is not in the address
        space's budget."""
        if not self.args.budget_mib:
            return
        budget = self.args.budget_mib * 1024 * 1024
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            total = torch.cuda.get_device_properties(0).total_memory
            share = min(1.0, (torch.cuda.memory_reserved(0) + budget) / total)
            torch.cuda.set_per_process_memory_fraction(share, 0)
            return
        limit = mapped_bytes() + budget
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def checkpoint(self, name):
        """Writes DIR/name.hgd (after a full collection, so that only what is held is in it)."""
        if not self.args.dumps:
            return
        gc.collect()
        path = os.path.join(self.args.dumps, name + ".hgd")
        heapgraph_dump.dump(path)

    def run(self, warm_up, step, finish=None):
        """Warms up, checkpoints `warm`, then does the steps (all of them, or with a budget
        until memory runs out), checkpoints `end`, and reports. A MemoryError ends the program
        with exit code 1, as an uncaught one would, after saying where it happened (torch's
        OutOfMemoryError on a GPU likewise)."""
        warm_up()
        self.checkpoint("warm")
        self.start_budget()
        # With a budget, the leaking version goes on until memory runs out (or a hundred times
        # its usual work, so that a budget too large for the leak still ends).
        limit = self.steps * 100 if self.args.budget_mib and not self.fixed else self.steps
        done = 0
        try:
            while done < limit:
                step(done)
                done += 1
        except Exception as error:  # noqa: BLE001 - MemoryError, or torch's OutOfMemoryError
            if not (isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError"):
                raise
            # Release what the step held, so that printing works, and stop as an OOM does.
            gc.collect()
            sys.stderr.write("%s: out of memory after %d steps (the %s version)\n"
                             % (os.path.basename(sys.argv[0]), done, self.version()))
            sys.stderr.flush()
            os._exit(1)
        if finish:
            finish()
        self.checkpoint("end")
        print("%s: %d steps done (the %s version)"
              % (os.path.basename(sys.argv[0]), done, self.version()))
