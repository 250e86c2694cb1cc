#!/usr/bin/env bash
# Installs every tool the tests need, on Debian 12 (bookworm) or later, as root or through sudo.
# The README's test command and .ci/run both run it first. What is already there is left alone,
# so a second run takes a few seconds. What each tool is for:
#
#   nodejs, npm          the peers of the V8 tests (memlab 2.0.5 and DevTools' heap snapshot
#                        worker, pinned in tests/oracle/package-lock.json), Node dumps of `record`
#   python3, pip         the Python dumps and their oracles objgraph 3.6.2 and guppy3 3.1.7;
#                        DuckDB 2.0.1, which reads `export`'s Parquet as docs/sql.md says;
#                        numpy for the examples' CPU stand-ins of GPU work; tracemalloc's own
#                        answers; the official MCP Python SDK (mcp 2.3.0), the client of the
#                        `heapgraph mcp` test
#   gdb                  `capture python --pid` and `record --act` without the dumper
#   chromium, chromedriver  the browser test of the HTML report
#   a JDK                java, javac and jcmd for the JVM test of `record` (default-jdk-headless:
#                        OpenJDK 17 on bookworm, 21 on trixie)
#   python3.11, strace, objcopy, debootstrap  the Python version tier: its three Debian roots
#                        (CPython 3.9, 3.13, 3.14) are built once into
#                        $HEAPGRAPH_PYTHON_ROOTS (default /var/cache/heapgraph/python-roots)
#
#   tests/setup.sh              # installs what is missing
set -euo pipefail
cd "$(dirname "$0")/.."

# objgraph 3.6.2 is the last release that installs on CPython 3.9 (the roots use the same).
OBJGRAPH_VERSION=3.6.2
GUPPY3_VERSION=3.1.7
NUMPY_VERSION=2.4.6
MCP_VERSION=2.3.0
DUCKDB_VERSION=2.0.1

if [[ $(id -u) == 0 ]]; then
    as_root() { "$@"; }
elif command -v sudo >/dev/null; then
    as_root() { sudo "$@"; }
else
    echo "tests/setup.sh installs Debian packages: run it as root, or install sudo" >&2
    exit 1
fi

# Debian packages, by the command each provides: only the missing ones are installed.
packages=()
want() { command -v "$1" >/dev/null || packages+=("$2"); }
want node nodejs
want npm npm
want python3 python3
want gdb gdb
want chromium chromium
want chromedriver chromium-driver
want javac default-jdk-headless
want jcmd default-jdk-headless
want strace strace
want objcopy binutils
want debootstrap debootstrap
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
# A C compiler and linker: cargo's own builds (a clean Debian has none).
want cc build-essential
if ((${#packages[@]})); then
    echo "== apt-get install ${packages[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $(printf '%s\n' "${packages[@]}" | sort -u)
fi

# chromedriver reaches the browser it starts at "localhost", which a root made by debootstrap
# (no /etc/hosts) cannot resolve: its session then fails with "unable to connect to renderer".
if ! getent hosts localhost >/dev/null; then
    echo "== localhost does not resolve: adding it to /etc/hosts"
    echo "127.0.0.1 localhost" | as_root tee -a /etc/hosts >/dev/null
fi

# The Python version tier compares against the machine's own CPython 3.11 (bookworm's python3).
if ! command -v python3.11 >/dev/null; then
    echo "python3.11 is needed by the Python version tier (Debian 12's python3 is 3.11)" >&2
    exit 1
fi

# `pip install` into `$1` (a python) of the packages after it, where that python keeps them.
pip_install() {
    local python=$1
    shift
    "$python" -m pip --version >/dev/null 2>&1 || as_root apt-get install -y -qq python3-pip
    local pip=("$python" -m pip install --quiet --disable-pip-version-check
        --root-user-action=ignore "$@")
    # Debian's own python3 is marked externally managed (PEP 668); a pyenv or venv one is
    # not. The tests run the system's python3, so that is where the packages go.
    if "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
        pip+=(--break-system-packages)
    fi
    if [[ -w $("$python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))') ]]; then
        "${pip[@]}"
    else
        as_root "${pip[@]}"
    fi
}

# objgraph, guppy3, numpy and duckdb, pinned, in every python3 the tests run (python3 and
# python3.11).
for python in python3 python3.11; do
    if ! "$python" -c "import objgraph, numpy, guppy, duckdb
assert objgraph.__version__ == '$OBJGRAPH_VERSION', objgraph.__version__
assert numpy.__version__ == '$NUMPY_VERSION', numpy.__version__
assert duckdb.__version__ == '$DUCKDB_VERSION', duckdb.__version__" 2>/dev/null; then
        echo "== $python: pip install objgraph==$OBJGRAPH_VERSION guppy3==$GUPPY3_VERSION numpy==$NUMPY_VERSION duckdb==$DUCKDB_VERSION"
        pip_install "$python" "objgraph==$OBJGRAPH_VERSION" "guppy3==$GUPPY3_VERSION" \
            "numpy==$NUMPY_VERSION" "duckdb==$DUCKDB_VERSION"
    fi
done

# The official MCP Python SDK, the client that drives `heapgraph mcp` in tests/e2e/mcp_client.py
# (python3 only; it needs Python 3.10 or later, and Debian 12's python3 is 3.11).
if ! python3 -c "import importlib.metadata as m
assert m.version('mcp') == '$MCP_VERSION', m.version('mcp')" 2>/dev/null; then
    echo "== python3: pip install mcp==$MCP_VERSION"
    pip_install python3 "mcp==$MCP_VERSION"
fi

echo "== the V8 peers: npm ci in tests/oracle"
# --ignore-scripts stops memlab's puppeteer dependency from downloading a browser.
# Installed again whenever the lock file changes (the stamp is its hash).
stamp=tests/oracle/node_modules/.heapgraph-stamp
if [[ "$(cat "$stamp" 2>/dev/null)" != "$(sha256sum <tests/oracle/package-lock.json)" ]]; then
    (cd tests/oracle && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    sha256sum <tests/oracle/package-lock.json >"$stamp"
fi

echo "== the Python version tier's roots"
if [[ $(id -u) == 0 ]]; then
    tests/python-roots/build.sh
else
    as_root env HEAPGRAPH_PYTHON_ROOTS="${HEAPGRAPH_PYTHON_ROOTS:-}" tests/python-roots/build.sh
fi
