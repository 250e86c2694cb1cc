#!/usr/bin/env node
// The TypeScript compiler (5.9, the last release written in JavaScript) type-checking a program,
// and a V8 heap snapshot taken while it still holds the program: source files, syntax trees,
// symbols, types and the checker's caches.
//
// Usage: node tsc_heap.js NODE_MODULES OUT.heapsnapshot dts|js
//   dts: the compiler's own declarations (typescript.d.ts) and @types/node, with lib.esnext.full
//   js:  the same and the compiler's JavaScript (lib/_tsc.js, 6 MB) and acorn's, type-checked
//        (checkJs), the larger heap
// NODE_MODULES is where `npm ci` of this folder's package.json installed typescript, acorn and
// @types/node (gen_apps.sh does it).
const path = require("path");
const v8 = require("v8");
const fs = require("fs");

const [modules, out, mode] = process.argv.slice(2);
if (!out || !["dts", "js"].includes(mode)) {
  console.error("usage: node tsc_heap.js NODE_MODULES OUT.heapsnapshot dts|js");
  process.exit(2);
}
const ts = require(path.join(modules, "typescript"));
const lib = path.join(modules, "typescript", "lib");
const nodeTypes = path.join(modules, "@types", "node");
const roots = [
  path.join(lib, "typescript.d.ts"),
  ...fs.readdirSync(nodeTypes).filter((f) => f.endsWith(".d.ts")).sort().map((f) => path.join(nodeTypes, f)),
];
if (mode === "js") roots.push(path.join(lib, "_tsc.js"), path.join(modules, "acorn", "dist", "acorn.js"));

const t0 = Date.now();
const program = ts.createProgram(roots, {
  noEmit: true,
  strict: true,
  allowJs: true,
  checkJs: mode === "js",
  lib: ["lib.esnext.full.d.ts"],
  types: [],
  target: ts.ScriptTarget.ESNext,
  module: ts.ModuleKind.CommonJS,
});
const diagnostics = ts.getPreEmitDiagnostics(program);
const checker = program.getTypeChecker();
console.error(
  `${program.getSourceFiles().length} files, ${diagnostics.length} diagnostics, ` +
    `${checker.getTypeCount()} types, ${Date.now() - t0} ms`,
);
globalThis.heldProgram = program;
v8.writeHeapSnapshot(out);
console.error(`wrote ${out}, ${fs.statSync(out).size} bytes`);
