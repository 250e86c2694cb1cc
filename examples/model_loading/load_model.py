"""Scenario 1, loading a large model: the weights do not fit, because a converted copy is still
cached.

A model server loads a checkpoint of fp32 weights and converts it to fp16 for serving, and
reloads it whenever a new version is published. The leaking version's `ModelLoader` keeps every
checkpoint it read in `_checkpoints` ("so that going back to a version is instant"), so each
reload leaves a full fp32 copy, twice the size of the model being served, alive. The fixed
version converts and lets the fp32 checkpoint go.

With torch and a CUDA GPU, the weights are tensors on the GPU (each dump then comes with a CUDA
memory snapshot); otherwise they are numpy arrays of the same shapes: the CPU stand-in.

    python3 examples/model_loading/load_model.py [--fixed] [--steps RELOADS] [--dumps DIR] [--budget-mib MIB]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402

# Eight 1024 x 1024 layers: 32 MiB in fp32, 16 MiB in fp16.
LAYERS = 8
WIDTH = 1024


def backend():
    """torch on the GPU when there is one, numpy on the CPU otherwise."""
    try:
        import torch
        if torch.cuda.is_available():
            return "cuda"
    except ImportError:
        pass
    return "cpu"


BACKEND = backend()
if BACKEND == "cuda":
    import torch
else:
    import numpy


def read_checkpoint(version):
    """The checkpoint of `version`: fp32 weights by layer name, made in code (no download)."""
    if BACKEND == "cuda":
        generator = torch.Generator(device="cuda").manual_seed(version)
        return {"layer%d.weight" % i: torch.randn(WIDTH, WIDTH, device="cuda", generator=generator)
                for i in range(LAYERS)}
    rng = numpy.random.default_rng(version)
    return {"layer%d.weight" % i: rng.standard_normal((WIDTH, WIDTH), dtype=numpy.float32)
            for i in range(LAYERS)}


def to_fp16(weights):
    if BACKEND == "cuda":
        return {name: tensor.half() for name, tensor in weights.items()}
    return {name: array.astype(numpy.float16) for name, array in weights.items()}


class ModelLoader:
    def __init__(self, fixed):
        self.fixed = fixed
        self._checkpoints = {}

    def load(self, version):
        checkpoint = read_checkpoint(version)
        if not self.fixed:
            self._checkpoints[version] = checkpoint  # the leak: every fp32 copy stays
        return to_fp16(checkpoint)


class ModelServer:
    def __init__(self, loader):
        self.loader = loader
        self.weights = None
        self.version = None

    def publish(self, version):
        self.weights = self.loader.load(version)
        self.version = version


def main():
    example = Example(__doc__.splitlines()[0], default_steps=6)
    global loader, server
    loader = ModelLoader(example.fixed)
    server = ModelServer(loader)
    example.run(warm_up=lambda: server.publish(0), step=lambda n: server.publish(n + 1))


if __name__ == "__main__":
    main()
