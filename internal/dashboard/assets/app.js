// weir's dashboard: hash routes over the REST API, refreshed every 2 s.
//
//   #/                          overview: TaskManagers, slots, jobs, HA leader
//   #/taskmanagers              the registered TaskManagers
//   #/jobs/{id}                 a job: status and its graph
//   #/jobs/{id}/vertices/{v}    … and one vertex's subtasks
//   #/jobs/{id}/checkpoints     counts, history, configuration
//   #/jobs/{id}/checkpoints/{c} … and one checkpoint's per-subtask details
//   #/jobs/{id}/config          the job's configuration (if served)
//   #/jobs/{id}/autoscaler      the autoscaler's (or reactive mode's) decisions

import { h, replace, table, kv } from "./dom.js";
import * as api from "./api.js";
import * as f from "./format.js";
import { graph } from "./graph.js";

const REFRESH_MS = 2000;
const main = document.getElementById("main");
const statusEl = document.getElementById("status");

// denied holds the write actions the API refused with 401, 403 or 405;
// their buttons stay disabled for the session.
const denied = new Map();
// rates keeps each vertex's last counts to derive records per second.
const rates = new Map();

let view = null;
let timer = 0;

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "taskmanagers") return { page: "taskmanagers" };
  if (parts[0] === "jobs" && parts[1]) {
    const tab = ["checkpoints", "config", "autoscaler"].includes(parts[2]) ? parts[2] : "graph";
    return {
      page: "job", job: parts[1], tab,
      checkpoint: tab === "checkpoints" ? parts[3] : undefined,
      vertex: parts[2] === "vertices" ? parts[3] : undefined,
    };
  }
  return { page: "overview" };
}

function navigate() {
  const r = parseRoute();
  if (view && view.page === "job" && r.page === "job" && view.job === r.job) {
    view.setRoute(r);
  } else {
    view = r.page === "job" ? jobView(r) : r.page === "taskmanagers" ? taskManagersView() : overviewView();
    replace(main, view.root);
  }
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === (r.page === "taskmanagers" ? "#/taskmanagers" : r.page === "overview" ? "#/" : ""));
  }
  refresh();
}

async function refresh() {
  clearTimeout(timer);
  const v = view;
  try {
    await v.refresh();
    if (v === view) setStatus(`updated ${f.time(Date.now()).slice(11, 19)}`, false);
  } catch (e) {
    if (v === view) setStatus(e.message, true);
    if (e.status === 401) {
      askToken(e.message);
      return; // until a token is given
    }
  }
  if (v === view) {
    clearTimeout(timer);
    timer = setTimeout(refresh, REFRESH_MS);
  }
}

// askToken shows a form for the REST API's bearer token once a request
// answered 401; the token is kept for the session.
function askToken(message) {
  if (document.getElementById("token-form")) return;
  const input = h("input", { type: "password", name: "token", autocomplete: "off", required: true, "aria-label": "REST API token" });
  const form = h("form", { id: "token-form", class: "token-form" },
    h("p", {}, api.hasToken() ? "The token was refused: " : "This REST API needs a token: ", message),
    input, h("button", { type: "submit" }, "Use token"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    api.setToken(input.value.trim());
    form.remove();
    refresh();
  });
  main.prepend(form);
  input.focus();
}

function setStatus(text, error) {
  statusEl.textContent = text;
  statusEl.classList.toggle("error", error);
}

function card(label, value, attrs) {
  return h("div", Object.assign({ class: "card" }, attrs || {}), h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

function badge(state) {
  return h("span", { class: `badge state-${String(state).toLowerCase()}` }, state);
}

// ---- Overview ----------------------------------------------------------

function overviewView() {
  const cards = h("div", { class: "cards" });
  const leader = h("div");
  const jobs = h("div");
  const root = h("section", {}, h("h1", {}, "Overview"), cards, leader, h("h2", {}, "Jobs"), jobs);
  return {
    page: "overview", root,
    async refresh() {
      const [ov, list] = await Promise.all([api.get("/overview"), api.get("/jobs/overview")]);
      replace(cards,
        card("TaskManagers", f.count(ov.taskmanagers)),
        card("Slots available / total", `${f.count(ov["slots-available"])} / ${f.count(ov["slots-total"])}`),
        card("Jobs running", f.count(ov["jobs-running"])),
        card("Finished", f.count(ov["jobs-finished"])),
        card("Cancelled", f.count(ov["jobs-cancelled"])),
        card("Failed", f.count(ov["jobs-failed"])),
        card("Version", ov["weir-version"] || "—"));
      if ("leader" in ov || "leader-id" in ov) {
        replace(leader, h("h2", {}, "High availability"), h("div", { class: "cards" },
          card("This JobManager", ov.leader ? "leader" : "standby", { "data-leader": ov.leader ? "true" : "false" }),
          card("Leader", ov["leader-id"] || "none known"),
          card("Leader REST address", ov["leader-rest-address"] || "—"),
          card("Term", f.count(ov["leader-term"] ?? 0)),
          card("Leader changes", f.count(ov["leader-changes"] ?? 0))));
      } else {
        replace(leader);
      }
      const rows = (list.jobs || []).map((j) => h("tr", { "data-job": j.jid },
        h("td", {}, h("a", { href: `#/jobs/${api.enc(j.jid)}` }, j.name)),
        h("td", {}, badge(j.state)),
        h("td", {}, f.time(j["start-time"])),
        h("td", {}, f.duration(j.duration)),
        h("td", {}, f.time(j["end-time"])),
        h("td", {}, h("a", { href: `#/jobs/${api.enc(j.jid)}/checkpoints` }, "checkpoints"))));
      replace(jobs, rows.length ? table(["Job", "State", "Started", "Duration", "Ended", ""], rows, { id: "jobs" }) : h("p", { class: "muted" }, "No jobs."));
    },
  };
}

// ---- TaskManagers ------------------------------------------------------

let tmDetails = true; // GET /taskmanagers/{id} exists (until a 404 says not)

function taskManagersView() {
  const body = h("div");
  const root = h("section", {}, h("h1", {}, "TaskManagers"), body);
  return {
    page: "taskmanagers", root,
    async refresh() {
      const tms = (await api.get("/taskmanagers")).taskmanagers || [];
      if (tms.length === 0) {
        replace(body, h("p", { class: "muted" }, "No TaskManagers registered (a local run executes its tasks in its own process)."));
        return;
      }
      const details = await Promise.all(tms.map(async (tm) => {
        if (!tmDetails) return null;
        const d = await api.optional(`/taskmanagers/${api.enc(tm.id)}`).catch(() => null);
        if (d === null) tmDetails = false;
        return d;
      }));
      const rows = tms.map((tm) => h("tr", { "data-taskmanager": tm.id },
        h("td", {}, tm.id), h("td", {}, tm.path), h("td", {}, tm.dataAddress || "—"),
        h("td", {}, tm.metricsAddress ? h("a", { href: `http://${tm.metricsAddress}/metrics`, rel: "noopener" }, tm.metricsAddress) : "—"),
        h("td", {}, f.time(tm.registered)), h("td", {}, f.count(tm.slotsNumber)), h("td", {}, f.count(tm.freeSlots))));
      const extra = details.map((d, i) => d && h("div", {}, h("h2", {}, `TaskManager ${tms[i].id}`), kv(d.metrics || d)));
      replace(body, table(["ID", "Control address", "Data address", "Metrics", "Registered", "Slots", "Free"], rows, { id: "taskmanagers" }), extra);
    },
  };
}

// ---- Job ---------------------------------------------------------------

const ACTIONS = [
  { key: "trigger", label: "Trigger checkpoint", id: "trigger-checkpoint" },
  { key: "savepoint", label: "Savepoint…", id: "savepoint" },
  { key: "stop", label: "Stop", id: "stop" },
  { key: "cancel", label: "Cancel", id: "cancel", danger: true },
];

const ENDED = new Set(["FINISHED", "FAILED", "CANCELED"]);

// dashboardFeatures reads the features of GET /config once (null if the
// server has no such endpoint).
let featuresOnce = null;
function dashboardFeatures() {
  if (!featuresOnce) {
    featuresOnce = api.optional("/config").then((c) => (c && c.features) || null, (e) => { featuresOnce = null; throw e; });
  }
  return featuresOnce;
}

function jobView(r0) {
  const jid = r0.job;
  const path = `/jobs/${api.enc(jid)}`;
  let route = r0;
  let state = "";

  const title = h("h1", {}, jid);
  const stateEl = h("span");
  const tabs = h("nav", { class: "tabs" });
  const result = h("div", { id: "action-result", class: "result", "aria-live": "polite" });
  const buttons = {};
  const form = h("form", { class: "savepoint-form", hidden: true });
  const content = h("div", { id: "content" });

  function report(text, cls, attrs) {
    replace(result, h("span", Object.assign({ class: cls || "" }, attrs || {}), text));
  }

  function refused(key, e) {
    if (e.status === 401 || e.status === 403 || e.status === 405) {
      denied.set(key, e.message);
      syncButtons();
    }
    report(e.message, "error");
  }

  function syncButtons() {
    for (const a of ACTIONS) {
      const b = buttons[a.key];
      const why = denied.get(a.key) || (ENDED.has(state) ? `the job is ${state}` : "");
      b.disabled = Boolean(why);
      b.title = why;
      b.classList.toggle("denied", denied.has(a.key));
    }
  }

  async function trigger() {
    try {
      const t = await api.post(`${path}/checkpoints`);
      const id = t["request-id"];
      report(`Checkpoint ${id} triggered…`, "", { "data-request-id": id });
      for (;;) {
        await new Promise((res) => setTimeout(res, 300));
        const st = await api.get(`${path}/checkpoints/${api.enc(id)}`);
        if (st.status.id === "IN_PROGRESS") continue;
        const cause = st.operation && st.operation["failure-cause"];
        if (cause) report(`Checkpoint ${id} failed: ${cause}`, "error", { "data-request-id": id, "data-outcome": "failed" });
        else report(`Checkpoint ${id} completed.`, "ok", { "data-request-id": id, "data-outcome": "completed" });
        refresh();
        return;
      }
    } catch (e) {
      refused("trigger", e);
    }
  }

  const dir = h("input", { type: "text", name: "target", placeholder: "target directory (empty: the server's default)", "aria-label": "savepoint target directory" });
  replace(form, dir, h("button", { type: "submit" }, "Take savepoint"), h("button", { type: "button", onclick: () => { form.hidden = true; } }, "Close"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    form.hidden = true;
    const target = dir.value.trim();
    report(`Savepoint${target ? ` to ${target}` : ""} in progress…`);
    try {
      const body = { "cancel-job": false };
      if (target) body["target-directory"] = target;
      const op = await operation("savepoints", await api.post(`${path}/savepoints`, body));
      if (op["failure-cause"]) report(`Savepoint failed: ${op["failure-cause"]}`, "error");
      else report(`Savepoint written to ${op.location}`, "ok");
    } catch (e) {
      refused("savepoint", e);
    }
    refresh();
  });

  // operation waits for an asynchronous savepoint or stop: an answer
  // with a request-id is polled at …/{kind}/{id} until it completed
  // (Flink's asynchronous operations); a synchronous answer is the result.
  async function operation(kind, res) {
    if (!res || !res["request-id"]) return (res && res.operation) || {};
    for (;;) {
      await new Promise((ok) => setTimeout(ok, 500));
      const st = await api.get(`${path}/${kind}/${api.enc(res["request-id"])}`);
      if (st.status && st.status.id !== "IN_PROGRESS") return st.operation || {};
    }
  }

  async function stop() {
    if (!confirm(`Stop job ${jid}? Its sources stop, a final checkpoint is taken and the job finishes.`)) return;
    report("Stopping…");
    try {
      const op = await operation("stop", await api.post(`${path}/stop`, {}));
      if (op["failure-cause"]) report(`Stop failed: ${op["failure-cause"]}`, "error");
      else report(`Job ${jid} stopped${op.location ? `; savepoint at ${op.location}` : ""}.`, "ok");
    } catch (e) {
      refused("stop", e);
    }
    refresh();
  }

  async function cancel() {
    if (!confirm(`Cancel job ${jid}? It ends CANCELED without a final checkpoint.`)) return;
    try {
      await api.patch(`${path}?mode=cancel`);
      report(`Job ${jid} is being cancelled.`, "ok");
    } catch (e) {
      refused("cancel", e);
    }
    refresh();
  }

  const handlers = { trigger, savepoint: () => { form.hidden = !form.hidden; if (!form.hidden) dir.focus(); }, stop, cancel };
  for (const a of ACTIONS) {
    buttons[a.key] = h("button", { type: "button", id: a.id, class: a.danger ? "danger" : "", onclick: handlers[a.key] }, a.label);
  }
  syncButtons();

  const root = h("section", {},
    h("div", { class: "jobhead" }, title, stateEl),
    tabs,
    h("div", { class: "actions" }, ACTIONS.map((a) => buttons[a.key])),
    form, result, content);

  function renderTabs() {
    const link = (tab, label, href) => h("a", { href, class: route.tab === tab ? "active" : "" }, label);
    replace(tabs,
      link("graph", "Graph", `#${path}`),
      link("checkpoints", "Checkpoints", `#${path}/checkpoints`),
      link("config", "Configuration", `#${path}/config`),
      link("autoscaler", "Autoscaler", `#${path}/autoscaler`));
  }
  renderTabs();

  return {
    page: "job", job: jid, root,
    setRoute(r) {
      route = r;
      renderTabs();
      replace(content);
    },
    async refresh() {
      const [details, features] = await Promise.all([api.get(path), dashboardFeatures()]);
      if (features && features["web-cancel"] === false) denied.set("cancel", "this server does not offer cancelling from the web (GET /config)");
      state = details.state;
      replace(stateEl, badge(details.state));
      syncButtons();
      const r = route;
      if (r.tab === "checkpoints") await checkpointsTab(content, path, details, r.checkpoint);
      else if (r.tab === "config") await configTab(content, path);
      else if (r.tab === "autoscaler") await autoscalerTab(content, path);
      else await graphTab(content, path, details, r.vertex);
    },
  };
}

async function graphTab(el, path, d, selected) {
  const vertices = d.vertices || [];
  const [extra, plan, exceptions, vdetails] = await Promise.all([
    Promise.all(vertices.map(async (v) => {
      const base = `${path}/vertices/${api.enc(v.id)}`;
      const [bp, wm] = await Promise.all([api.get(`${base}/backpressure`).catch(() => null), api.get(`${base}/watermarks`).catch(() => null)]);
      return { bp, wm };
    })),
    api.optional(`${path}/plan`).catch(() => null),
    api.optional(`${path}/exceptions`).catch(() => null),
    selected !== undefined ? api.optional(`${path}/vertices/${api.enc(selected)}`).catch(() => null) : null,
  ]);
  const rows = vertices.map((v, i) => {
    const key = `${d.jid}/${v.id}`;
    const m = v.metrics || {};
    const prev = rates.get(key);
    let rin, rout;
    if (prev && d.now > prev.now) {
      const dt = (d.now - prev.now) / 1000;
      rin = Math.max(0, (m["read-records"] - prev.in) / dt);
      rout = Math.max(0, (m["write-records"] - prev.out) / dt);
    } else if (prev) {
      rin = prev.rin; rout = prev.rout;
    }
    rates.set(key, { now: d.now, in: m["read-records"], out: m["write-records"], rin, rout });
    const bp = extra[i].bp;
    const level = !bp ? "unknown" : bp.status === "deprecated" ? "idle" : bp["backpressure-level"];
    const wm = extra[i].wm ? f.watermark(extra[i].wm.map((x) => x.value)) : "—";
    return { v, rin, rout, level, wm };
  });

  const times = h("div", { class: "cards" },
    card("State", badge(d.state)),
    card("Uptime", f.duration(d.duration)),
    card("Started", f.time(d["start-time"])),
    card("Ended", f.time(d["end-time"])),
    card("Restarts", f.count(d.restarts), { "data-restarts": d.restarts }));
  const failure = d["last-failure"] ? h("div", {}, h("h2", {}, "Last failure"), h("pre", { class: "failure" }, d["last-failure"])) : null;

  const table_ = table(["ID", "Vertex", "Parallelism", "Running", "Records in", "Records out", "In/s", "Out/s", "Back pressure", "Watermark"],
    rows.map(({ v, rin, rout, level, wm }) => h("tr", {
      "data-vertex-row": v.id, class: `clickable${String(v.id) === selected ? " selected" : ""}`,
      onclick: () => { location.hash = `#${path}/vertices/${api.enc(v.id)}`; },
    },
      h("td", {}, v.id), h("td", {}, v.name), h("td", {}, f.count(v.parallelism)), h("td", {}, f.count(v["running-subtasks"])),
      h("td", {}, f.count(v.metrics["read-records"])), h("td", {}, f.count(v.metrics["write-records"])),
      h("td", {}, f.rate(rin)), h("td", {}, f.rate(rout)),
      h("td", {}, h("span", { class: `bp bp-${level}` }, level)), h("td", {}, wm))), { id: "vertices" });

  const i = vertices.findIndex((v) => String(v.id) === selected);
  const sub = i < 0 ? (selected !== undefined ? h("p", { class: "muted" }, `No vertex ${selected}.`) : h("p", { class: "muted" }, "Click a vertex for its subtasks."))
    : subtasksView(vertices[i], extra[i], vdetails);
  replace(el, times, failure, h("h2", {}, "Job graph"), graph(rows, plan, (id) => { location.hash = `#${path}/vertices/${api.enc(id)}`; }, selected),
    table_, h("div", { id: "vertex-details" }, sub), exceptionsView(exceptions));
}

// subtasksView lists a vertex's subtasks: back pressure and watermark of
// each, and with GET /jobs/{id}/vertices/{vid} (if served) their status,
// TaskManager and records.
function subtasksView(v, extra, details) {
  const bp = new Map(((extra.bp && extra.bp.subtasks) || []).map((x) => [x.subtask, x]));
  const wm = new Map((extra.wm || []).map((x) => [Number(String(x.id).split(".")[0]), x.value]));
  const ds = new Map(((details && details.subtasks) || []).map((x) => [x.subtask, x]));
  const n = Math.max(v.parallelism || 0, ...[...bp.keys(), ...wm.keys(), ...ds.keys()].map((k) => k + 1));
  const rows = [];
  for (let i = 0; i < n; i++) {
    const b = bp.get(i), d = ds.get(i) || {}, m = d.metrics || {};
    const level = b ? b["backpressure-level"] : "unknown";
    rows.push(h("tr", { "data-subtask": i },
      h("td", {}, i),
      h("td", {}, h("span", { class: `bp bp-${level}` }, level)), h("td", {}, b ? b.ratio : "—"),
      h("td", {}, wm.has(i) ? f.watermark([wm.get(i)]) : "—"),
      details ? [h("td", {}, d.status ? badge(d.status) : "—"), h("td", {}, d.attempt ?? "—"),
        h("td", {}, f.count(m["read-records"])), h("td", {}, f.count(m["write-records"])),
        h("td", {}, m["credits-available"] ?? "—"), h("td", {}, m["checkpoint-alignment-time"] !== undefined ? f.duration(m["checkpoint-alignment-time"]) : "—")] : null));
  }
  const head = ["Subtask", "Back pressure", "Ratio", "Watermark"];
  if (details) head.push("Status", "Attempt", "Records in", "Records out", "Credits", "Last alignment");
  return h("div", {}, h("h2", {}, `Subtasks of ${v.name}`), table(head, rows, { id: "subtasks" }));
}

// exceptionsView renders Flink's GET /jobs/{id}/exceptions body, when the
// server has the endpoint.
function exceptionsView(ex) {
  if (!ex) return null;
  const entries = (ex.exceptionHistory && ex.exceptionHistory.entries) || [];
  const root = ex["root-exception"];
  if (!root && entries.length === 0) return h("div", {}, h("h2", {}, "Exceptions"), h("p", { class: "muted" }, "None."));
  return h("div", {}, h("h2", {}, "Exceptions"),
    root ? h("pre", { class: "failure" }, root) : null,
    entries.map((e) => h("details", { class: "exception" },
      h("summary", {}, `${f.time(e.timestamp)} ${e.exceptionName || ""} ${e.taskName ? `(${e.taskName})` : ""}`),
      h("pre", {}, e.stacktrace || ""))));
}

function checkpointKind(c) {
  if (c.is_savepoint) return "savepoint";
  const t = c.checkpoint_type === "UNALIGNED_CHECKPOINT" ? "unaligned" : "aligned";
  return c.kind && c.kind !== "periodic" ? `${t}, ${c.kind}` : t;
}

async function checkpointsTab(el, path, job, cid) {
  const [cp, conf] = await Promise.all([api.get(`${path}/checkpoints`), api.optional(`${path}/checkpoints/config`).catch(() => null)]);
  const c = cp.counts || {};
  const counts = h("div", { class: "cards" },
    card("Triggered", f.count(c.total)), card("In progress", f.count(c.in_progress)),
    card("Completed", f.count(c.completed), { id: "count-completed" }), card("Failed", f.count(c.failed)),
    card("Restored", f.count(c.restored)));
  const restored = cp.latest && cp.latest.restored;
  const restoredEl = restored ? h("p", {}, `Restored from ${restored.is_savepoint ? "savepoint" : "checkpoint"} ${restored.id} at ${f.time(restored.restore_timestamp)} in ${f.duration(restored.restore_duration)}.`) : null;
  const sm = cp.summary || {};
  const mma = (x, fmt) => (x ? [fmt(x.min), fmt(x.avg), fmt(x.max)] : ["—", "—", "—"]);
  const summary = table(["Completed (history)", "Min", "Avg", "Max"], [
    ["End-to-end duration", ...mma(sm.end_to_end_duration, f.duration)],
    ["Checkpointed size", ...mma(sm.checkpointed_size, f.bytes)],
    ["Full size", ...mma(sm.state_size, f.bytes)],
    ["Buffered during alignment", ...mma(sm.alignment_buffered, f.bytes)],
  ].map((r) => h("tr", {}, r.map((x, i) => (i ? h("td", {}, x) : h("th", { scope: "row" }, x))))));

  const rows = (cp.history || []).map((x) => h("tr", {
    class: `clickable${String(x.id) === cid ? " selected" : ""}`, "data-checkpoint-id": x.id, "data-status": x.status,
    onclick: () => { location.hash = `#${path}/checkpoints/${x.id}`; },
  },
  h("td", {}, h("a", { href: `#${path}/checkpoints/${x.id}` }, x.id)), h("td", {}, badge(x.status)), h("td", {}, checkpointKind(x)),
  h("td", {}, f.time(x.trigger_timestamp)), h("td", {}, f.duration(x.end_to_end_duration)),
  h("td", {}, f.bytes(x.checkpointed_size)), h("td", {}, f.bytes(x.state_size)),
  h("td", {}, `${x.num_acknowledged_subtasks}/${x.num_subtasks}`),
  h("td", { class: "cause" }, x.failure_message ? `${x.failure_cause ? `[${x.failure_cause}] ` : ""}${x.failure_message}` : "")));
  const history = rows.length
    ? table(["ID", "Status", "Type", "Triggered", "Duration", "Checkpointed", "Full size", "Acked", "Failure"], rows, { id: "history" })
    : h("p", { class: "muted" }, "No checkpoints yet.");

  const detail = cid ? await checkpointDetails(path, job, cid) : h("p", { class: "muted" }, "Click a checkpoint for its per-vertex and per-subtask details.");
  replace(el, counts, restoredEl, h("h2", {}, "History"), h("p", { class: "muted" }, "The last 10 checkpoints, newest first."), history,
    h("div", { id: "checkpoint-details" }, detail), h("h2", {}, "Summary"), summary,
    h("h2", {}, "Configuration"), conf ? kv(conf) : h("p", { class: "muted" }, "Not served."));
}

async function checkpointDetails(path, job, cid) {
  const base = `${path}/checkpoints/details/${api.enc(cid)}`;
  let d;
  try {
    d = await api.get(base);
  } catch (e) {
    if (e.status === 404) return h("p", { class: "muted" }, `Checkpoint ${cid} is no longer in the history (it keeps the last 10).`);
    throw e;
  }
  const per = await Promise.all((job.vertices || []).map((v) => api.get(`${base}/subtasks/${api.enc(v.id)}`).then((t) => ({ v, t })).catch(() => ({ v, t: null }))));
  const head = h("div", { class: "cards" },
    card("Status", badge(d.status)), card("Type", checkpointKind(d)), card("Triggered", f.time(d.trigger_timestamp)),
    card("Duration", f.duration(d.end_to_end_duration)), card("Checkpointed", f.bytes(d.checkpointed_size)), card("Full size", f.bytes(d.state_size)),
    card("Max start delay", f.duration(d.start_delay)), card("Max alignment", f.duration(d.alignment_duration)),
    card("Buffered", f.bytes(d.alignment_buffered)), card("Persisted in-flight", f.bytes(d.persisted_data)));
  const failure = d.failure_message ? h("pre", { class: "failure" }, `${d.failure_cause ? `[${d.failure_cause}] ` : ""}${d.failure_message}`) : null;
  const vertices = per.map(({ v, t }) => h("div", { class: "vertex-detail", "data-subtasks-vertex": v.id },
    h("h3", {}, `${v.name} — ${t ? `${t.num_acknowledged_subtasks}/${t.num_subtasks} acknowledged, buffered ${f.bytes(t.alignment_buffered)}, processed ${f.bytes(t.processed_data)}, persisted ${f.bytes(t.persisted_data)}` : "no details"}`),
    t && t.subtasks.length ? table(["Subtask", "Acknowledged", "End to end", "Sync", "Async", "Start delay", "Alignment", "Buffered", "Processed", "Persisted", "Unaligned"],
      t.subtasks.map((st) => h("tr", {},
        h("td", {}, st.index), h("td", {}, f.time(st.ack_timestamp)), h("td", {}, f.duration(st.end_to_end_duration)),
        h("td", {}, st.checkpoint ? f.duration(st.checkpoint.sync) : "—"), h("td", {}, st.checkpoint ? f.duration(st.checkpoint.async) : "—"),
        h("td", {}, f.duration(st.start_delay)), h("td", {}, f.duration(st.alignment.duration)),
        h("td", {}, f.bytes(st.alignment.buffered)), h("td", {}, f.bytes(st.alignment.processed)), h("td", {}, f.bytes(st.alignment.persisted)),
        h("td", {}, st.unaligned_checkpoint ? "yes" : "no")))) : null));
  return h("div", {}, h("h2", {}, `Checkpoint ${d.id}`), head, failure, vertices);
}

async function configTab(el, path) {
  const [job, cp, cluster] = await Promise.all([
    api.optional(`${path}/config`).catch(() => null),
    api.optional(`${path}/checkpoints/config`).catch(() => null),
    api.optional("/config").catch(() => null),
  ]);
  const ec = job && job["execution-config"];
  replace(el,
    h("h2", {}, "Job"), job ? [kv(Object.fromEntries(Object.entries(ec || job).filter(([k]) => k !== "user-config"))), ec && ec["user-config"] ? [h("h3", {}, "User configuration"), kv(ec["user-config"])] : null] : h("p", { class: "muted" }, "This server does not serve GET /jobs/{id}/config."),
    h("h2", {}, "Checkpointing"), cp ? kv(cp) : h("p", { class: "muted" }, "Not served."),
    cluster ? [h("h2", {}, "Dashboard configuration"), kv(cluster)] : null);
}

// autoscalerTab shows GET /jobs/{id}/autoscaler: whether it runs, the
// rescales it made, and its evaluations newest first, each vertex with
// the inputs the rule used and the reason for its outcome; for a job in
// reactive mode, that rule's steps instead.
async function autoscalerTab(el, path) {
  const a = await api.optional(`${path}/autoscaler`).catch(() => null);
  if (!a) {
    replace(el, h("p", { class: "muted" }, "This server does not serve GET /jobs/{id}/autoscaler."));
    return;
  }
  const last = a.last_rescale
    ? h("p", { id: "last-rescale" }, `Last rescale: paused ${f.duration(a.last_rescale.pause_ms)} (from the request until every task ran), from checkpoint ${a.last_rescale.checkpoint}, at ${new Date(a.last_rescale.at).toLocaleString()}.`)
    : null;
  if (a.reactive) {
    const steps = (a.reactive.decisions || []).slice().reverse();
    replace(el,
      h("div", { class: "cards" }, card("Reactive rescales", f.count(a.reactive.rescales)), card("Steps kept", f.count(steps.length))),
      h("p", { class: "muted" }, "Reactive mode: the job runs on every slot (docs/rescaling.md)."), last,
      table(["At", "Step", "Parallelism", "Slots", "Min", "Max", "Why"],
        steps.map((d) => h("tr", { "data-kind": d.kind, class: d.kind === "scale-up" || d.kind === "scale-down" ? "changed" : "" },
          h("td", {}, new Date(d.at).toLocaleString()), h("td", {}, d.kind),
          h("td", {}, d.to ? `${d.from} → ${d.to}` : String(d.parallelism)), h("td", {}, String(d.slots)),
          h("td", {}, String(d.min_parallelism)), h("td", {}, String(d.max_parallelism)),
          h("td", { class: d.kind === "failed" ? "why error" : "why" }, d.error ? `${d.why}: ${d.error}` : d.why))), { id: "reactive" }));
    return;
  }
  if (!a.enabled) {
    replace(el, h("p", { id: "autoscaler-off", class: "muted" }, "The autoscaler does not run for this job: set job.autoscaler.enabled: true (docs/rescaling.md)."), last);
    return;
  }
  const num = (x, digits) => (x === undefined || x === null || x < 0 ? "—" : Number(x).toFixed(digits));
  const decisions = (a.decisions || []).slice().reverse();
  replace(el,
    h("div", { class: "cards" }, card("Rescales", f.count(a.rescales)), card("Evaluations kept", f.count(decisions.length))), last,
    decisions.length === 0 ? h("p", { class: "muted" }, "No evaluation yet: the first waits for the metrics window to fill after the start or a rescale.") : null,
    decisions.map((d, i) => h("section", { class: "decision", "data-decision": i, "data-rescale": String(Boolean(d.rescale)) },
      h("h3", {}, `${new Date(d.at).toLocaleString()} — ${d.rescale ? "rescaled" : "no change"}`),
      d.reason ? h("p", { class: "muted" }, d.reason) : null,
      d.error ? h("p", { class: "error" }, `The rescale failed: ${d.error}`) : null,
      (d.vertices || []).length ? table(
        ["Vertex", "Parallelism", "In", "Out", "Busy", "Backpressured", "Lag", "True rate/subtask", "Target", "Utilization", "Why"],
        d.vertices.map((v) => h("tr", { "data-vertex": v.id, class: v.to !== v.from ? "changed" : "" },
          h("td", {}, v.id), h("td", {}, v.to !== v.from ? `${v.from} → ${v.to}` : String(v.from)),
          h("td", {}, f.rate(v.records_in_per_second)), h("td", {}, f.rate(v.records_out_per_second)),
          h("td", {}, num(v.busy, 2)), h("td", {}, num(v.backpressured, 2)), h("td", {}, v.lag < 0 ? "—" : f.count(v.lag)),
          h("td", {}, v.true_rate_per_subtask < 0 ? "—" : f.rate(v.true_rate_per_subtask)), h("td", {}, f.rate(v.target_rate)),
          h("td", {}, num(v.utilization, 2)), h("td", { class: "why" }, v.why)))) : null)));
}

window.addEventListener("hashchange", navigate);
navigate();
