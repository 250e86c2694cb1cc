"""Pattern: a large parsed JSON document kept alive after use.

A pricing service reloads its model catalog (a JSON document of a few MB: every model with its
description, tags and price history) every few requests, builds a small price index from it,
and serves from the index. The leaking version registers, at each reload, a shutdown hook that
logs the catalog's version, as a closure: `lambda: log(document["version"])`. The closure
holds the whole parsed document, and the hooks are kept in `shutdown_hooks` until exit, so every
catalog ever loaded stays in memory. The fixed version takes the version out first, so the
hook holds a string and the document goes as soon as the index is built.

    python3 examples/parsed_json/catalog_service.py [--fixed] [--steps REQUESTS] [--dumps DIR] [--budget-mib MIB]
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402

MODELS = 1000
RELOAD_EVERY = 25


def catalog_text(version):
    """The catalog as the pricing API would send it: made in code, a few MB of JSON."""
    models = [{
        "id": "model-%d" % i,
        "description": "A %d-parameter model, revision %d, for tasks of kind %d. " % (i * 1000, version, i % 9) * 24,
        "tags": ["tag-%d" % (i % 50), "family-%d" % (i % 7), "v%d" % version],
        "prices": [{"month": m, "usd": round(0.001 * (i % 97) + m * 0.0001, 6)} for m in range(6)],
    } for i in range(MODELS)]
    return json.dumps({"version": "2026.%d" % version, "models": models})


def log(message):
    pass


class CatalogService:
    def __init__(self, fixed):
        self.fixed = fixed
        self.prices = {}
        self.shutdown_hooks = []
        self.loaded = 0

    def reload(self):
        document = json.loads(catalog_text(self.loaded))
        self.prices = {model["id"]: model["prices"][-1]["usd"] for model in document["models"]}
        if self.fixed:
            version = document["version"]
            self.shutdown_hooks.append(lambda: log("catalog %s" % version))
        else:
            # The leak: the closure keeps `document`, the whole parsed catalog.
            self.shutdown_hooks.append(lambda: log("catalog %s" % document["version"]))
        self.loaded += 1

    def price(self, request_id):
        if request_id % RELOAD_EVERY == 0:
            self.reload()
        return self.prices["model-%d" % (request_id % MODELS)]


def main():
    example = Example(__doc__.splitlines()[0], default_steps=300)
    global service
    service = CatalogService(example.fixed)
    example.run(warm_up=lambda: [service.price(n) for n in range(25)],
                step=lambda n: service.price(25 + n))


if __name__ == "__main__":
    main()
