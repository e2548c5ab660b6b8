// aecg-bench run viewer: hash routes over the server's JSON API (aecg_bench/view/server.py).
// Everything from the results folder is inserted as text (never as HTML): model outputs are data.
"use strict";

const main = document.getElementById("main");

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function link(route, params, text) {
  return h("a", { href: "#" + route + "?" + new URLSearchParams(params).toString() }, text);
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "–";
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(digits);
  return String(x);
}

function verdict(success) {
  if (success === null || success === undefined) return h("span", { class: "muted" }, "–");
  return h("span", { class: success ? "ok" : "fail" }, success ? "success" : "failure");
}

async function get(path, params) {
  const res = await fetch(path + "?" + new URLSearchParams(params || {}).toString());
  const body = await res.json().catch(() => ({ error: `the server answered ${res.status} without JSON` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

function problems(list) {
  if (!list || !list.length) return null;
  return h("div", { class: "problems", "data-problems": list.length },
    h("b", {}, "Could not read everything: "), h("ul", {}, list.map((p) => h("li", {}, p))));
}

function table(headers, rows, attrs) {
  return h("div", { class: "scroll" }, h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows)));
}

function crumbs(...parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.map((p) => (typeof p === "string" ? h("span", {}, p, " ") : p)));
}

// ---- runs ----------------------------------------------------------------------------------
const FILTERS = ["experiment", "benchmark", "framework", "memory", "model", "seed", "preset", "status"];

async function viewRuns(params) {
  const data = await get("/api/runs");
  document.getElementById("root").textContent = data.root;
  crumbs();
  const runs = data.runs.filter((r) => FILTERS.every((f) => !params.get(f) || String(r[f]) === params.get(f)));
  const picked = new Set();
  const compareBtn = h("button", { disabled: true, id: "compare" }, "Compare the two selected runs");
  compareBtn.addEventListener("click", () => {
    const [a, b] = [...picked];
    location.hash = "compare?" + new URLSearchParams({ a, b }).toString();
  });
  const filters = h("div", { class: "filters" }, FILTERS.map((f) => {
    const values = [...new Set(data.runs.map((r) => String(r[f])))].sort();
    const select = h("select", { name: f, onchange: (e) => {
      const p = new URLSearchParams(params);
      if (e.target.value) p.set(f, e.target.value); else p.delete(f);
      location.hash = "runs?" + p.toString();
    } }, h("option", { value: "" }, "all"), values.map((v) => h("option", { value: v, selected: params.get(f) === v }, v)));
    return h("label", {}, f, select);
  }));
  const rows = runs.map((r) => h("tr", { "data-run": r.id },
    h("td", {}, h("input", { type: "checkbox", onchange: (e) => {
      if (e.target.checked) picked.add(r.id); else picked.delete(r.id);
      compareBtn.disabled = picked.size !== 2;
    } })),
    h("td", {}, link("run", { id: r.id }, r.id)),
    ...["framework", "benchmark", "memory", "model", "seed", "preset"].map((k) => h("td", {}, fmt(r[k]))),
    h("td", {}, r.status), h("td", {}, `${r.done}/${fmt(r.n_items)}`),
    h("td", {}, fmt(r.success_rate)), h("td", {}, "$" + fmt(r.cost, 4)),
    h("td", {}, r.problems.length ? h("span", { class: "fail" }, r.problems.length + " unreadable") : "")));
  main.replaceChildren(
    h("h1", {}, `${runs.length} of ${data.runs.length} runs`),
    filters, compareBtn,
    table(["", "run", "framework", "benchmark", "memory", "model", "seed", "preset", "status", "done", "success",
      "cost", ""], rows, { id: "runs" }),
  );
  return "runs";
}

// ---- one run -------------------------------------------------------------------------------
function lineChart(rows, key) {
  const w = 640, hgt = 140, pad = 24;
  const pts = rows.map((r) => [r.position, Number(r.stats[key] ?? NaN)]).filter((p) => !Number.isNaN(p[1]));
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart"); svg.setAttribute("width", w); svg.setAttribute("height", hgt);
  svg.setAttribute("data-series", key);
  if (!pts.length) return svg;
  const xmax = Math.max(1, ...pts.map((p) => p[0])), ymax = Math.max(1, ...pts.map((p) => p[1]));
  const x = (v) => pad + (v / xmax) * (w - 2 * pad), y = (v) => hgt - pad - (v / ymax) * (hgt - 2 * pad);
  const path = document.createElementNS(svg.namespaceURI, "polyline");
  path.setAttribute("points", pts.map((p) => `${x(p[0])},${y(p[1])}`).join(" "));
  path.setAttribute("fill", "none"); path.setAttribute("stroke", "#5b6abf"); path.setAttribute("stroke-width", "2");
  svg.append(path);
  for (const [text, tx, ty] of [[`${key} (max ${fmt(ymax)})`, pad, 14], ["sample position →", w - 140, hgt - 6]]) {
    const t = document.createElementNS(svg.namespaceURI, "text");
    t.setAttribute("x", tx); t.setAttribute("y", ty); t.setAttribute("font-size", "11"); t.textContent = text;
    svg.append(t);
  }
  return svg;
}

async function viewRun(params) {
  const id = params.get("id");
  const run = await get("/api/run", { id });
  const s = run.summary;
  crumbs(link("runs", {}, "runs"), id);
  const tl = run.timeline;
  const sizeKey = tl.stats_keys.find((k) => /^(items|memories|skills_active|size|n_items|cards|insights)$/.test(k))
    || tl.stats_keys[0];
  const chartBox = h("div", {}, sizeKey ? lineChart(tl.rows, sizeKey) : h("p", { class: "muted" }, "no memory stats"));
  const keySelect = h("select", { onchange: (e) => chartBox.replaceChildren(lineChart(tl.rows, e.target.value)) },
    tl.stats_keys.map((k) => h("option", { value: k, selected: k === sizeKey }, k)));
  const samples = run.samples.map((r) => h("tr", { "data-position": r.position },
    h("td", {}, link("sample", { run: id, pos: r.position }, r.position)), h("td", {}, r.sample_id),
    h("td", {}, r.phase), h("td", {}, r.status), h("td", {}, verdict(r.success)), h("td", {}, fmt(r.value)),
    h("td", {}, fmt(r.steps)), h("td", {}, fmt(r.n_recalled)), h("td", {}, fmt(r.seconds, 2))));
  const timeline = tl.rows.filter((r) => Object.keys(r.events).length).map((r) => h("tr", {},
    h("td", {}, link("sample", { run: id, pos: r.position }, r.position)), h("td", {}, verdict(r.success)),
    tl.event_kinds.map((k) => h("td", {}, r.events[k] ? String(r.events[k]) : ""))));
  const body = [
    h("h1", {}, id),
    problems(run.problems),
    h("div", { class: "kv" }, ...[
      ["status", s.status], ["preset", s.preset], ["done", `${s.done}/${fmt(s.n_items)}`],
      ["success rate", fmt(s.success_rate)], ["cost", "$" + fmt(s.cost, 4)],
      ["protocol", Object.entries(run.header.protocol || {}).map(([k, v]) => `${k}=${fmt(v)}`).join(", ")],
      ["error", run.header.error || ""],
    ].flatMap(([k, v]) => [h("b", {}, k), h("span", {}, v)])),
    h("h2", {}, "Memory over the stream"), h("label", {}, "series ", keySelect), chartBox,
    h("p", {}, "Audit events in all: ", Object.entries(tl.totals).map(([k, v]) => `${k} ${v}`).join(", ") || "none"),
    table(["position", "outcome", ...tl.event_kinds], timeline, { id: "timeline" }),
  ];
  if (run.has_skills) {
    const sk = await get("/api/skills", { run: id });
    body.push(h("h2", {}, "Skills (latest snapshot): reliability beliefs, fast and slow"),
      table(["skill", "level", "status", "uses", "fast", "slow", "version", "parent", "reviewed at", "name"],
        sk.skills.map((k) => h("tr", {}, h("td", {}, link("item", { run: id, id: k.id }, k.id)),
          ["level", "status", "uses", "fast", "slow", "version", "parent", "reviewed_at", "name"]
            .map((c) => h("td", {}, fmt(k[c]))))), { id: "skills" }));
  }
  const auditBox = h("div", { id: "audit" });
  const showAudit = async (event) => {
    const log = await get("/api/audit", { run: id, event });
    auditBox.replaceChildren(h("p", { class: "meta" }, `${log.total} events` + (log.total > log.events.length ? `, first ${log.events.length} shown` : "")),
      table(["position", "event", "details"], log.events.map((e) => h("tr", {}, h("td", {}, e.position === undefined ? "–"
        : link("sample", { run: id, pos: e.position }, e.position)), h("td", {}, e.event), h("td", {}, h("code", {}, JSON.stringify(e)))))));
  };
  body.push(h("h2", {}, "Audit log"), h("label", {}, "event ", h("select", { onchange: (e) => showAudit(e.target.value) },
    h("option", { value: "" }, "all"), tl.event_kinds.map((k) => h("option", { value: k }, k)))), auditBox);
  await showAudit("");
  body.push(h("h2", {}, `Samples (${run.samples.length})`),
    table(["position", "sample", "phase", "status", "outcome", "value", "steps", "recalled", "seconds"], samples,
      { id: "samples" }));
  main.replaceChildren(...body.filter(Boolean));
  return "run";
}

// ---- one sample ----------------------------------------------------------------------------
function memoryBox(runId, item, shown) {
  const origin = item.created_by;
  if (shown.has(item.id)) {  // the same item at a later decision: its id, not its text again
    return h("div", { class: "memory", "data-item": item.id }, h("span", { class: "meta" }, "memory "),
      link("item", { run: runId, id: item.id }, item.id), h("span", { class: "meta" }, " (shown above)"));
  }
  shown.add(item.id);
  return h("div", { class: "memory", "data-item": item.id },
    h("span", { class: "meta" }, "memory "), link("item", { run: runId, id: item.id }, item.id),
    item.kind ? h("span", { class: "meta" }, ` (${item.kind})`) : null,
    origin && origin.position !== null && origin.position !== undefined
      ? h("span", { class: "meta" }, " · created by ", link("sample", { run: runId, pos: origin.position },
        `sample ${origin.sample_id ?? origin.position}`), ` (${origin.event})`) : h("span", { class: "meta" }, " · origin not in the audit log"),
    item.text ? h("pre", {}, item.text) : null);
}

function decisionView(runId, d, items, stepsByDecision, shown) {
  const step = stepsByDecision[d.id];
  return h("div", { class: "decision", "data-level": d.level, "data-decision": d.id },
    h("div", {}, h("span", { class: "who" }, `${d.agent} · ${d.role}`),
      h("span", { class: "meta" }, ` ${d.level} level · ${d.id}` + (d.parents && d.parents.length ? ` ← ${d.parents.join(", ")}` : "")
        + (d.step !== null && d.step !== undefined ? ` · step ${d.step}` : "") + (d.model ? ` · ${d.model}` : "")
        + ` · ${d.input_tokens || 0}+${d.output_tokens || 0} tokens`)),
    (d.recalled_memory_ids || []).map((mid) => memoryBox(runId, items[mid] || { id: mid }, shown)),
    d.output ? h("pre", {}, d.output) : null,
    d.action ? h("div", { class: "meta" }, "action: ", h("code", {}, d.action.kind === "tool"
      ? d.action.tool_calls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join("; ") : d.action.text)) : null,
    step ? h("div", { class: "step" }, h("span", { class: "meta" }, `observation${step.observation.valid ? "" : " (invalid)"}: `),
      h("pre", {}, step.observation.text)) : null);
}

async function viewSample(params) {
  const runId = params.get("run"), pos = params.get("pos");
  const s = await get("/api/sample", { run: runId, pos });
  crumbs(link("runs", {}, "runs"), link("run", { id: runId }, runId), `sample ${pos}`);
  const r = s.record;
  const body = [
    h("h1", {}, `Sample ${r.sample_id} (position ${r.position})`), problems(s.problems),
    h("div", { class: "kv" }, ...[["status", r.status], ["outcome", verdict(r.success)], ["value", fmt(r.value)],
      ["steps", fmt(r.steps)], ["metrics", JSON.stringify(r.metrics || {})], ["error", r.error || ""]]
      .flatMap(([k, v]) => [h("b", {}, k), h("span", { "data-field": k }, v)])),
  ];
  s.rollouts.forEach((ro, i) => {
    const shown = new Set();
    const traj = ro.episode.trajectory;
    const stepsByDecision = Object.fromEntries((traj.steps || []).filter((st) => st.decision_id).map((st) => [st.decision_id, st]));
    body.push(h("h2", {}, s.rollouts.length > 1 ? `Rollout ${i + 1}` : "Conversation",
      h("span", { class: "meta" }, ` · ${traj.framework} · label ${JSON.stringify(ro.episode.outcome)}`)),
      traj.initial_observation ? h("div", { class: "step" }, h("span", { class: "meta" }, "task start: "), h("pre", {}, traj.initial_observation)) : null,
      ...traj.decisions.map((d) => decisionView(runId, d, s.items, stepsByDecision, shown)),
      h("p", { class: "meta" }, "score: ", JSON.stringify(ro.score)));
  });
  main.replaceChildren(...body.filter(Boolean));
  return "sample";
}

// ---- one memory item -----------------------------------------------------------------------
async function viewItem(params) {
  const runId = params.get("run"), id = params.get("id");
  const m = await get("/api/item", { run: runId, id });
  crumbs(link("runs", {}, "runs"), link("run", { id: runId }, runId), `memory ${id}`);
  const c = m.created_by;
  main.replaceChildren(...[
    h("h1", {}, `Memory item ${id}`), problems(m.problems),
    h("p", { id: "origin" }, c && c.position !== null && c.position !== undefined
      ? ["Created while running ", link("sample", { run: runId, pos: c.position }, `sample ${c.sample_id ?? c.position}`), ` (${c.event})`]
      : "Its origin is not in the audit log."),
    m.text ? h("pre", {}, m.text) : null,
    h("h2", {}, `Recalled by ${m.used_by.length} samples`),
    h("p", { id: "used-by" }, m.used_by.map((u) => [link("sample", { run: runId, pos: u.position }, String(u.position)), " "])),
    h("h2", {}, `Audit events (${m.events.length})`),
    table(["position", "event", "details"], m.events.map((e) => h("tr", {}, h("td", {}, fmt(e.position)),
      h("td", {}, e.event), h("td", {}, h("code", {}, JSON.stringify(e))))), { id: "events" }),
    m.state ? [h("h2", {}, "Latest state (snapshot)"), h("pre", {}, JSON.stringify(m.state, null, 1))] : null,
  ].flat().filter(Boolean));
  return "item";
}

// ---- two runs side by side -----------------------------------------------------------------
async function viewCompare(params) {
  const a = params.get("a"), b = params.get("b");
  const c = await get("/api/compare", { a, b });
  const onlyFlips = params.get("flipped") === "1";
  crumbs(link("runs", {}, "runs"), "compare");
  const rows = c.rows.filter((r) => !onlyFlips || r.flip).map((r) => h("tr", { class: r.flip ? `flip-${r.flip}` : "", "data-flip": r.flip },
    h("td", {}, r.sample_id), h("td", {}, r.phase),
    h("td", {}, link("sample", { run: a, pos: r.a.position }, verdict(r.a.success))),
    h("td", {}, (r.a.recalled || []).map((m) => [link("item", { run: a, id: m }, m), " "])),
    h("td", {}, link("sample", { run: b, pos: r.b.position }, verdict(r.b.success))),
    h("td", {}, (r.b.recalled || []).map((m) => [link("item", { run: b, id: m }, m), " "])),
    h("td", {}, r.flip)));
  main.replaceChildren(...[
    h("h1", {}, "Two runs on the same samples"), problems(c.problems),
    h("p", {}, "A: ", link("run", { id: a }, a), h("br"), "B: ", link("run", { id: b }, b)),
    h("p", { id: "flips" }, `B gained ${c.flipped.gained} and lost ${c.flipped.lost} of ${c.rows.length} paired samples`
      + (c.unpaired ? `; ${c.unpaired} samples are in one run only` : "") + ". ",
      link("compare", { a, b, flipped: onlyFlips ? "0" : "1" }, onlyFlips ? "show all" : "show flipped only")),
    table(["sample", "phase", "A", "A recalled", "B", "B recalled", "flip"], rows, { id: "compare-table" }),
  ].filter(Boolean));
  return "compare";
}

const ROUTES = { runs: viewRuns, run: viewRun, sample: viewSample, item: viewItem, compare: viewCompare };

async function route() {
  const [name, query] = (location.hash.slice(1) || "runs").split("?");
  const view = ROUTES[name] || viewRuns;
  document.body.dataset.view = "loading";
  try {
    document.body.dataset.view = await view(new URLSearchParams(query || ""));
  } catch (err) {
    main.replaceChildren(h("div", { class: "error", id: "error" }, String(err.message || err)));
    document.body.dataset.view = "error";
  }
  window.scrollTo(0, 0);
}

window.addEventListener("hashchange", route);
route();
