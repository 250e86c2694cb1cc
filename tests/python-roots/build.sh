#!/usr/bin/env bash
# Builds the Debian roots that the Python version tier runs its tests in, one per CPython the
# dumper claims beside the machine's own 3.11, each with objgraph (the tests' oracle):
#
#   py3.9   bullseye  python3.9
#   py3.13  trixie    python3.13
#   py3.14  sid       python3.14   (no gdb: `capture python --pid` goes through sys.remote_exec)
#
# A root is made with `debootstrap --variant=minbase` from Debian's packages (170-280 MB each;
# the three side by side in about three minutes) and kept in $HEAPGRAPH_PYTHON_ROOTS (default
# /var/cache/heapgraph/python-roots), which survives between CI runs on one machine; a root
# that is missing, unfinished or made by another recipe is built again. Needs root,
# debootstrap (installed when missing) and Debian's mirror.
#
#   tests/python-roots/build.sh            # builds the roots that are missing
#   tests/python-roots/build.sh --check    # fails, naming them, if any is missing
set -euo pipefail

ROOTS=${HEAPGRAPH_PYTHON_ROOTS:-/var/cache/heapgraph/python-roots}
MIRROR=${HEAPGRAPH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# objgraph 3.6.2 is the last release that installs on 3.9 (3.7.0 wants 3.10); one version on
# every interpreter, so that the oracle is the same code everywhere. The wheel is one module.
OBJGRAPH=objgraph-3.6.2-py3-none-any.whl
OBJGRAPH_SHA256=8114c97712291c3ba30d882406a384d0a7651b307ea9a06e0d83836ccde85e15

# name suite packages
ROOT_LIST=(
    "py3.9 bullseye python3.9"
    "py3.13 trixie python3.13"
    "py3.14 sid python3.14"
)

# What a finished root was made by: a root whose stamp differs is built again.
recipe() { echo "suite=$2 packages=$3 objgraph=$OBJGRAPH_SHA256 variant=minbase+apt"; }

ready() {
    local dir=$ROOTS/$1
    [[ -f $dir/.heapgraph-root && "$(cat "$dir/.heapgraph-root")" == "$(recipe "$@")" ]]
}

if [[ ${1:-} == --check ]]; then
    missing=()
    for entry in "${ROOT_LIST[@]}"; do
        # shellcheck disable=SC2086
        ready $entry || missing+=("$ROOTS/${entry%% *}")
    done
    if ((${#missing[@]})); then
        echo "missing Python roots: ${missing[*]}; run tests/python-roots/build.sh (as root)" >&2
        exit 1
    fi
    exit 0
fi

if [[ $(id -u) != 0 ]]; then
    echo "building the Python roots needs root (debootstrap, chroot)" >&2
    exit 1
fi
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
mkdir -p "$ROOTS"

wheel=$ROOTS/$OBJGRAPH
if ! echo "$OBJGRAPH_SHA256  $wheel" | sha256sum --check --status 2>/dev/null; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$ROOTS" "objgraph==3.6.2"
    echo "$OBJGRAPH_SHA256  $wheel" | sha256sum --check --quiet
fi

# Removes a root, after unmounting what a killed test run may have left mounted in it (its
# /proc), and never crossing into another file system.
clear() {
    local dir=$1
    [[ -e $dir ]] || return 0
    findmnt -rn -o TARGET | grep -F "$dir/" | sort -r | while read -r mounted; do
        umount "$mounted" || umount -l "$mounted"
    done
    rm -rf --one-file-system "$dir"
}

build() {
    local name=$1 suite=$2 packages=$3
    local dir=$ROOTS/$name
    local version=${packages#python}
    echo "== $dir: debootstrap $suite with $packages"
    clear "$dir.new"
    # The interpreter is installed by the root's own apt, not with `--include`: bookworm's
    # debootstrap (1.0.128) lists a package twice when sid's dependencies and --include's meet
    # ("Tried to extract package, but file already exists", libssl3t64). A mirror whose
    # Release file is past its Valid-Until (a frozen one) is taken as it is, as debootstrap does.
    debootstrap --variant=minbase "$suite" "$dir.new" "$MIRROR" >"$ROOTS/$name.log" 2>&1 \
        && chroot "$dir.new" apt-get -o Acquire::Check-Valid-Until=false update -qq \
            >>"$ROOTS/$name.log" 2>&1 \
        && chroot "$dir.new" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends $packages >>"$ROOTS/$name.log" 2>&1 \
        || { tail -20 "$ROOTS/$name.log" >&2; exit 1; }
    # objgraph from the wheel, into the directory Debian's interpreter reads for local packages.
    local site=$dir.new/usr/local/lib/python$version/dist-packages
    mkdir -p "$site"
    python3 -m zipfile -e "$wheel" "$site"
    chroot "$dir.new" "/usr/bin/python$version" -c 'import objgraph' \
        || { echo "objgraph does not import in $dir.new" >&2; exit 1; }
    # The image's caches are not needed by the tests.
    chroot "$dir.new" apt-get clean
    rm -rf "$dir.new"/var/lib/apt/lists/*
    recipe "$@" >"$dir.new/.heapgraph-root"
    clear "$dir"
    mv "$dir.new" "$dir"
}

# The missing roots are built side by side: most of the time goes in downloads.
pids=()
for entry in "${ROOT_LIST[@]}"; do
    # shellcheck disable=SC2086
    ready $entry || { build $entry & pids+=($!); }
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
exit $failed
