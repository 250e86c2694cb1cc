#!/usr/bin/env node
// memlab oracle: dominators and retained sizes of a V8 heap snapshot as memlab
// computes them, for tests to compare heapgraph against.
//
// Usage:
//   node [--max-old-space-size=MB] tests/oracle/memlab_oracle.js \
//        [--memlab DIR] [-o OUT.json] SNAPSHOT[.gz]
//   DIR: folder where `npm install --ignore-scripts memlab@2.0.5` was run (has
//        node_modules/@memlab/core); defaults to $HEAPGRAPH_MEMLAB_DIR, then to
//        this script's folder (tests/oracle: `npm ci --ignore-scripts` there
//        installs the pinned memlab and heap-snapshot-toolkit).
//   SNAPSHOT: .heapsnapshot, or .heapsnapshot.gz (gunzipped to a temporary
//        file first, because memlab reads files only).
//   OUT.json: written with JSON.stringify; stdout when -o is missing.
//
// Output (one object, arrays indexed by node ordinal = order in the file):
//   {
//     "oracle": "memlab", "memlab_version": "2.0.5", "file": "...",
//     "node_count": N, "root_id": 1, "root_retained": R,
//     "ids":       [V8 node id, ...],
//     "self":      [self_size as memlab read it, ...],
//     "retained":  [memlab retainedSize, ...],
//     "dominator": [id of memlab's immediate dominator (root: its own id), ...],
//     "page":      [1 if flagReachableNodesFromWindow flagged the node, else 0],
//     "reach":     [1|2|3, ...],
//     "reach_counts": {"1": n1, "2": n2, "3": n3}
//   }
// `reach` says how memlab's computeDominatorsAndRetainedSizes got to the node:
//   1 = step 1, the DFS from the root over essential edges (the node is
//       reachable from the root);
//   2 = step 2, a DFS started from a node that has only weak (or shortcut, or
//       no) referrers, attached under the root;
//   3 = step 3, still unvisited after that (a clique retained only by itself),
//       attached directly under the root.
// memlab does not expose these steps (its DFS is a closure inside
// computeDominatorsAndRetainedSizes), so this script replicates them with
// memlab's own predicates (TraceFinder.flagReachableNodesFromWindow for the page
// flags, utils.isEssentialEdge, utils.hasOnlyWeakReferrers) and the same
// isEssential rule as memlab 2.0.5 dist/paths/TraceFinder.js:
//   not a self edge; utils.isEssentialEdge(from, type, root) (no weak edges, no
//   shortcut edges except from the root); and, except from the root, not an
//   edge from an unflagged node into a flagged one.
// The retained sizes and dominators themselves are memlab's own output
// (TraceFinder.calculateAllNodesRetainedSizes), not a replica.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { pipeline } = require('stream/promises');

function usage(msg) {
  if (msg) console.error('memlab_oracle: ' + msg);
  console.error('usage: memlab_oracle.js [--memlab DIR] [-o OUT.json] SNAPSHOT[.gz]');
  process.exit(2);
}

let memlabDir = process.env.HEAPGRAPH_MEMLAB_DIR || null;
let outFile = null;
let file = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--memlab') memlabDir = argv[++i];
  else if (argv[i] === '-o' || argv[i] === '--out') outFile = argv[++i];
  else if (argv[i] === '-h' || argv[i] === '--help') usage();
  else if (file === null) file = argv[i];
  else usage('one snapshot only');
}
if (!file) usage('no snapshot given');
if (!memlabDir && fs.existsSync(path.join(__dirname, 'node_modules', '@memlab', 'core'))) memlabDir = __dirname;
if (!memlabDir) usage('no memlab folder: pass --memlab DIR, set HEAPGRAPH_MEMLAB_DIR, or run npm ci --ignore-scripts in ' + __dirname);
const corePath = path.resolve(memlabDir, 'node_modules', '@memlab', 'core');
if (!fs.existsSync(corePath)) usage(`no @memlab/core under ${memlabDir}/node_modules`);
const core = require(corePath);
const memlabVersion = require(path.join(corePath, 'package.json')).version;

async function gunzipToTemp(gzFile) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heapgraph-memlab-'));
  const out = path.join(dir, path.basename(gzFile).replace(/\.gz$/, '') || 'snapshot.heapsnapshot');
  await pipeline(fs.createReadStream(gzFile), zlib.createGunzip(), fs.createWriteStream(out));
  return { out, dir };
}

// Replica of steps 1-3 of memlab's computeDominatorsAndRetainedSizes, reach only.
function memlabReach(snapshot, flags) {
  const ROOT = 0;
  const PAGE_OBJECT_FLAG = 1;
  const utils = core.utils;
  const nodes = snapshot.nodes;
  const n = nodes.length;
  const isEssential = (fromOrdinal, edgeType, toOrdinal) => {
    if (fromOrdinal === toOrdinal) return false;
    if (!utils.isEssentialEdge(fromOrdinal, edgeType, ROOT)) return false;
    if (fromOrdinal !== ROOT && (flags[toOrdinal] & PAGE_OBJECT_FLAG) &&
        !(flags[fromOrdinal] & PAGE_OBJECT_FLAG)) return false;
    return true;
  };
  const reach = new Uint8Array(n);
  const stack = new Uint32Array(n);
  const dfs = (start, mark) => {
    let sp = 0;
    reach[start] = mark;
    stack[sp++] = start;
    while (sp > 0) {
      const v = stack[--sp];
      for (const edge of nodes.get(v).references) {
        const w = edge.toNode.nodeIndex;
        if (reach[w] !== 0 || !isEssential(v, edge.type, w)) continue;
        reach[w] = mark;
        stack[sp++] = w;
      }
    }
  };
  dfs(ROOT, 1);
  for (let v = 0; v < n; v++) {
    if (reach[v] === 0 && utils.hasOnlyWeakReferrers(nodes.get(v))) dfs(v, 2);
  }
  for (let v = 0; v < n; v++) if (reach[v] === 0) reach[v] = 3;
  return reach;
}

(async () => {
  core.config.muteConsole = true;
  let snapFile = path.resolve(file);
  let tmp = null;
  if (/\.gz$/.test(snapFile)) {
    tmp = await gunzipToTemp(snapFile);
    snapFile = tmp.out;
  }
  try {
    const snapshot = await core.utils.getSnapshotFromFile(snapFile, { buildNodeIdIndex: true });
    const finder = new core.TraceFinder();
    finder.calculateAllNodesRetainedSizes(snapshot);

    const nodes = snapshot.nodes;
    const n = nodes.length;
    const flags = new Uint32Array(n);
    finder.flagReachableNodesFromWindow(snapshot, flags, 1);
    const reach = memlabReach(snapshot, flags);

    const ids = new Array(n);
    const self = new Array(n);
    const retained = new Array(n);
    const dominator = new Array(n);
    const page = new Array(n);
    const reachOut = new Array(n);
    const reachCounts = { 1: 0, 2: 0, 3: 0 };
    for (let i = 0; i < n; i++) {
      const node = nodes.get(i);
      ids[i] = node.id;
      self[i] = node.self_size;
      retained[i] = node.retainedSize;
      dominator[i] = node.dominatorNode ? node.dominatorNode.id : null;
      page[i] = flags[i] & 1;
      reachOut[i] = reach[i];
      reachCounts[reach[i]]++;
    }
    const root = nodes.get(0);
    const out = {
      oracle: 'memlab',
      memlab_version: memlabVersion,
      node_version: process.version,
      file: path.basename(file),
      node_count: n,
      edge_count: snapshot.edges.length,
      root_id: root.id,
      root_retained: root.retainedSize,
      reach_counts: reachCounts,
      ids, self, retained, dominator, page, reach: reachOut,
    };
    const text = JSON.stringify(out) + '\n';
    if (outFile) fs.writeFileSync(outFile, text);
    else process.stdout.write(text);
  } finally {
    if (tmp) fs.rmSync(tmp.dir, { recursive: true, force: true });
  }
})().catch((e) => { console.error(e && e.stack || e); process.exit(1); });
