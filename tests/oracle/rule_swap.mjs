#!/usr/bin/env node
// Explains memlab vs DevTools: runs DevTools' own code (heap-snapshot-toolkit)
// with memlab's rules swapped in, one by one and together, and counts how many
// nodes then differ from DevTools and from memlab. The evidence behind the
// "memlab vs DevTools" section of tests/oracle/README.md.
//
// Usage: node tests/oracle/rule_swap.mjs SNAPSHOT[.gz]
//   Packages are found as memlab_oracle.js / devtools_oracle.js find them
//   (HEAPGRAPH_MEMLAB_DIR, HEAPGRAPH_DEVTOOLS_DIR, else tests/oracle).
// Swaps (monkey-patched on the JSHeapSnapshot prototype before parsing):
//   pageflags: memlab's flagReachableNodesFromWindow seeding (all root edges
//              but shortcuts and (Document DOM trees)) instead of DevTools'
//              markPageOwnedNodes (root shortcuts and (Document DOM trees));
//   nopage:    no page-owned flags at all (the edge filter never fires);
//   noweakmap: the WeakMap table->value edge stays essential;
//   noshallow: no calculateShallowSizes (self sizes as in the file).
// "nopage,noweakmap,noshallow" is the plain rule set: weak edges and
// non-root shortcuts ignored, nothing else.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const file = process.argv[2];
if (!file) { console.error('usage: rule_swap.mjs SNAPSHOT[.gz]'); process.exit(2); }
const tkDir = process.env.HEAPGRAPH_DEVTOOLS_DIR || here;
const tk = await import(pathToFileURL(path.join(tkDir, 'node_modules', 'heap-snapshot-toolkit', 'index.js')).href);

const open = () => {
  let s = fs.createReadStream(file);
  if (file.endsWith('.gz')) s = s.pipe(zlib.createGunzip());
  s.setEncoding('utf8');
  return s;
};
function result(s) {
  const n = s.nodeCount; const NF = s.nodeFieldCount;
  const ids = new Array(n); const self = new Array(n); const retained = new Array(n); const dominator = new Array(n);
  for (let i = 0; i < n; i++) {
    ids[i] = s.nodes.getValue(i * NF + s.nodeIdOffset);
    self[i] = s.nodes.getValue(i * NF + s.nodeSelfSizeOffset);
    retained[i] = s.retainedSizes[i];
  }
  for (let i = 0; i < n; i++) dominator[i] = ids[s.dominatorsTree[i]];
  return { ids, self, retained, dominator };
}
function diff(a, b) {
  const at = new Map(b.ids.map((id, i) => [id, i]));
  const d = { idom: 0, retained: 0, self: 0 };
  a.ids.forEach((id, i) => {
    const j = at.get(id);
    if (a.dominator[i] !== b.dominator[j]) d.idom++;
    if (a.retained[i] !== b.retained[j]) d.retained++;
    if (a.self[i] !== b.self[j]) d.self++;
  });
  return `idom ${d.idom}, retained ${d.retained}, self ${d.self}`;
}

// The prototypes, from a first parse.
const devtools = await tk.parse(open());
const JSProto = Object.getPrototypeOf(devtools);
const HSProto = Object.getPrototypeOf(JSProto);
const original = {
  markPageOwnedNodes: JSProto.markPageOwnedNodes,
  computeIsEssentialEdge: HSProto.computeIsEssentialEdge,
  calculateShallowSizes: JSProto.calculateShallowSizes,
};
const dt = result(devtools);

function memlabPageFlags() {
  const flags = this.flags; const flag = this.nodeFlags.pageObject; const NF = this.nodeFieldCount;
  const EF = this.edgeFieldsCount; const ce = this.containmentEdges; const fe = this.firstEdgeIndexes;
  const stack = new Uint32Array(this.nodeCount); let sp = 0; const node = this.rootNode();
  for (let e = fe[0]; e < fe[1]; e += EF) {
    const t = ce.getValue(e + this.edgeTypeOffset); const to = ce.getValue(e + this.edgeToNodeOffset);
    if (t === this.edgeElementType) { node.nodeIndex = to; if (node.isDocumentDOMTreesRoot()) continue; } else if (t === this.edgeShortcutType) continue;
    stack[sp++] = to / NF; flags[to / NF] |= flag;
  }
  while (sp) {
    const v = stack[--sp];
    for (let e = fe[v]; e < fe[v + 1]; e += EF) {
      const w = ce.getValue(e + this.edgeToNodeOffset) / NF;
      if (flags[w] & flag) continue;
      if (ce.getValue(e + this.edgeTypeOffset) === this.edgeWeakType) continue;
      stack[sp++] = w; flags[w] |= flag;
    }
  }
}
function withoutWeakMapRule(nodeIndex, edgeIndex, uf) {
  this.tryParseWeakMapEdgeName = () => undefined; // own property shadows the method for this call
  try { return original.computeIsEssentialEdge.call(this, nodeIndex, edgeIndex, uf); } finally { delete this.tryParseWeakMapEdgeName; }
}
async function runWith(swaps) {
  JSProto.markPageOwnedNodes = swaps.includes('pageflags') ? memlabPageFlags
    : swaps.includes('nopage') ? function () {} : original.markPageOwnedNodes;
  HSProto.computeIsEssentialEdge = swaps.includes('noweakmap') ? withoutWeakMapRule : original.computeIsEssentialEdge;
  JSProto.calculateShallowSizes = swaps.includes('noshallow') ? function () {} : original.calculateShallowSizes;
  return result(await tk.parse(open()));
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'heapgraph-swap-'));
execFileSync(process.execPath, [path.join(here, 'memlab_oracle.js'), '-o', path.join(tmp, 'ml.json'), file], { stdio: 'inherit' });
const ml = JSON.parse(fs.readFileSync(path.join(tmp, 'ml.json'), 'utf8'));
fs.rmSync(tmp, { recursive: true, force: true });

console.log(`${path.basename(file)}: ${dt.ids.length} nodes`);
console.log(`devtools vs memlab: ${diff(dt, ml)}`);
for (const swaps of ['pageflags', 'noweakmap', 'noshallow', 'pageflags,noweakmap,noshallow', 'nopage,noweakmap,noshallow']) {
  const r = await runWith(swaps.split(','));
  console.log(`devtools with [${swaps}]: vs devtools ${diff(r, dt)} | vs memlab ${diff(r, ml)}`);
}
process.exit(0);
