#!/usr/bin/env node
// Writes v8-tiny.heapsnapshot.gz: a real Node.js heap snapshot cut down to a few
// hundred nodes, for the V8 importer's tests (oracle comparison, truncation sweep,
// mutation proptest), where a 4 MB snapshot would be too slow to cut at every byte.
//
// Usage (from crates/import): node --track-heap-objects tests/data/make_v8_tiny.js
//
// How: take a snapshot of this process (with allocation tracking on, so that
// trace_function_infos, trace_tree, samples and locations are not empty), keep the
// first NODES nodes in breadth-first order from the root (so the root, (GC roots),
// the global object and some user objects survive), keep the edges between kept
// nodes, renumber, keep only the strings still used, and write the JSON the way
// V8's serializer does (same key order, `\n,` between records, non-ASCII as
// \uXXXX). A few node names are replaced by odd strings (escapes, a surrogate pair,
// lone surrogates, raw UTF-8) so that the string decoder is exercised.
'use strict';
const v8 = require('v8');
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

const NODES = 300;

class TinyThing { constructor(i) { this.index = i; this.label = 'thing ' + i; } }
globalThis.tinyThings = Array.from({ length: 20 }, (_, i) => new TinyThing(i));

const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'v8tiny-')), 'full.heapsnapshot');
v8.writeHeapSnapshot(tmp);
const snap = JSON.parse(fs.readFileSync(tmp, 'utf8'));
fs.rmSync(path.dirname(tmp), { recursive: true });

const meta = snap.snapshot.meta;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const nType = meta.node_fields.indexOf('type');
const nName = meta.node_fields.indexOf('name');
const nEdges = meta.node_fields.indexOf('edge_count');
const nTrace = meta.node_fields.indexOf('trace_node_id');
const eType = meta.edge_fields.indexOf('type');
const eName = meta.edge_fields.indexOf('name_or_index');
const eTo = meta.edge_fields.indexOf('to_node');
const edgeTypes = meta.edge_types[0];
const nodeCount = snap.nodes.length / NF;

const firstEdge = new Array(nodeCount + 1);
firstEdge[0] = 0;
for (let i = 0; i < nodeCount; i++) firstEdge[i + 1] = firstEdge[i] + snap.nodes[i * NF + nEdges];

// Breadth-first from the root.
const newIndex = new Map([[0, 0]]);
const order = [0];
for (let head = 0; head < order.length && order.length < NODES; head++) {
  const node = order[head];
  for (let e = firstEdge[node]; e < firstEdge[node + 1] && order.length < NODES; e++) {
    const to = snap.edges[e * EF + eTo] / NF;
    if (!newIndex.has(to)) { newIndex.set(to, order.length); order.push(to); }
  }
}

const strings = [];
const stringIndex = new Map();
const str = (oldIndex) => {
  if (!stringIndex.has(oldIndex)) { stringIndex.set(oldIndex, strings.length); strings.push(snap.strings[oldIndex]); }
  return stringIndex.get(oldIndex);
};
str(0); // "<dummy>" stays first

const nodes = [];
const edges = [];
for (const old of order) {
  const kept = [];
  for (let e = firstEdge[old]; e < firstEdge[old + 1]; e++) {
    const to = snap.edges[e * EF + eTo] / NF;
    if (newIndex.has(to)) kept.push(e);
  }
  const record = snap.nodes.slice(old * NF, old * NF + NF);
  record[nName] = str(record[nName]);
  record[nEdges] = kept.length;
  nodes.push(record);
  for (const e of kept) {
    const rec = snap.edges.slice(e * EF, e * EF + EF);
    const kind = edgeTypes[rec[eType]];
    if (kind !== 'element' && kind !== 'hidden') rec[eName] = str(rec[eName]);
    rec[eTo] = newIndex.get(rec[eTo] / NF) * NF;
    edges.push(rec);
  }
}

// Odd names for a few string nodes: every escape, a surrogate pair, lone surrogates
// both ways round, raw UTF-8 (written unescaped below), and a long string.
const odd = [
  'quote " backslash \\ slash / \b\f\n\r\t control \u0001 end',
  'pair \ud83d\ude00 and U+F600 \uf600',
  'lone high \ud800 then text',
  'lone low \udc00 and high at end \udbff',
  'low then high \udc00\ud800',
  'caf\u00e9 \u4e2d\u6587',
  'x'.repeat(3000),
];
let replaced = 0;
for (const record of nodes) {
  if (replaced < odd.length && meta.node_types[0][record[nType]] === 'string') {
    record[nName] = strings.length;
    strings.push(odd[replaced++]);
  }
}
const RAW_UTF8 = strings.indexOf(odd[5]);

const escapeString = (s, raw) => {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x2f && i % 2 === 0) out += '\\/';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c < 0x20 || (c > 0x7e && !raw)) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += s[i];
  }
  return out + '"';
};

// Allocation-tracking sections, shortened but kept nested.
const cutTree = (tree, depth) => {
  const out = [];
  for (let i = 0; i + 4 < tree.length && out.length < 5 * 3; i += 5) {
    out.push(tree[i], tree[i + 1], tree[i + 2], tree[i + 3], depth > 0 ? cutTree(tree[i + 4], depth - 1) : []);
  }
  return out;
};
const traceFunctionInfos = snap.trace_function_infos.slice(0, 6 * 6);
const traceTree = cutTree(snap.trace_tree, 3);
const samples = snap.samples.slice(0, 2 * 4);
const locations = [];
const LF = meta.location_fields.length;
for (let i = 0; i + LF <= snap.locations.length && locations.length < 8 * LF; i += LF) {
  const node = snap.locations[i] / NF;
  if (newIndex.has(node)) {
    const rec = snap.locations.slice(i, i + LF);
    rec[0] = newIndex.get(node) * NF;
    locations.push(...rec);
  }
}
if (nTrace >= 0) for (const record of nodes) record[nTrace] = Math.min(record[nTrace], 3);

const header = Object.assign({}, snap.snapshot, {
  node_count: nodes.length,
  edge_count: edges.length,
  trace_function_count: traceFunctionInfos.length / 6,
});
const text =
  '{"snapshot":' + JSON.stringify(header) + ',\n' +
  '"nodes":[' + nodes.map((r) => r.join(',')).join('\n,') + '],\n' +
  '"edges":[' + edges.map((r) => r.join(',')).join('\n,') + '],\n' +
  '"trace_function_infos":[' + traceFunctionInfos.join(',') + '],\n' +
  '"trace_tree":' + JSON.stringify(traceTree) + ',\n' +
  '"samples":[' + samples.join(',') + '],\n' +
  '"locations":[' + locations.join(',') + '],\n' +
  '"strings":[' + strings.map((s, i) => escapeString(s, i === RAW_UTF8)).join(',\n') + ']}';
JSON.parse(text); // still JSON
const out = path.join(__dirname, 'v8-tiny.heapsnapshot.gz');
fs.writeFileSync(out, zlib.gzipSync(Buffer.from(text, 'utf8'), { level: 9 }));
console.log(`${out}: ${nodes.length} nodes, ${edges.length} edges, ${strings.length} strings, ${text.length} bytes raw`);
