// pykubectl dashboard: draws what the server's event stream says (a snapshot, then
// deltas); every read goes to this origin, nothing polls. No framework, no build step.
"use strict";
const state = { nodes: new Map(), pods: new Map(), events: [], ns: "", open: "" };
// pod key -> ms since the epoch its card was first drawn, anywhere / in its node's column
// (bench/dashboard_bench.py reads them)
window.dashboardSeen = {};
window.dashboardPlaced = {};
const $ = (id) => document.getElementById(id);
const byName = (a, b) => a.localeCompare(b, undefined, { numeric: true });  // web-2 < web-10

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function cpuText(m) { return m % 1000 === 0 ? String(m / 1000) : m + "m"; }
function memText(b) {
  const u = [["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];
  for (const [s, v] of u) if (b >= v) return (Math.round(b / v * 10) / 10) + s;
  return String(b);
}
function bar(label, used, total, fmt) {
  const b = el("div", "bar");
  const pct = total > 0 ? Math.min(100, used * 100 / total) : (used > 0 ? 100 : 0);
  b.append(el("div", "", `${label} ${fmt(used)} / ${fmt(total)} (${Math.round(pct)}%)`));
  const t = el("div", "track"), f = el("div", "fill" + (pct >= 100 ? " full" : pct >= 80 ? " high" : ""));
  f.style.width = pct + "%";
  t.append(f); b.append(t);
  return b;
}

function card(p) {
  const c = el("div", "pod " + p.phase);
  c.dataset.pod = p.key;
  c.title = `${p.key}: ${p.status}`;
  c.append(el("div", "name", p.name));
  const m = el("div", "meta");
  m.append(el("span", "", `${p.namespace} · ${p.status}`));
  m.append(el("span", "restarts" + (p.restarts ? " some" : ""), `↻${p.restarts}`));
  c.append(m);
  c.addEventListener("click", () => openPod(p.key));
  return c;
}

function column(n) {
  const col = el("section", "col" + (n ? (n.ready === "True" ? "" : n.ready === "False" ? " notready" : " unknown") : " pending"));
  col.dataset.node = n ? n.name : "";
  col.append(el("h2", "", n ? n.name : "Pending (not scheduled)"));
  if (n) {
    const b = el("div", "badges");
    b.append(el("span", "badge " + (n.ready === "True" ? "ready" : "notready"), n.ready === "True" ? "Ready" : "NotReady"));
    for (const r of n.roles) b.append(el("span", "badge", r));
    if (n.unschedulable) b.append(el("span", "badge notready", "cordoned"));
    for (const t of n.taints) b.append(el("span", "badge taint", t));
    col.append(b);
    col.append(bar("CPU", n.cpu.requested, n.cpu.allocatable, cpuText));
    col.append(bar("Memory", n.memory.requested, n.memory.allocatable, memText));
    col.append(bar("Pods", n.pods.requested, n.pods.allocatable, String));
  }
  col.append(el("div", "cards"));
  return col;
}

function render() {
  const board = $("board");
  const cols = new Map();
  const pending = column(null);
  cols.set("", pending);
  const frag = document.createDocumentFragment();
  frag.append(pending);
  for (const name of [...state.nodes.keys()].sort(byName)) {
    const c = column(state.nodes.get(name));
    cols.set(name, c);
    frag.append(c);
  }
  const now = Date.now();
  for (const key of [...state.pods.keys()].sort(byName)) {
    const p = state.pods.get(key);
    if (state.ns && p.namespace !== state.ns) continue;
    const col = cols.get(p.node) || pending;  // bound to a node we do not see yet: apart
    col.querySelector(".cards").append(card(p));
    if (!(key in window.dashboardSeen)) window.dashboardSeen[key] = now;
    if (p.node && cols.has(p.node) && !(key in window.dashboardPlaced))
      window.dashboardPlaced[key] = now;
  }
  for (const c of cols.values())
    if (!c.querySelector(".pod")) c.querySelector(".cards").append(el("div", "empty", "no pods"));
  board.replaceChildren(frag);
  renderTimeline();
  renderNamespaces();
}

let scheduled = false;
function redraw() {  // one redraw per frame, however many deltas arrived
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => { scheduled = false; render(); });
}

function renderTimeline() {
  const strip = $("timeline");
  const items = state.events.filter((e) => !state.ns || e.object.namespace === state.ns).slice(-40);
  strip.replaceChildren(...items.map((e) => {
    const d = el("span", "ev " + e.type);
    d.title = e.message;
    d.append(el("span", "t", (e.time || "").slice(11, 19)));
    d.append(el("b", "", e.reason));
    d.append(document.createTextNode(`${e.object.kind.toLowerCase()}/${e.object.name}`));
    return d;
  }));
  strip.scrollLeft = strip.scrollWidth;
}

function renderNamespaces() {
  const sel = $("ns");
  const names = [...new Set([...state.pods.values()].map((p) => p.namespace))].sort();
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (names.join() === have.join()) return;
  sel.replaceChildren(new Option("all namespaces", ""), ...names.map((n) => new Option(n, n)));
  sel.value = names.includes(state.ns) ? state.ns : "";
}

function snapshot(s) {
  state.nodes = new Map(s.nodes.map((n) => [n.name, n]));
  state.pods = new Map(s.pods.map((p) => [p.key, p]));
  state.events = s.events;
  render();  // at once: the first view
}
function delta(d) {
  for (const n of d.nodes) state.nodes.set(n.name, n);
  for (const n of d.deletedNodes) state.nodes.delete(n);
  for (const p of d.pods) state.pods.set(p.key, p);
  for (const k of d.deletedPods) state.pods.delete(k);
  state.events = state.events.concat(d.events).slice(-60);
  redraw();
  if (state.open && d.pods.some((p) => p.key === state.open)) openPod(state.open, true);
}

let troubles = [];
function live() {
  $("conn").textContent = troubles.length ? "API unreachable" : "live";
  $("conn").title = troubles.join("\n");
  $("conn").className = "conn " + (troubles.length ? "off" : "on");
}
function connect() {
  const es = new EventSource("/dashboard/v1/stream");
  es.addEventListener("open", live);
  es.addEventListener("trouble", (m) => { troubles = JSON.parse(m.data).troubles; live(); });
  es.addEventListener("error", () => { $("conn").textContent = "reconnecting"; $("conn").className = "conn off"; });
  es.addEventListener("snapshot", (m) => snapshot(JSON.parse(m.data)));
  es.addEventListener("delta", (m) => delta(JSON.parse(m.data)));
}

// ---------------------------------------------------------------- a pod's detail
async function getJSON(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.message || `${r.status}`);
  return body;
}

function decisionTable(t) {
  const box = $("decision");
  if (!t.recorded) {
    const c = t.condition || {};
    box.replaceChildren(el("p", "", t.podNode
      ? `On ${t.podNode}; the scheduler keeps no decision for it.`
      : `No decision recorded yet.${c.message ? " " + c.message : ""}`));
    return;
  }
  const head = el("p", "", t.node ? `Scheduled to ${t.node}.` : `Pending: no node fits. ${t.message || ""}`);
  if (t.nominatedNode) head.textContent += ` Nominated: ${t.nominatedNode}.`;
  if (t.evaluated != null) head.textContent += ` ${t.evaluated} nodes evaluated, ${t.feasible} passed the filters.`;
  // plugins down, nodes across (the board's order is the decision's: chosen first)
  const table = el("table", "decision");
  const hr = el("tr");
  hr.append(el("th", "", "Plugin"));
  for (const r of t.rows) {
    const th = el("th", r.winner ? "winner" : "", r.node + (r.winner ? " ★" : ""));
    th.dataset.node = r.node;
    hr.append(th);
  }
  const thead = el("thead"); thead.append(hr); table.append(thead);
  const tb = el("tbody");
  const row = (cls, label, cell) => {
    const tr = el("tr", cls);
    tr.append(el("th", "", label));
    for (const r of t.rows) {
      const td = cell(r);
      td.dataset.node = r.node;
      if (r.winner) td.classList.add("winner");
      tr.append(td);
    }
    tb.append(tr);
  };
  row("filter", "Filter", (r) => {
    const td = el("td", r.verdict === "rejected" ? "reject" : r.verdict === "passed" ? "pass" : "");
    td.append(el("div", "verdict", r.verdict === "rejected" ? "✗ rejected" : r.verdict === "passed" ? "✓ passed" : r.verdict));
    if (r.plugin || r.reason) td.append(el("div", "why", r.plugin ? `${r.plugin}: ${r.reason}` : r.reason));
    return td;
  });
  for (const p of t.plugins)
    row("score", p, (r) => el("td", "num", p in r.scores ? String(r.scores[p]) : ""));
  if (t.plugins.length) row("total", "Total (weighted)", (r) => el("td", "num", r.total == null ? "" : String(r.total)));
  table.append(tb);
  box.replaceChildren(head, table);
}

async function openPod(key, refresh) {
  const p = state.pods.get(key);
  if (!p) return;
  state.open = key;
  const [ns, name] = key.split("/");
  $("detail").hidden = false;
  $("detail-title").textContent = key;
  $("detail-summary").textContent = `${p.status} · ${p.node ? "on " + p.node : "not scheduled"} · restarts ${p.restarts} · requests ${cpuText(p.cpu)} CPU, ${memText(p.memory)}`;
  if (!refresh) { $("decision").textContent = "loading"; $("pod-events").replaceChildren(); $("logs").textContent = ""; }
  const base = `/api/v1/namespaces/${encodeURIComponent(ns)}`;
  getJSON(`/dashboard/v1/decision/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`)
    .then(decisionTable, (e) => { $("decision").textContent = e.message; });
  getJSON(`${base}/events?fieldSelector=${encodeURIComponent("involvedObject.name=" + name)}`)
    .then((l) => {
      // by time, then by resourceVersion (events of one second in the order they were written)
      const when = (e) => String(e.lastTimestamp || e.eventTime || "");
      const rv = (e) => Number(e.metadata.resourceVersion) || 0;
      const items = (l.items || []).sort((a, b) => when(a).localeCompare(when(b)) || rv(a) - rv(b));
      $("pod-events").replaceChildren(...(items.length ? items.map((e) =>
        el("li", e.type, `${(e.lastTimestamp || e.eventTime || "").slice(11, 19)} ${e.reason}: ${e.message}${e.count > 1 ? ` (×${e.count})` : ""}`))
        : [el("li", "", "no events")]));
    }, (e) => { $("pod-events").replaceChildren(el("li", "", e.message)); });
  if (!p.node) { $("logs").textContent = "(not running: no logs)"; return; }
  fetch(`${base}/pods/${encodeURIComponent(name)}/log?tailLines=30`)
    .then(async (r) => {
      const text = await r.text();
      if (r.ok) return text || "(no output yet)";
      try { return JSON.parse(text).message; } catch (_) { return text; }
    }, (e) => e.message)
    .then((t) => { $("logs").textContent = t; });
}

document.addEventListener("DOMContentLoaded", () => {
  $("ns").addEventListener("change", (e) => { state.ns = e.target.value; render(); });
  $("close").addEventListener("click", () => { $("detail").hidden = true; state.open = ""; });
  connect();
});
