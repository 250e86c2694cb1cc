#!/usr/bin/env python3
"""The MSRV check of .ci/run (docs/ci.md).

The workspace declares its minimum supported Rust version once, as `rust-version` in
`[workspace.package]`. With one toolchain on the machine, the check is that this toolchain *is*
the declared version, so that the build, lints and tests that follow prove the MSRV rather than
some newer Rust; that every crate of ours declares it; and that no dependency declares a newer
one (cargo would refuse to build it, but later and with less to go on). Dependencies that
declare no rust-version are covered by the build itself.

Exits 1, naming each failure, when any of this does not hold.
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Every workspace whose crates must build on the MSRV: the project, its fuzz targets and the
# Java peer the tests build (tests/oracle/hprof-peer).
MANIFESTS = [
    ROOT / "Cargo.toml",
    ROOT / "fuzz" / "Cargo.toml",
    ROOT / "tests" / "oracle" / "hprof-peer" / "Cargo.toml",
]


def version(text):
    """`1.95` or `1.95.0` (or `1.95.0-nightly`) as a comparable (major, minor, patch)."""
    numbers = [int(part) for part in text.split("-")[0].split(".")]
    return tuple(numbers + [0] * (3 - len(numbers)))


def main():
    with open(ROOT / "Cargo.toml", "rb") as manifest:
        declared = tomllib.load(manifest)["workspace"]["package"]["rust-version"]
    msrv = version(declared)
    failures = []

    rustc = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    facts = dict(line.split(": ", 1) for line in rustc.splitlines() if ": " in line)
    if version(facts["release"])[:2] != msrv[:2]:
        failures.append(
            f"rustc is {facts['release']}, not the declared MSRV {declared}: run CI on the MSRV "
            f"toolchain (`rustup run {declared} bash .ci/run`), or change rust-version in "
            "Cargo.toml together with the machines' toolchain"
        )

    dependencies = {}
    for manifest in MANIFESTS:
        # cargo's own errors (a lockfile out of date, a manifest it refuses) go to stderr.
        run = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--quiet",
             "--manifest-path", str(manifest), "--filter-platform", facts["host"]],
            stdout=subprocess.PIPE, text=True,
        )
        if run.returncode != 0:
            sys.exit(f"msrv: cargo metadata failed on {manifest.relative_to(ROOT)} (above)")
        metadata = json.loads(run.stdout)
        ours = set(metadata["workspace_members"])
        for package in metadata["packages"]:
            name = f"{package['name']} {package['version']}"
            needs = package.get("rust_version")
            if package["id"] in ours:
                if needs is None or version(needs) != msrv:
                    failures.append(
                        f"{name} ({manifest.relative_to(ROOT)}) declares rust-version {needs}, "
                        f"not the workspace's {declared}"
                    )
            else:
                dependencies[name] = needs
                if needs is not None and version(needs) > msrv:
                    failures.append(
                        f"{name} needs Rust {needs}, newer than our MSRV {declared}: pin an older "
                        "version (`cargo update -p NAME --precise VERSION`) or raise the MSRV"
                    )

    for failure in failures:
        print(f"msrv: {failure}")
    if failures:
        sys.exit(1)
    undeclared = sum(needs is None for needs in dependencies.values())
    print(
        f"msrv: rustc {facts['release']} is the declared MSRV {declared}; {len(dependencies)} "
        f"dependencies checked, none needs a newer Rust ({undeclared} declare no rust-version: "
        f"the build on {declared} covers them)"
    )


if __name__ == "__main__":
    main()
