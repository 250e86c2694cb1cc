// heapgraph serve: the explorer page. Plain JavaScript, no dependencies; every view is a hash
// route (#/types, #/type/NAME, #/object/ID, #/tree/ID, ...), so back, forward and a pasted
// link work. All text from the dump goes in through textContent, never as HTML.
"use strict";

const API = "/api/v1/";
const PAGE = 100;
const main = document.getElementById("main");
const cache = new Map();

// ---- small helpers -------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(value >= 100 ? 0 : 1)} ${units[unit]}`;
}

function count(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

function percent(share) {
  return `${(share * 100).toFixed(share >= 0.1 ? 1 : 2)}%`;
}

async function get(path) {
  if (cache.has(path)) return cache.get(path);
  const response = await fetch(API + path, { credentials: "same-origin" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  if (cache.size > 200) cache.clear();
  cache.set(path, body);
  return body;
}

function objectHref(id) {
  return `#/object/${encodeURIComponent(id)}`;
}

function objectLink(object) {
  const label = object.name && object.name !== object.type ? `${object.type} ${object.name}` : object.type;
  return el("a", { href: objectHref(object.id), title: `id ${object.id}` }, label.length > 160 ? label.slice(0, 157) + "…" : label);
}

function show(...children) {
  main.replaceChildren(...children.flat(2).filter((child) => child !== null && child !== undefined && child !== false));
}

function failure(error) {
  return el("p", { class: "error", role: "alert" }, `Cannot show this: ${error.message}`);
}

// A table whose rows take the keyboard: arrows move, Enter follows the row's first link.
function table(columns, rows, options) {
  const opts = options || {};
  const head = el("tr", {}, columns.map((column, index) => {
    const th = el("th", { class: [column.num ? "num" : "", opts.sort && opts.sort.index === index ? "sorted" + (opts.sort.asc ? " asc" : "") : ""].join(" ").trim(), scope: "col" }, column.title);
    if (opts.onSort && column.key) th.addEventListener("click", () => opts.onSort(index));
    return th;
  }));
  const body = el("tbody", {}, rows.map((row) => el("tr", { tabindex: "0" }, columns.map((column) => {
    const value = column.cell(row);
    return el("td", { class: column.num ? "num" : "name" }, value);
  }))));
  body.addEventListener("keydown", rowKeys);
  return el("table", {}, el("thead", {}, head), body);
}

function rowKeys(event) {
  const row = event.target.closest("tr");
  if (!row) return;
  let next = null;
  if (event.key === "ArrowDown" || event.key === "j") next = row.nextElementSibling;
  else if (event.key === "ArrowUp" || event.key === "k") next = row.previousElementSibling;
  else if (event.key === "Home") next = row.parentElement.firstElementChild;
  else if (event.key === "End") next = row.parentElement.lastElementChild;
  else if (event.key === "Enter") {
    const link = row.querySelector("a");
    if (link) link.click();
    event.preventDefault();
    return;
  }
  if (next) {
    next.focus();
    event.preventDefault();
  }
}

function focusFirstRow() {
  const row = main.querySelector("tbody tr, .tree-row");
  if (row) row.focus({ preventScroll: true });
}

function pager(total, offset, limit, go) {
  const last = Math.min(offset + limit, total);
  return el("div", { class: "controls" },
    el("span", { class: "muted" }, `${count(total === 0 ? 0 : offset + 1)}–${count(last)} of ${count(total)}`),
    offset > 0 ? el("button", { onclick: () => go(Math.max(0, offset - limit)) }, "previous") : null,
    last < total ? el("button", { onclick: () => go(offset + limit) }, `next ${Math.min(limit, total - last)}`) : null);
}

// ---- views ---------------------------------------------------------------------------------

async function overview() {
  const summary = await get("summary");
  const cards = [
    ["Objects", count(summary.objects)],
    ["Heap (reachable)", bytes(summary.heap_size)],
    ["Reachable objects", count(summary.reachable_objects)],
    ["Unreachable", `${count(summary.unreachable_objects)} (${bytes(summary.unreachable_size)})`],
    ["References", count(summary.references)],
    ["Format", `${summary.dump.format} · ${summary.dump.runtime}`],
  ];
  show(
    el("h1", {}, "Overview"),
    el("div", { class: "cards" }, cards.map(([label, value]) => el("div", { class: "card" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label)))),
    el("h2", {}, "Findings"),
    summary.findings.length ? summary.findings.map(finding) : el("p", { class: "muted" }, "No finding: nothing holds an unusual share of the heap."),
    el("h2", {}, "Types that hold the most"),
    typeTable(summary.types, null, summary.heap_size),
    el("p", {}, el("a", { href: "#/types" }, "All types…")),
    summary.dump.notes.length ? [el("h2", {}, "Notes"), el("ul", {}, summary.dump.notes.map((note) => el("li", {}, note)))] : null,
  );
}

function finding(entry) {
  const path = entry.holder && entry.holder.path;
  return el("div", { class: "finding" },
    el("div", { class: "headline" }, (entry.summary || entry.kind).replace(/`/g, "")),
    path && path.length ? el("div", { class: "muted" }, path.map((step) => (step.edge ? `.${step.edge} → ` : "") + step.type).join(" ")) : null);
}

function typeTable(types, sort, heap, onSort) {
  const columns = [
    { title: "Type", key: "type", cell: (row) => el("a", { href: `#/type/${encodeURIComponent(row.type)}` }, row.type) },
    { title: "Objects", key: "count", num: true, cell: (row) => count(row.count) },
    { title: "Shallow", key: "shallow_size", num: true, cell: (row) => bytes(row.shallow_size) },
    { title: "Retained", key: "retained_size", num: true, cell: (row) => bytes(row.retained_size) },
    { title: "Share", key: "retained_size", num: true, cell: (row) => (heap ? percent(row.retained_size / heap) : "") },
  ];
  return table(columns, types, { sort, onSort: onSort && ((index) => onSort(columns[index].key, index)) });
}

function groupOf(name) {
  const cut = Math.max(name.lastIndexOf("."), name.lastIndexOf("::"), name.lastIndexOf("/"));
  return cut > 0 ? name.slice(0, cut) : "(no package)";
}

async function types(params) {
  const data = await get("types");
  const filter = params.get("q") || "";
  const key = params.get("sort") || "retained_size";
  const asc = params.get("dir") === "asc";
  const grouped = params.get("group") === "package";
  const setParams = (changes) => {
    const next = new URLSearchParams(params);
    for (const [name, value] of Object.entries(changes)) {
      if (value === null || value === "") next.delete(name);
      else next.set(name, value);
    }
    const query = next.toString();
    history.replaceState(null, "", `#/types${query ? "?" + query : ""}`);
    render(next);
  };
  const input = el("input", { type: "search", placeholder: "Filter types (as you type)", value: filter, "aria-label": "Filter types" });
  input.addEventListener("input", () => setParams({ q: input.value }));
  const groupBox = el("input", { type: "checkbox", id: "group", checked: grouped });
  groupBox.addEventListener("change", () => setParams({ group: groupBox.checked ? "package" : null }));
  const list = el("div");
  show(el("h1", {}, "Types"), el("div", { class: "controls" }, input, el("label", { for: "group" }, groupBox, " group by package or module")), list);
  function render(current) {
    const needle = (current.get("q") || "").toLowerCase();
    const sortKey = current.get("sort") || "retained_size";
    const ascending = current.get("dir") === "asc";
    let rows = data.types.filter((row) => row.type.toLowerCase().includes(needle));
    if (current.get("group") === "package") {
      const groups = new Map();
      for (const row of rows) {
        const name = groupOf(row.type);
        const group = groups.get(name) || { type: name, count: 0, shallow_size: 0, retained_size: 0, group: true };
        group.count += row.count;
        group.shallow_size += row.shallow_size;
        group.retained_size += row.retained_size;
        groups.set(name, group);
      }
      rows = [...groups.values()];
    }
    rows.sort((a, b) => {
      const x = a[sortKey];
      const y = b[sortKey];
      const order = typeof x === "string" ? x.localeCompare(y) : x - y;
      return ascending ? order : -order;
    });
    const shown = rows.slice(0, 2000);
    const columns = ["type", "count", "shallow_size", "retained_size", "retained_size"];
    const index = columns.indexOf(sortKey);
    const onSort = (column) => setParams({ sort: column, dir: column === sortKey && !ascending ? "asc" : null });
    const tableNode = current.get("group") === "package"
      ? table([
        { title: "Package or module", key: "type", cell: (row) => el("a", { href: `#/types?q=${encodeURIComponent(row.type)}` }, row.type) },
        { title: "Objects", key: "count", num: true, cell: (row) => count(row.count) },
        { title: "Shallow", key: "shallow_size", num: true, cell: (row) => bytes(row.shallow_size) },
        { title: "Retained (sum of types)", key: "retained_size", num: true, cell: (row) => bytes(row.retained_size) },
      ], shown, { sort: { index, asc: ascending }, onSort: (i) => onSort(["type", "count", "shallow_size", "retained_size"][i]) })
      : typeTable(shown, { index, asc: ascending }, data.heap_size, (column) => onSort(column));
    list.replaceChildren(
      el("p", { class: "muted" }, `${count(rows.length)} of ${count(data.types.length)} ${current.get("group") === "package" ? "groups" : "types"}${rows.length > shown.length ? ` (first ${count(shown.length)} shown)` : ""}`),
      tableNode);
  }
  render(params);
  void key;
  void asc;
  input.focus();
}

async function instances(name, params) {
  const offset = Number(params.get("offset") || 0);
  const data = await get(`instances?type=${encodeURIComponent(name)}&offset=${offset}&limit=${PAGE}`);
  const go = (next) => { location.hash = `#/type/${encodeURIComponent(name)}${next ? "?offset=" + next : ""}`; };
  show(
    el("h1", {}, `Instances of ${name}`),
    el("p", { class: "muted" }, "Largest retained size first."),
    pager(data.total, data.offset, PAGE, go),
    objectTable(data.objects),
    pager(data.total, data.offset, PAGE, go));
}

function objectTable(objects) {
  return table([
    { title: "Object", cell: (o) => objectLink(o) },
    { title: "Id", num: true, cell: (o) => String(o.id) },
    { title: "Shallow", num: true, cell: (o) => bytes(o.shallow_size) },
    { title: "Retained", num: true, cell: (o) => bytes(o.retained_size) },
    { title: "Holds", num: true, cell: (o) => count(o.retained_count) },
    { title: "Distance", num: true, cell: (o) => (o.distance === null ? "unreachable" : String(o.distance)) },
  ], objects);
}

function referenceTable(references, outgoing) {
  return table([
    { title: outgoing ? "Field" : "Held as", cell: (r) => el("span", { class: "edge" }, `${r.edge} (${r.edge_kind})`) },
    { title: outgoing ? "Value" : "Holder", cell: (r) => objectLink(r.object) },
    { title: "Shallow", num: true, cell: (r) => bytes(r.object.shallow_size) },
    { title: "Retained", num: true, cell: (r) => bytes(r.object.retained_size) },
  ], references);
}

async function object(id, params) {
  const out = Number(params.get("out") || 0);
  const into = Number(params.get("in") || 0);
  const [fields, referrers, holders] = await Promise.all([
    get(`object/${encodeURIComponent(id)}?offset=${out}&limit=${PAGE}`),
    get(`referrers/${encodeURIComponent(id)}?offset=${into}&limit=${PAGE}`),
    get(`holders/${encodeURIComponent(id)}`),
  ]);
  const self = fields.object;
  const go = (key, value) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value); else next.delete(key);
    const query = next.toString();
    location.hash = `${objectHref(id)}${query ? "?" + query : ""}`;
  };
  const cards = [
    ["Type", self.type], ["Kind", self.kind], ["Id", String(self.id)],
    ["Shallow", bytes(self.shallow_size)], ["Retained", bytes(self.retained_size)],
    ["Objects held", count(self.retained_count)],
    ["Distance from the roots", self.distance === null ? "unreachable" : String(self.distance)],
  ];
  show(
    el("h1", {}, `${self.type}${self.name && self.name !== self.type ? " " + self.name : ""}`),
    el("div", { class: "cards" }, cards.map(([label, value]) => el("div", { class: "card" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label)))),
    el("p", {}, el("a", { href: `#/tree/${encodeURIComponent(self.id)}` }, "Its dominator subtree"), " · ", el("a", { href: `#/type/${encodeURIComponent(self.type)}` }, `All instances of ${self.type}`)),
    el("h2", { id: "chains" }, "Chains from the roots"),
    holders.paths.length ? holders.paths.map((path, index) => chain(path, holders.path_counts[index])) : el("p", { class: "muted" }, "No chain: the object is unreachable."),
    el("h2", { id: "merged" }, `Merged paths of every ${self.type}`),
    mergedPaths(self.type),
    el("h2", {}, "Dominator chain"),
    el("p", { class: "muted" }, "Releasing any of these frees the object."),
    holders.dominator_chain.length ? el("div", { class: "chain" }, el("ol", {}, holders.dominator_chain.map((o) => el("li", {}, objectLink(o), el("span", { class: "muted" }, ` retains ${bytes(o.retained_size)}`))))) : el("p", { class: "muted" }, "None: the object is unreachable."),
    el("h2", {}, `Fields (${count(fields.total)} references out)`),
    pager(fields.total, fields.offset, PAGE, (next) => go("out", next)),
    referenceTable(fields.references, true),
    el("h2", {}, `Referrers (${count(referrers.total)} references in)`),
    pager(referrers.total, referrers.offset, PAGE, (next) => go("in", next)),
    referenceTable(referrers.references, false));
}

function chain(path, merged) {
  return el("div", { class: "chain" },
    merged > 1 ? el("div", { class: "muted" }, `${count(merged)} chains print like this one`) : null,
    el("ol", {}, path.map((step) => el("li", {},
      step.edge ? el("span", { class: "edge" }, `.${step.edge} → `) : null,
      el("a", { href: objectHref(step.id) }, step.name && step.name !== step.type ? `${step.type} ${step.name}` : step.type)))));
}

// The merged tree of shortest chains to every instance of a type (heapgraph.paths/1): filled
// in when it arrives, so that the rest of the object's page does not wait for its search.
function mergedPaths(type) {
  const box = el("div", { class: "merged" }, el("p", { class: "muted loading" }, "Searching the chains…"));
  get(`paths?type=${encodeURIComponent(type)}`).then((data) => {
    const lines = data.nodes.map((node) => el("div", { class: "merged-row" + (node.is_target ? " target" : "") },
      el("span", { class: "indent" }),
      node.skipped_steps ? el("span", { class: "muted" }, `… ${count(node.skipped_steps)} steps … `) : null,
      node.edge ? el("span", { class: "edge" }, `.${node.edge} → `) : null,
      objectLink(node),
      el("span", { class: "muted" }, ` · ${count(node.targets)} of them, ${bytes(node.targets_retained_size)}`),
      node.hidden_children ? el("span", { class: "muted" }, ` · ${count(node.hidden_children)} more branches (${count(node.hidden_targets)} of them)`) : null));
    data.nodes.forEach((node, index) => { lines[index].firstChild.style.width = `${node.indent * 1.2}em`; });
    box.replaceChildren(
      el("p", { class: "muted" }, `${count(data.reached)} of ${count(data.targets)} reached from the roots, retaining ${bytes(data.retained_size)} together.`),
      ...lines);
  }).catch((error) => box.replaceChildren(failure(error)));
  return box;
}

async function strings() {
  const data = await get(`strings?duplicates=1&limit=${PAGE}`);
  show(
    el("h1", {}, "Duplicate strings"),
    el("div", { class: "cards" }, [
      ["Strings", count(data.strings)], ["Their bytes", bytes(data.total_bytes)],
      ["Distinct values", count(data.distinct_values)], ["Values held more than once", count(data.duplicated_values)],
      ["Bytes in the extra copies", bytes(data.wasted_bytes)],
    ].map(([label, value]) => el("div", { class: "card" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label)))),
    data.values.length ? table([
      { title: "Value", cell: (r) => el("span", { class: "edge" }, r.value.length > 200 ? r.value.slice(0, 197) + "…" : r.value) },
      { title: "Copies", num: true, cell: (r) => count(r.count) },
      { title: "Bytes", num: true, cell: (r) => bytes(r.total_bytes) },
      { title: "In extra copies", num: true, cell: (r) => bytes(r.wasted_bytes) },
    ], data.values) : el("p", { class: "muted" }, "No string value is held more than once."));
}

// The dominator tree: each node's children fetched when it opens, a page at a time.
async function tree(id) {
  const rootId = id || "root";
  const first = await get(`children/${encodeURIComponent(rootId)}?offset=0&limit=${PAGE}`);
  const container = el("div", { role: "tree", class: "tree" });
  container.addEventListener("keydown", treeKeys);
  show(
    el("h1", {}, id ? `Dominator subtree of ${first.parent.type}` : "Dominator tree"),
    el("p", { class: "muted" }, "What keeps what alive: each object's children are the objects only it keeps. Shares are of everything the root retains. Arrows move, → opens, ← closes, Enter opens the object."),
    container);
  const top = treeNode({ ...first.parent, share: first.total_retained ? (first.parent.retained_size || 0) / first.total_retained : 0, hidden_children: first.total, depth: first.depth }, 0);
  container.append(top.element);
  await top.expand(first);
}

function treeNode(node, level) {
  const toggle = el("span", { class: "toggle", "aria-hidden": "true" }, node.hidden_children > 0 ? "▸" : "·");
  const fill = el("span", { class: "fill" });
  fill.style.width = `${Math.min(100, node.share * 100)}%`;
  const row = el("div", { class: "tree-row", tabindex: "0", role: "treeitem", "aria-expanded": node.hidden_children > 0 ? "false" : null, "data-id": String(node.id) },
    el("span", { class: "indent" }),
    toggle,
    el("span", { class: "label" }, objectLink(node), node.hidden_children > 0 ? el("span", { class: "muted" }, ` · ${count(node.hidden_children)} ${node.hidden_children === 1 ? "child" : "children"}`) : null),
    el("span", { class: "share" }, fill, el("span", {}, percent(node.share))),
    el("span", { class: "size" }, bytes(node.retained_size)));
  row.firstChild.style.width = `${level * 1.4}em`;
  row.firstChild.style.flex = "none";
  const kids = el("div", { role: "group" });
  const element = el("div", {}, row, kids);
  let open = false;
  let loaded = 0;
  async function more(page) {
    const data = page || await get(`children/${encodeURIComponent(node.id)}?offset=${loaded}&limit=${PAGE}`);
    const old = kids.querySelector(":scope > .more");
    if (old) old.remove();
    for (const child of data.children) kids.append(treeNode(child, level + 1).element);
    loaded += data.children.length;
    if (loaded < data.total) {
      kids.append(el("button", { class: "more", onclick: () => more() }, `show ${Math.min(PAGE, data.total - loaded)} more (${count(data.total - loaded)} left)`));
    }
  }
  async function expand(page) {
    if (node.hidden_children === 0 || open) return;
    open = true;
    row.setAttribute("aria-expanded", "true");
    toggle.textContent = "▾";
    kids.hidden = false;
    if (loaded === 0) await more(page);
  }
  function collapse() {
    if (!open) return;
    open = false;
    row.setAttribute("aria-expanded", "false");
    toggle.textContent = "▸";
    kids.hidden = true;
  }
  toggle.addEventListener("click", () => (open ? collapse() : expand()));
  row.treeNode = { expand, collapse, isOpen: () => open };
  return { element, expand };
}

function treeKeys(event) {
  const row = event.target.closest(".tree-row");
  if (!row) return;
  const rows = [...main.querySelectorAll(".tree-row")].filter((r) => r.offsetParent !== null);
  const at = rows.indexOf(row);
  if (event.key === "ArrowDown" || event.key === "j") rows[Math.min(at + 1, rows.length - 1)].focus();
  else if (event.key === "ArrowUp" || event.key === "k") rows[Math.max(at - 1, 0)].focus();
  else if (event.key === "ArrowRight") row.treeNode.expand();
  else if (event.key === "ArrowLeft") row.treeNode.collapse();
  else if (event.key === "Enter") row.querySelector("a").click();
  else return;
  event.preventDefault();
}

async function suspects() {
  const data = await get("findings");
  show(
    el("h1", {}, "Leak suspects"),
    data.findings.map(finding),
    data.suspects.length ? table([
      { title: "Suspect", cell: (s) => (s.object ? objectLink(s.object) : s.type) },
      { title: "Rule", cell: (s) => s.rule },
      { title: "Objects", num: true, cell: (s) => count(s.count) },
      { title: "Retained", num: true, cell: (s) => bytes(s.retained_size) },
      { title: "Share", num: true, cell: (s) => percent(s.share) },
      { title: "Accumulates in", cell: (s) => (s.accumulation_point ? objectLink(s.accumulation_point) : "") },
    ], data.suspects) : el("p", { class: "muted" }, `No object or type retains ${percent(data.threshold)} of the heap or more.`));
}

async function diff() {
  const data = await get("diff");
  const rows = data.types || [];
  show(
    el("h1", {}, "Comparison with the baseline"),
    (data.findings || []).map(finding),
    el("h2", {}, "Types that changed"),
    table([
      { title: "Type", cell: (r) => el("a", { href: `#/type/${encodeURIComponent(r.type)}` }, r.type) },
      { title: "Objects ±", num: true, cell: (r) => signed(r.count_delta) },
      { title: "Shallow ±", num: true, cell: (r) => signedBytes(r.shallow_delta) },
      { title: "Retained ±", num: true, cell: (r) => signedBytes(r.retained_delta) },
    ], rows.slice(0, 500)),
    el("h2", {}, "Holders that changed"),
    table([
      { title: "Holder (path from the root)", cell: (r) => r.signature },
      { title: "Status", cell: (r) => r.status },
      { title: "Objects", num: true, cell: (r) => `${count(r.count_before)} → ${count(r.count_after)}` },
      { title: "Retained ±", num: true, cell: (r) => signedBytes(r.retained_delta) },
    ], (data.holders || []).slice(0, 200)));
}

function signed(n) {
  return n === undefined || n === null ? "–" : `${n > 0 ? "+" : ""}${count(n)}`;
}

function signedBytes(n) {
  return n === undefined || n === null ? "–" : `${n > 0 ? "+" : n < 0 ? "−" : ""}${bytes(Math.abs(n))}`;
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const link of document.querySelectorAll("nav a")) {
    const target = link.getAttribute("href").slice(1);
    link.classList.toggle("current", target === "/" ? parts.length === 0 : path.startsWith(target));
  }
  try {
    if (parts.length === 0) await overview();
    else if (parts[0] === "types") await types(params);
    else if (parts[0] === "type" && parts[1] !== undefined) await instances(parts.slice(1).join("/"), params);
    else if (parts[0] === "object" && parts[1]) await object(parts[1], params);
    else if (parts[0] === "tree") await tree(parts[1]);
    else if (parts[0] === "suspects") await suspects();
    else if (parts[0] === "diff") await diff();
    else if (parts[0] === "strings") await strings();
    else show(el("p", { class: "error" }, `No view is called ${hash}.`));
    document.title = `heapgraph · ${main.querySelector("h1") ? main.querySelector("h1").textContent : ""}`;
    if (parts[0] !== "types") focusFirstRow();
  } catch (error) {
    show(failure(error));
  }
}

async function start() {
  window.addEventListener("hashchange", route);
  try {
    const summary = await get("summary");
    document.getElementById("file").textContent = summary.dump.file;
    const baseline = document.querySelector('meta[name="heapgraph-baseline"]');
    document.getElementById("nav-diff").hidden = !(baseline && baseline.content === "yes");
  } catch (error) {
    show(failure(error));
    return;
  }
  await route();
}

start();
