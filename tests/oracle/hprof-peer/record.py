#!/usr/bin/env python3
"""Records the Java peer's answers for tests/e2e/hprof_peer.rs.

Builds this folder's program (hprof-analyzer 0.3.2 from crates.io, as a library; its own
Cargo.lock) into target/hprof-peer, runs it on each Java fixture, and writes what it prints
(every object's address, shallow size and retained size) to answers/DUMP.json.gz, with the
SHA-256 of the fixture it was computed from. The test reads the recordings and fails on a
fixture whose hash differs, so a changed fixture is recorded again with this script:

    tests/oracle/hprof-peer/record.py            # build the peer, write the answers
    tests/oracle/hprof-peer/record.py --check    # build the peer, fail if an answer differs

The build takes about 350 CPU seconds (hprof-analyzer's 100,000 lines), which is why CI reads
the recordings instead of building the peer on every run.
"""
import gzip
import hashlib
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
DUMPS = ["default", "nocoops", "nocompressed", "references", "javac"]
PEER = "hprof-analyzer 0.3.2 (tests/oracle/hprof-peer)"


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit(__doc__)
    target = ROOT / "target" / "hprof-peer"
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--quiet",
         "--manifest-path", str(HERE / "Cargo.toml"), "--target-dir", str(target)],
        check=True,
    )
    answers = HERE / "answers"
    answers.mkdir(exist_ok=True)
    differ = []
    for dump in DUMPS:
        fixture = ROOT / "fixtures" / "java" / f"{dump}.hprof.gz"
        printed = subprocess.run(
            [str(target / "release" / "hprof-peer"), str(fixture)],
            check=True, capture_output=True,
        ).stdout
        answer = json.loads(printed)
        answer = {
            "peer": PEER,
            "fixture": f"fixtures/java/{dump}.hprof.gz",
            "fixture_sha256": hashlib.sha256(fixture.read_bytes()).hexdigest(),
            "objects": answer["objects"],
            "rows": answer["rows"],
        }
        path = answers / f"{dump}.json.gz"
        if check:
            with gzip.open(path) as recorded:
                if json.load(recorded) != answer:
                    differ.append(str(path))
            continue
        text = json.dumps(answer, separators=(",", ":")).encode()
        # mtime 0: the same answer gives the same bytes.
        path.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
        print(f"{path.relative_to(ROOT)}: {answer['objects']} objects")
    if differ:
        sys.exit("the peer now answers differently from the recordings: " + ", ".join(differ))


if __name__ == "__main__":
    main()
