"""Scenario 3, a vector store in RAM: embeddings and index arrays grow without bound.

A retrieval service keeps its documents' embeddings in one array and answers queries by
nearest neighbour. The leaking version also adds every query's embedding to the store ("so
that repeated questions hit the cache"), so the array, and the list of ids beside it, grow
with traffic rather than with the corpus. The fixed version keeps only the documents, and
answers repeated questions from a bounded cache of results.

    python3 examples/vector_store/vector_store.py [--fixed] [--steps QUERIES] [--dumps DIR] [--budget-mib MIB]
"""
import collections
import os
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402

import numpy  # noqa: E402

DIM = 768
DOCUMENTS = 2000
RESULT_CACHE = 256


def embed(text):
    """A deterministic stand-in for an embedding model: a unit vector seeded by the text."""
    rng = numpy.random.default_rng(zlib.crc32(text.encode()))
    vector = rng.standard_normal(DIM).astype(numpy.float32)
    return vector / numpy.linalg.norm(vector)


class VectorStore:
    """Embeddings in one growing array (capacity doubled as it fills, as FAISS's flat index
    and most in-memory stores do), with their ids beside them."""

    def __init__(self):
        self.vectors = numpy.empty((1024, DIM), dtype=numpy.float32)
        self.size = 0
        self.ids = []

    def add(self, item_id, vector):
        if self.size == len(self.vectors):
            grown = numpy.empty((2 * len(self.vectors), DIM), dtype=numpy.float32)
            grown[: self.size] = self.vectors[: self.size]
            self.vectors = grown
        self.vectors[self.size] = vector
        self.size += 1
        self.ids.append(item_id)

    def nearest(self, vector, k=5):
        scores = self.vectors[: self.size] @ vector
        best = numpy.argpartition(-scores, min(k, self.size - 1))[:k]
        return [self.ids[i] for i in best]


class RetrievalService:
    def __init__(self, fixed):
        self.fixed = fixed
        self.store = VectorStore()
        self.results = collections.OrderedDict()

    def index(self, documents):
        for doc_id in range(documents):
            self.store.add("doc-%d" % doc_id, embed("document %d" % doc_id))

    def query(self, text):
        if self.fixed and text in self.results:
            self.results.move_to_end(text)
            return self.results[text]
        vector = embed(text)
        answer = self.store.nearest(vector)
        if self.fixed:
            self.results[text] = answer
            if len(self.results) > RESULT_CACHE:
                self.results.popitem(last=False)
        else:
            self.store.add("query:" + text, vector)  # the leak: queries join the corpus
        return answer


def main():
    example = Example(__doc__.splitlines()[0], default_steps=6000)
    global service
    service = RetrievalService(example.fixed)

    def warm_up():
        service.index(DOCUMENTS)
        for n in range(300):
            service.query("question %d" % (n % 300))

    example.run(warm_up=warm_up, step=lambda n: service.query("question %d" % (300 + n)))


if __name__ == "__main__":
    main()
