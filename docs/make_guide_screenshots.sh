#!/usr/bin/env bash
# Makes the guide's two pictures (docs/guide-growth.png, docs/guide-oom.png) from real reports:
# runs examples/batch_pileup as its README does (two dumps of the leaking version, and a
# recording until it runs out of memory, with the dump --act takes), writes the two reports, and
# photographs each page's first screen, down to the end of its first chart, in headless Chromium
# (tests/browser/check_report.py, which also checks the pages as the browser test does).
# Usage, from the repository root, with heapgraph built and numpy, chromium and chromedriver
# installed: docs/make_guide_screenshots.sh   (about 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
HEAPGRAPH=$(realpath "${HEAPGRAPH:-target/release/heapgraph}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The pages name their files and the recorded command as given: as short as the README's.
cd "$work"
ln -s "$root/examples" examples
mkdir -p batch_pileup/oom
python3 examples/batch_pileup/batch_server.py --dumps batch_pileup/leaking
"$HEAPGRAPH" report batch_pileup/leaking/warm.hgd batch_pileup/leaking/end.hgd -o growth.html
# The program dies of its MemoryError: record passes on its exit code.
"$HEAPGRAPH" record --interval 50ms --act 150MiB --dump-dir batch_pileup/oom \
    -o batch_pileup/oom/run.hgt -q -- \
    python3 examples/batch_pileup/batch_server.py --budget-mib 300 || true
"$HEAPGRAPH" report batch_pileup/oom/run.hgt batch_pileup/oom/*.hgd -o oom.html
python3 "$root/tests/browser/check_report.py" --width 1100 --first-screen shots growth.html oom.html
cp shots/growth.html.first.png "$root/docs/guide-growth.png"
cp shots/oom.html.first.png "$root/docs/guide-oom.png"
echo "wrote docs/guide-growth.png and docs/guide-oom.png"
