#!/usr/bin/env node
// DevTools oracle: distances, dominators and retained sizes of a V8 heap
// snapshot as Chrome DevTools' own heap-snapshot worker computes them.
//
// It runs the real DevTools code (front_end/entrypoints/heap_snapshot_worker/
// HeapSnapshot.ts, HeapSnapshotLoader.ts), compiled to plain JavaScript and
// published on npm as `heap-snapshot-toolkit` (Apache-2.0, by Nolan Lawson;
// thirdparty/devtools-frontend/index.js, a rollup bundle of
// chrome-devtools-frontend, 728 KB, no dependencies). Nothing is ported here.
//
// Usage:
//   node [--max-old-space-size=MB] tests/oracle/devtools_oracle.js \
//        [--devtools DIR] [--classes] [-o OUT.json] SNAPSHOT[.gz]
//   DIR: folder where `npm install --ignore-scripts heap-snapshot-toolkit@1.1.3`
//        was run (has node_modules/heap-snapshot-toolkit); defaults to
//        $HEAPGRAPH_DEVTOOLS_DIR, then to this script's folder (tests/oracle:
//        `npm ci --ignore-scripts` there installs the pinned packages).
//   SNAPSHOT: .heapsnapshot or .heapsnapshot.gz (gunzipped as a stream).
//   OUT.json: written with JSON.stringify; stdout when -o is missing.
//   --classes: also write, per node, DevTools' node type name (`type`, null
//        where `snapshot.meta.node_types` does not list the node's type number)
//        and its class name (`class_name`, what the Summary view groups by).
//
// Output (arrays indexed by node ordinal = order in the file):
//   {
//     "oracle": "devtools", "toolkit_version": "1.1.3", "file": "...",
//     "node_count": N, "root_id": 1, "root_retained": R,
//     "base_system_distance": 100000000, "no_distance": -5,
//     "ids":       [V8 node id, ...],
//     "self":      [self_size as DevTools shows it, ...],
//     "retained":  [DevTools retained size, ...],
//     "dominator": [id of the immediate dominator (root: its own id), ...],
//     "distance":  [DevTools nodeDistances value, ...]
//   }
// `distance` is DevTools' raw value: 0 for the root when there are no user
// roots, else the root has 100000000; user roots (non-synthetic children of
// the root, and `(Document DOM trees)`) have 1; nodes reached from user roots
// have 1 + their BFS depth below the nearest user root; nodes reached only from
// the root through system roots have 100000000 + their depth below the root;
// nodes never reached have -5 (DevTools' #noDistance).
// `self` is DevTools' shallow size AFTER JSHeapSnapshot.calculateShallowSizes,
// which moves the size of `hidden`/`array`/`system / ExternalStringData` nodes
// with a single owner into their owner (only when the snapshot has user roots,
// which Node and Chrome snapshots have). `retained` is computed from those
// moved sizes: only the retained sizes of the donor nodes themselves change.
// DevTools' dominators also differ from memlab's (page-owned edge filter,
// WeakMap table edges): see tests/oracle/README.md for the rules and figures.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { pathToFileURL } = require('url');

function usage(msg) {
  if (msg) console.error('devtools_oracle: ' + msg);
  console.error('usage: devtools_oracle.js [--devtools DIR] [--classes] [-o OUT.json] SNAPSHOT[.gz]');
  process.exit(2);
}

let toolkitDir = process.env.HEAPGRAPH_DEVTOOLS_DIR || null;
let outFile = null;
let classes = false;
let file = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--devtools') toolkitDir = argv[++i];
  else if (argv[i] === '-o' || argv[i] === '--out') outFile = argv[++i];
  else if (argv[i] === '--classes') classes = true;
  else if (argv[i] === '-h' || argv[i] === '--help') usage();
  else if (file === null) file = argv[i];
  else usage('one snapshot only');
}
if (!file) usage('no snapshot given');
if (!toolkitDir && fs.existsSync(path.join(__dirname, 'node_modules', 'heap-snapshot-toolkit'))) toolkitDir = __dirname;
if (!toolkitDir) usage('no toolkit folder: pass --devtools DIR, set HEAPGRAPH_DEVTOOLS_DIR, or run npm ci --ignore-scripts in ' + __dirname);
const pkgDir = path.resolve(toolkitDir, 'node_modules', 'heap-snapshot-toolkit');
if (!fs.existsSync(path.join(pkgDir, 'index.js'))) {
  usage(`no heap-snapshot-toolkit under ${toolkitDir}/node_modules`);
}
const toolkitVersion = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;

(async () => {
  const toolkit = await import(pathToFileURL(path.join(pkgDir, 'index.js')).href);
  let stream = fs.createReadStream(path.resolve(file));
  if (/\.gz$/.test(file)) stream = stream.pipe(zlib.createGunzip());
  stream.setEncoding('utf8');
  const snapshot = await toolkit.parse(stream);

  const n = snapshot.nodeCount;
  const NF = snapshot.nodeFieldCount;
  const nodes = snapshot.nodes;
  const get = typeof nodes.getValue === 'function' ? (i) => nodes.getValue(i) : (i) => nodes[i];
  const idOff = snapshot.nodeIdOffset;
  const selfOff = snapshot.nodeSelfSizeOffset;
  const ids = new Array(n);
  const self = new Array(n);
  const retained = new Array(n);
  const dominator = new Array(n);
  const distance = new Array(n);
  for (let i = 0; i < n; i++) {
    ids[i] = get(i * NF + idOff);
    self[i] = get(i * NF + selfOff);
    retained[i] = snapshot.retainedSizes[i];
    distance[i] = snapshot.nodeDistances[i];
  }
  for (let i = 0; i < n; i++) dominator[i] = ids[snapshot.dominatorsTree[i]];
  const rootOrdinal = snapshot.rootNodeIndex / NF;
  const out = {
    oracle: 'devtools',
    toolkit: 'heap-snapshot-toolkit',
    toolkit_version: toolkitVersion,
    node_version: process.version,
    file: path.basename(file),
    node_count: n,
    root_id: ids[rootOrdinal],
    root_retained: retained[rootOrdinal],
    base_system_distance: toolkit.DevToolsAPI.HeapSnapshotModel.baseSystemDistance,
    no_distance: -5,
    ids, self, retained, dominator, distance,
  };
  if (classes) {
    out.type = new Array(n);
    out.class_name = new Array(n);
    const node = snapshot.createNode(0);
    for (let i = 0; i < n; i++) {
      node.nodeIndex = i * NF;
      const type = node.type();
      out.type[i] = type === undefined ? null : type;
      out.class_name[i] = node.className();
    }
  }
  const text = JSON.stringify(out) + '\n';
  // Exit explicitly (the toolkit's MessageChannel can keep the loop alive), but
  // only once stdout has been flushed: writes to a pipe are asynchronous.
  if (outFile) {
    fs.writeFileSync(outFile, text);
    process.exit(0);
  } else {
    process.stdout.write(text, () => process.exit(0));
  }
})().catch((e) => { console.error(e && e.stack || e); process.exit(1); });
