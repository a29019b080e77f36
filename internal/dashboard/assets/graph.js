// The job graph as SVG: vertices as boxes in columns by their distance
// from the sources, edges as arrows. Without GET /jobs/{id}/plan the
// edges join consecutive vertices (weir's vertex list is in topological
// order); with it, the plan's inputs and ship strategies.

import { h, s } from "./dom.js";
import * as f from "./format.js";

const W = 220, H = 96, GX = 70, GY = 24, PAD = 12;

function edgesOf(rows, plan) {
  const ids = new Set(rows.map((r) => String(r.v.id)));
  const nodes = plan && plan.plan && Array.isArray(plan.plan.nodes) ? plan.plan.nodes : null;
  // A plan whose nodes have no inputs knows no edges (a server's Job
  // without them): fall back to the vertex order.
  if (nodes && nodes.every((n) => ids.has(String(n.id))) && nodes.some((n) => (n.inputs || []).length > 0)) {
    const out = [];
    for (const n of nodes) {
      for (const i of n.inputs || []) {
        if (ids.has(String(i.id))) out.push({ from: String(i.id), to: String(n.id), label: i.ship_strategy || "" });
      }
    }
    return out;
  }
  const out = [];
  for (let i = 1; i < rows.length; i++) out.push({ from: String(rows[i - 1].v.id), to: String(rows[i].v.id), label: "" });
  return out;
}

function clip(text, n) {
  text = String(text);
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// graph returns an element drawing rows ({v, rin, rout, level, wm});
// clicking a vertex calls open(id); the selected one is outlined.
export function graph(rows, plan, open, selected) {
  if (rows.length === 0) return h("p", { class: "muted" }, "No vertices.");
  const edges = edgesOf(rows, plan);
  const depth = new Map(rows.map((r) => [String(r.v.id), 0]));
  for (let k = 0; k < rows.length; k++) {
    for (const e of edges) depth.set(e.to, Math.max(depth.get(e.to), depth.get(e.from) + 1));
  }
  const pos = new Map();
  const perCol = new Map();
  for (const r of rows) {
    const id = String(r.v.id);
    const col = Math.min(depth.get(id), rows.length - 1);
    const row = perCol.get(col) || 0;
    perCol.set(col, row + 1);
    pos.set(id, { x: PAD + col * (W + GX), y: PAD + row * (H + GY) });
  }
  const cols = Math.max(...perCol.keys()) + 1;
  const maxRows = Math.max(...perCol.values());
  const width = PAD * 2 + cols * W + (cols - 1) * GX;
  const height = PAD * 2 + maxRows * H + (maxRows - 1) * GY;

  const svg = s("svg", { id: "graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "job graph" },
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
      s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
  for (const e of edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
    svg.append(s("path", { class: "edge", d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, "marker-end": "url(#arrow)" }));
    if (e.label) svg.append(s("text", { class: "edge-label", x: mx, y: (y1 + y2) / 2 - 6, "text-anchor": "middle" }, e.label));
  }
  for (const r of rows) {
    const { x, y } = pos.get(String(r.v.id));
    const m = r.v.metrics || {};
    svg.append(s("g", {
      class: `vertex bp-${r.level}${String(r.v.id) === selected ? " selected" : ""}`, "data-vertex": r.v.id, "data-backpressure": r.level,
      transform: `translate(${x} ${y})`, tabindex: 0, role: "link",
      onclick: () => open && open(r.v.id), onkeydown: (ev) => { if (ev.key === "Enter" && open) open(r.v.id); },
    },
      s("title", {}, `${r.v.name} (vertex ${r.v.id}) — back pressure ${r.level}`),
      s("rect", { width: W, height: H, rx: 6 }),
      s("text", { x: 10, y: 20, class: "vname" }, clip(r.v.name, 28)),
      s("text", { x: 10, y: 40 }, `parallelism ${r.v.parallelism} · running ${r.v["running-subtasks"]}`),
      s("text", { x: 10, y: 58, class: "rates" }, `in ${f.rate(r.rin)} · out ${f.rate(r.rout)}`),
      s("text", { x: 10, y: 76 }, `records ${f.count(m["read-records"])} / ${f.count(m["write-records"])}`),
      s("text", { x: 10, y: 91, class: "wm" }, `wm ${r.wm}`)));
  }
  return h("div", { class: "scroll graph" }, svg,
    h("div", { class: "legend" }, "Back pressure: ",
      ["ok", "low", "high", "idle"].map((l) => h("span", { class: `bp bp-${l}` }, l))));
}
