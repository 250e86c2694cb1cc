"""Scenario 3, a vector store in RAM: embeddings and index arrays grow without bound.

A retrieval service keeps, for every item, a pooled embedding (searched by nearest neighbour)
and its token embeddings (to rerank the best hits, as late-interaction retrievers do), each in
one growing array, with the ids beside them. The leaking version also adds every query to the
store ("so that repeated questions hit the cache"), so the arrays grow with traffic rather than
with the corpus. The fixed version keeps only the documents, and answers repeated questions
from a bounded cache of results.

    python3 examples/vector_store/vector_store.py [--fixed] [--steps QUERIES] [--dumps DIR] [--budget-mib MIB]
"""
import collections
import os
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402

import numpy  # noqa: E402

DIM = 256
TOKENS = 32
DOCUMENTS = 1000
RESULT_CACHE = 256


def embed(text):
    """A deterministic stand-in for an embedding model: the text's token embeddings and their
    mean, unit vectors seeded by the text."""
    rng = numpy.random.default_rng(zlib.crc32(text.encode()))
    tokens = rng.standard_normal((TOKENS, DIM)).astype(numpy.float32)
    tokens /= numpy.linalg.norm(tokens, axis=1, keepdims=True)
    pooled = tokens.mean(axis=0)
    return pooled / numpy.linalg.norm(pooled), tokens


def grown(array, rows):
    """`array` with room for `rows` rows, its capacity doubled as it fills (as FAISS's flat
    index and most in-memory stores grow theirs)."""
    if rows <= len(array):
        return array
    bigger = numpy.empty((max(rows, 2 * len(array)),) + array.shape[1:], dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


class VectorStore:
    def __init__(self):
        self.vectors = numpy.empty((1024, DIM), dtype=numpy.float32)
        self.token_vectors = numpy.empty((1024, TOKENS, DIM), dtype=numpy.float32)
        self.size = 0
        self.ids = []

    def add(self, item_id, embedding):
        pooled, tokens = embedding
        self.vectors = grown(self.vectors, self.size + 1)
        self.token_vectors = grown(self.token_vectors, self.size + 1)
        self.vectors[self.size] = pooled
        self.token_vectors[self.size] = tokens
        self.size += 1
        self.ids.append(item_id)

    def nearest(self, embedding, k=5):
        pooled, tokens = embedding
        scores = self.vectors[: self.size] @ pooled
        hits = numpy.argpartition(-scores, min(4 * k, self.size - 1))[: 4 * k]
        # Rerank the hits by late interaction: each query token's best match, summed.
        rerank = (self.token_vectors[hits] @ tokens.T).max(axis=1).sum(axis=1)
        return [self.ids[hits[i]] for i in numpy.argsort(-rerank)[:k]]


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
    example = Example(__doc__.splitlines()[0], default_steps=1500)
    global service
    service = RetrievalService(example.fixed)

    def warm_up():
        service.index(DOCUMENTS)
        for n in range(300):
            service.query("question %d" % (n % 300))

    example.run(warm_up=warm_up, step=lambda n: service.query("question %d" % (300 + n)))


if __name__ == "__main__":
    main()
