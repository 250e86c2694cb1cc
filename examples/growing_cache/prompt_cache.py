"""Pattern: a global list used as a cache that only grows.

A prompt-processing service tokenizes each prompt, and remembers what it tokenized in a
module-level list, `_TOKEN_CACHE`, of (prompt, tokens) pairs, looked up by a scan of its last
hundred entries. Nothing ever removes an entry, so the list grows with every distinct prompt.
The fixed version memoizes with `functools.lru_cache(maxsize=256)`: the same speed-up for
repeated prompts, and a bound.

    python3 examples/growing_cache/prompt_cache.py [--fixed] [--steps REQUESTS] [--dumps DIR] [--budget-mib MIB]
"""
import functools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402

_TOKEN_CACHE = []


def tokenize(prompt):
    """A stand-in tokenizer: the words' hashes, with a 16 KiB buffer of "features" per prompt,
    as a real tokenizer's offsets and attention masks are."""
    return tuple(hash(word) & 0xFFFF for word in prompt.split()), bytes(16 * 1024)


def tokens_leaking(prompt):
    for cached_prompt, tokens in _TOKEN_CACHE[-100:]:
        if cached_prompt == prompt:
            return tokens
    tokens = tokenize(prompt)
    _TOKEN_CACHE.append((prompt, tokens))  # the leak: a cache with no bound
    return tokens


@functools.lru_cache(maxsize=256)
def tokens_fixed(prompt):
    return tokenize(prompt)


def main():
    example = Example(__doc__.splitlines()[0], default_steps=3000)
    tokens = tokens_fixed if example.fixed else tokens_leaking

    def request(n):
        tokens("summarise document %d for user %d" % (n, n % 17))

    # Warm-up: more distinct prompts than the fixed cache holds, so that it is full.
    example.run(warm_up=lambda: [request(n) for n in range(400)], step=lambda n: request(400 + n))


if __name__ == "__main__":
    main()
