#!/usr/bin/env node
// Checks fixtures/v8/expected.json against the snapshots and both oracles, so
// that regenerated fixtures are known to carry the planted shapes and the facts
// that tests rely on.
//
// Usage: node tests/oracle/check_fixture_facts.js [FIXTURE_DIR]
//   FIXTURE_DIR defaults to fixtures/v8. Runs memlab_oracle.js and
//   devtools_oracle.js (same folder; they find their packages as they always
//   do: --memlab/--devtools are not passed, so HEAPGRAPH_MEMLAB_DIR,
//   HEAPGRAPH_DEVTOOLS_DIR or tests/oracle/node_modules) on each snapshot.
// Prints one line per check and "N passed, M failed"; exits 1 on a failure.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { execFileSync } = require('child_process');

const dir = path.resolve(process.argv[2] || path.join(__dirname, '..', '..', 'fixtures', 'v8'));
const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'heapgraph-facts-'));
let passed = 0;
let failed = 0;
function check(label, ok, detail) {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}${!ok && detail !== undefined ? ': ' + detail : ''}`);
}

function runOracle(script, snap, out) {
  execFileSync(process.execPath, [path.join(__dirname, script), '-o', out, snap], { stdio: 'inherit' });
  return JSON.parse(fs.readFileSync(out, 'utf8'));
}

function loadGraph(file) {
  let buf = fs.readFileSync(file);
  if (file.endsWith('.gz')) buf = zlib.gunzipSync(buf);
  const s = JSON.parse(buf.toString('utf8'));
  const m = s.snapshot.meta;
  const NF = m.node_fields.length;
  const EF = m.edge_fields.length;
  const nt = m.node_types[0];
  const et = m.edge_types[0];
  const f = (name) => m.node_fields.indexOf(name);
  const [typeO, nameO, idO, selfO, ecO] = ['type', 'name', 'id', 'self_size', 'edge_count'].map(f);
  const eType = m.edge_fields.indexOf('type');
  const eName = m.edge_fields.indexOf('name_or_index');
  const eTo = m.edge_fields.indexOf('to_node');
  const N = s.nodes.length / NF;
  const first = new Uint32Array(N + 1);
  for (let i = 0, e = 0; i < N; i++) { first[i] = e; e += s.nodes[i * NF + ecO]; }
  first[N] = s.edges.length / EF;
  const g = {
    N,
    type: (i) => nt[s.nodes[i * NF + typeO]],
    name: (i) => s.strings[s.nodes[i * NF + nameO]],
    id: (i) => s.nodes[i * NF + idO],
    self: (i) => s.nodes[i * NF + selfO],
    edges(i) {
      const r = [];
      for (let e = first[i]; e < first[i + 1]; e++) {
        const t = et[s.edges[e * EF + eType]];
        const raw = s.edges[e * EF + eName];
        r.push({ type: t, name: t === 'element' || t === 'hidden' ? raw : s.strings[raw], to: s.edges[e * EF + eTo] / NF });
      }
      return r;
    },
  };
  g.prop = (i, p) => { const e = g.edges(i).find((x) => x.type === 'property' && x.name === p); return e ? e.to : -1; };
  g.objectsOf = (cls) => { const r = []; for (let i = 0; i < N; i++) if (g.type(i) === 'object' && g.name(i) === cls) r.push(i); return r; };
  return g;
}

const F = expected.facts;
const idsByClass = {}; // snapshot -> class -> Set of ids
try {
  for (const [base, info] of Object.entries(expected.snapshots)) {
    const snap = path.join(dir, info.file);
    const g = loadGraph(snap);
    check(`${base}: node_count`, g.N === info.node_count, `${g.N} != ${info.node_count}`);
    for (const [cls, n] of Object.entries(info.counts)) {
      const got = g.objectsOf(cls).length;
      check(`${base}: ${n} ${cls}`, got === n, `found ${got}`);
    }
    idsByClass[base] = {};
    for (const cls of Object.keys(info.counts)) idsByClass[base][cls] = new Set(g.objectsOf(cls).map(g.id));
    let closures = 0;
    for (let i = 0; i < g.N; i++) if (g.type(i) === 'closure' && g.name(i) === info.listener_closures.name) closures++;
    check(`${base}: ${info.listener_closures.count} ${info.listener_closures.name} closures`,
      closures === info.listener_closures.count, `found ${closures}`);

    const oracles = {
      memlab: runOracle('memlab_oracle.js', snap, path.join(tmp, base + '-memlab.json')),
      devtools: runOracle('devtools_oracle.js', snap, path.join(tmp, base + '-devtools.json')),
    };
    const global = g.edges(0).find((e) => e.type === 'shortcut').to;
    check(`${base}: root shortcut target is "global"`, g.name(global) === 'global', g.name(global));
    const dt = oracles.devtools;
    check(`${base}: devtools distance(global) = 1`, dt.distance[global] === F.global.devtools_distance, dt.distance[global]);
    for (const [oname, o] of Object.entries(oracles)) {
      check(`${base}: ${oname} ids in file order`, o.ids.every((id, i) => id === g.id(i)));
      const byId = new Map(o.ids.map((id, i) => [id, i]));
      const idom = (i) => byId.get(o.dominator[i]);
      check(`${base}: ${oname} root retained = total self size`,
        o.root_retained === o.self.reduce((a, b) => a + b, 0));
      for (const p of F.holders.properties) {
        const t = g.prop(global, p);
        check(`${base}: ${oname} idom(global.${p}) = global`, t >= 0 && idom(t) === global);
        if (oname === 'devtools') check(`${base}: devtools distance(global.${p}) = 2`, dt.distance[t] === 2, dt.distance[t]);
      }
      // chain
      const head = g.prop(global, 'chainHead');
      let c = head; let k = 0; let prev = -1; let domOk = true; let distOk = true; let selfSum = 0;
      while (c >= 0 && g.type(c) === 'object' && g.name(c) === F.chain.class) {
        if (prev >= 0 && idom(c) !== prev) domOk = false;
        if (oname === 'devtools' && dt.distance[c] !== dt.distance[head] + k) distOk = false;
        selfSum += g.self(c);
        prev = c; k++; c = g.prop(c, F.chain.follow);
      }
      check(`${base}: ${oname} chain has ${F.chain.length} links`, k === F.chain.length, k);
      check(`${base}: ${oname} idom(link k) = link k-1`, domOk);
      check(`${base}: ${oname} chain head retains all links`, o.retained[head] >= selfSum, `${o.retained[head]} < ${selfSum}`);
      if (oname === 'devtools') check(`${base}: devtools distance(link k) = distance(head) + k`, distOk);
      // ring
      const held = g.prop(global, 'ring');
      const ring = g.objectsOf(F.ring.class);
      check(`${base}: ${oname} idom(RingNode) = held RingNode`, ring.every((i) => i === held || idom(i) === held));
      // weakmap
      const keys = new Set(g.objectsOf(F.weakmap.key_class));
      const values = g.objectsOf(F.weakmap.value_class);
      if (oname === 'devtools') {
        check(`${base}: devtools idom(WeakValue) = its WeakKey`,
          values.every((v) => keys.has(idom(v)) && g.edges(idom(v)).some((e) => e.to === v)));
      } else {
        check(`${base}: memlab idom(WeakValue) = global`, values.every((v) => idom(v) === global));
      }
      // requests
      const reqs = g.objectsOf(F.requests.class);
      check(`${base}: ${oname} idom(request.body) = request`, reqs.every((r) => idom(g.prop(r, 'body')) === r));
      check(`${base}: ${oname} idom(request.headers) = request`, reqs.every((r) => idom(g.prop(r, 'headers')) === r));
      // listeners
      const payloads = g.objectsOf(F.listeners.class);
      check(`${base}: ${oname} idom(ListenerPayload) is a system / Context`,
        payloads.every((p) => g.name(idom(p)) === 'system / Context'));
    }
  }
  // Ids are stable across the snapshots of one process.
  const names = Object.keys(idsByClass);
  for (let k = 1; k < names.length; k++) {
    const a = idsByClass[names[k - 1]];
    const b = idsByClass[names[k]];
    for (const cls of Object.keys(a)) {
      const grew = a[cls].size <= b[cls].size;
      const [small, big] = grew ? [a[cls], b[cls]] : [b[cls], a[cls]];
      let kept = 0;
      for (const id of small) if (big.has(id)) kept++;
      check(`${names[k - 1]} -> ${names[k]}: ${cls} ids of the smaller set all in the larger`,
        kept === small.size, `${kept} of ${small.size}`);
    }
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
