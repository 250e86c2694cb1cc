#!/usr/bin/env node
// The acorn parser holding the syntax trees (with locations) of JavaScript files, and a V8 heap
// snapshot taken while it holds them: millions of small plain objects, strings and arrays.
//
// Usage: node acorn_heap.js NODE_MODULES OUT.heapsnapshot FILE.js...
const path = require("path");
const v8 = require("v8");
const fs = require("fs");

const [modules, out, ...files] = process.argv.slice(2);
if (!out || files.length === 0) {
  console.error("usage: node acorn_heap.js NODE_MODULES OUT.heapsnapshot FILE.js...");
  process.exit(2);
}
const acorn = require(path.join(modules, "acorn"));
const t0 = Date.now();
globalThis.heldTrees = files.map((file) =>
  acorn.parse(fs.readFileSync(file, "utf8"), {
    ecmaVersion: "latest",
    sourceType: "script",
    locations: true,
    sourceFile: file,
  }),
);
console.error(`parsed ${files.length} files in ${Date.now() - t0} ms`);
v8.writeHeapSnapshot(out);
console.error(`wrote ${out}, ${fs.statSync(out).size} bytes`);
