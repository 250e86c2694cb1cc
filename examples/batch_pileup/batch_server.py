"""Scenario 2, batch pile-up: requests arrive faster than batches are served, and the queue
holds them all.

An inference server takes requests into a queue and serves them in batches of four. Six arrive
for every batch it serves. The leaking version's queue, `pending`, has no bound, so the
backlog (each request holding its input) grows without end; the fixed version's queue holds at
most 64 and turns the rest away at once (back-pressure: the client retries later, as with an
HTTP 429), so memory stays flat however long the overload lasts.

With torch and a CUDA GPU, each request's input is a tensor on the GPU; otherwise a numpy array
of the same shape: the CPU stand-in.

    python3 examples/batch_pileup/batch_server.py [--fixed] [--steps BATCHES] [--dumps DIR] [--budget-mib MIB]
"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402

BATCH = 4
ARRIVALS_PER_BATCH = 6
MAX_PENDING = 64
# One request's input: 256 tokens of 512-wide embeddings, 512 KiB in fp32.
TOKENS, WIDTH = 256, 512

try:
    import torch
    GPU = torch.cuda.is_available()
except ImportError:
    GPU = False
if not GPU:
    import numpy


def embed(request_id):
    if GPU:
        return torch.full((TOKENS, WIDTH), float(request_id % 7), device="cuda")
    return numpy.full((TOKENS, WIDTH), request_id % 7, dtype=numpy.float32)


def forward(inputs):
    """The model: a batch in, one score per request out."""
    if GPU:
        return torch.stack(inputs).mean(dim=(1, 2)).tolist()
    return [float(array.mean()) for array in inputs]


class InferenceRequest:
    def __init__(self, request_id):
        self.request_id = request_id
        self.inputs = embed(request_id)


class BatchServer:
    def __init__(self, fixed):
        self.fixed = fixed
        self.pending = collections.deque()
        self.rejected = 0
        self.served = 0

    def submit(self, request_id):
        if self.fixed and len(self.pending) >= MAX_PENDING:
            self.rejected += 1  # 429: the client backs off
            return False
        self.pending.append(InferenceRequest(request_id))
        return True

    def serve_batch(self):
        batch = [self.pending.popleft() for _ in range(min(BATCH, len(self.pending)))]
        if batch:
            forward([request.inputs for request in batch])
            self.served += len(batch)


def main():
    example = Example(__doc__.splitlines()[0], default_steps=120)
    global server
    server = BatchServer(example.fixed)
    next_id = [0]

    def batch(_):
        for _ in range(ARRIVALS_PER_BATCH):
            server.submit(next_id[0])
            next_id[0] += 1
        server.serve_batch()

    # Warm-up: enough overload that the fixed queue is full, as it stays from then on.
    example.run(warm_up=lambda: [batch(n) for n in range(40)], step=batch)


if __name__ == "__main__":
    main()
