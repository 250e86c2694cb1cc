// memlab's own three-snapshot leak detection (`memlab find-leaks --baseline --target --final`)
// on three heap snapshots, reporting the objects allocated between baseline and target that are
// still alive in final, as memlab summarises them ("Alive objects allocated in target page": count
// and retained size per node name and type, the top 20 by retained size), with raw numbers.
//
// Usage: node memlab_leaks.js -o OUT.json BASELINE TARGET FINAL   (.heapsnapshot or .gz)
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

const args = process.argv.slice(2);
const outAt = args.indexOf('-o');
const out = args[outAt + 1];
const files = args.filter((_, i) => i !== outAt && i !== outAt + 1);
if (!out || files.length !== 3) {
  console.error('usage: node memlab_leaks.js -o OUT.json BASELINE TARGET FINAL');
  process.exit(2);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memlab-leaks-'));
const plain = files.map((file, i) => {
  if (!file.endsWith('.gz')) return file;
  const to = path.join(work, `snapshot-${i}.heapsnapshot`);
  fs.writeFileSync(to, zlib.gunzipSync(fs.readFileSync(file)));
  return to;
});

const core = require('@memlab/core');
const api = require('@memlab/api');
// The summary table prints sizes for people; keep the numbers, and capture the table.
let table = null;
const utils = core.utils;
const readable = utils.getReadableBytes;
utils.getReadableBytes = (n) => n;
const consoleTable = core.info.table.bind(core.info);
core.info.table = (list) => {
  if (table === null) table = list.map((row) => ({ ...row }));
  return consoleTable(list);
};

(async () => {
  await api.findLeaksBySnapshotFilePaths(plain[0], plain[1], plain[2], {
    workDir: path.join(work, 'memlab'),
    consoleMode: 'SILENT',
  });
  utils.getReadableBytes = readable;
  if (table === null) throw new Error('memlab printed no summary of alive objects');
  fs.writeFileSync(out, JSON.stringify({ memlab: require('@memlab/core/package.json').version, kinds: table }));
  fs.rmSync(work, { recursive: true, force: true });
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
