// Building DOM nodes without parsing markup: every server string becomes a
// text node, so nothing the REST API answers is ever parsed as markup.

const SVG = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// h("tr", {class: "x"}, "text", child…) makes an HTML element.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s("rect", {x: 1}) makes an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

// replace swaps el's children for the given ones. The live refresh
// rebuilds views every 2 s, so the sideways scroll of each scrolling
// container and the open state of each <details> carry over by position.
export function replace(el, ...children) {
  const scrolls = [...el.querySelectorAll(".scroll")].map((x) => x.scrollLeft);
  const opened = [...el.querySelectorAll("details")].map((x) => x.open);
  el.replaceChildren();
  build(el, {}, children);
  el.querySelectorAll(".scroll").forEach((x, i) => { if (scrolls[i]) x.scrollLeft = scrolls[i]; });
  el.querySelectorAll("details").forEach((x, i) => { if (opened[i]) x.open = true; });
}

// table renders rows (arrays of cells) under a header, in a container
// that scrolls sideways on a narrow window.
export function table(head, rows, attrs) {
  return h("div", { class: "scroll" },
    h("table", attrs || {},
      h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
      h("tbody", {}, rows)));
}

// kv renders an object's fields as a two-column table; nested values as JSON.
export function kv(obj) {
  const rows = Object.entries(obj || {}).map(([k, v]) =>
    h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v))));
  return h("div", { class: "scroll" }, h("table", { class: "kv" }, h("tbody", {}, rows)));
}
