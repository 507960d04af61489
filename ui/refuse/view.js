// The live tuning panel (issue 35): fusion controls, the final list, a rank flow and explanations, re-fused in the
// browser on every input event from the record the server sent once per search (fuse.mjs is inlined above this
// file by ui/refuse.py). The server hears only a committed setting (a slider released, a key pressed, a choice
// made) and an explained row, so links, grades and snapshots follow. Every text from a record goes in by
// textContent, never as markup.

const PANELS = new WeakMap(); // parentElement → the panel's state, kept across reruns
const SVG = "http://www.w3.org/2000/svg";
const K = 10; // metrics at 10, and the rank flow's depth
const KNOBS = ["dense_weight", "sparse_weight", "rrf_k", "rerank_weight", "recall_top_k"];
const LABELS = { dense_weight: "Dense weight", sparse_weight: "Sparse weight", rrf_k: "RRF k",
                 rerank_weight: "Rerank weight", recall_top_k: "Top k" };

function el(tag, attrs = {}, text = null) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  if (text !== null) e.textContent = String(text);
  return e;
}

function svg(tag, attrs = {}, text = null) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = String(text);
  return e;
}

function g(x, d = 4) {
  if (x === null || x === undefined) return "—";
  if (x !== 0 && Math.abs(x) < 1e-4) return x > 0 ? "< 0.0001" : "> −0.0001"; // as ui/view.py's num: float noise
  if (Math.abs(x) >= 1e5) return x.toExponential(d - 1);
  return String(Number(x.toFixed(d)));
}

function signed(x) { return (x > 0 ? "+" : x < 0 ? "−" : "±") + g(Math.abs(x), 3); }

function shortId(id, n = 26) { return id.length > n ? id.slice(0, n - 1) + "…" : id; }
// At most n characters, cut between words where a space is near, with "…" when cut (the explanation has it whole).
function clip(text, n) {
  if (text.length <= n) return text;
  const gap = text.lastIndexOf(" ", n);
  return text.slice(0, gap > n * 0.75 ? gap : n).trimEnd() + "…";
}

function sameSetting(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

function buildControls(P) {
  const box = el("div", { class: "rf-controls", role: "group", "aria-label": "Fusion settings" });
  const fusionLab = el("label", {}, "Fusion ");
  P.fusion = el("select", { "aria-label": "Live fusion" });
  fusionLab.append(P.fusion);
  const normLab = el("label", { class: "rf-norm" }, "Normalisation ");
  P.norm = el("select", { "aria-label": "Live normalisation" });
  normLab.append(P.norm);
  box.append(fusionLab, normLab);
  P.normLab = normLab;
  P.ranges = {};
  P.outs = {};
  P.labs = {};
  for (const name of KNOBS) {
    const lab = el("label", { class: "rf-knob" });
    const title = el("span", { class: "rf-knob-name" }, LABELS[name]);
    const input = el("input", { type: "range", "aria-label": `Live ${LABELS[name].toLowerCase()}`, "data-knob": name });
    const out = el("output", { class: "rf-val" });
    lab.append(title, input, out);
    box.append(lab);
    P.ranges[name] = input;
    P.outs[name] = out;
    P.labs[name] = lab;
    input.addEventListener("pointerdown", () => { P.dragging = true; });
    // A drag's steps draw once a frame (a drag can fire several between two frames); a key's step draws at once.
    input.addEventListener("input", () => { P.setting[name] = Number(input.value); if (P.dragging) P.renderSoon(); else P.render(); });
    input.addEventListener("change", () => { P.dragging = false; P.setting[name] = Number(input.value); P.commit(); });
  }
  P.fusion.addEventListener("change", () => { P.setting.fusion = P.fusion.value; P.render(); P.commit(); });
  P.norm.addEventListener("change", () => { P.setting.normalization = P.norm.value; P.render(); P.commit(); });
  return box;
}

function fillControls(P) {
  const d = P.data, s = P.setting;
  P.fusion.replaceChildren(...d.strategies.filter((x) => d.fusions.includes(x.name)).map((x) => {
    const o = el("option", { value: x.name }, x.label);
    o.selected = x.name === s.fusion;
    return o;
  }));
  P.fusion.disabled = P.fusion.options.length < 2;
  const convex = d.strategies.find((x) => x.name === "convex");
  const opts = convex ? convex.params.find((p) => p.name === "normalization").options : [];
  P.norm.replaceChildren(...opts.map((n) => {
    const o = el("option", { value: n }, n);
    o.selected = n === s.normalization;
    return o;
  }));
  for (const name of KNOBS) {
    const c = d.controls[name], input = P.ranges[name];
    input.min = c.min;
    input.max = name === "recall_top_k" ? Math.min(c.max, d.max_top_k) : c.max;
    input.step = c.step;
    input.value = s[name];
  }
}

function syncControls(P) {
  const s = P.setting;
  P.fusion.value = s.fusion;
  P.norm.value = s.normalization;
  P.normLab.hidden = s.fusion !== "convex";
  P.labs.rrf_k.hidden = s.fusion !== "rrf" && !P.data.sparse_empty;
  P.ranges.rerank_weight.disabled = !P.data.rerank;
  P.labs.rerank_weight.title = P.data.rerank ? "" : "No reranker ran for this search";
  for (const name of KNOBS) {
    if (Number(P.ranges[name].value) !== s[name]) P.ranges[name].value = s[name];
    put(P.outs[name], name === "rrf_k" || name === "recall_top_k" ? String(s[name]) : s[name].toFixed(2));
  }
}

// A slider step redraws in place: every row, line, dot and label is an element kept from the last frame whose text
// and attributes change only where they differ, so a step costs no new DOM (no style recalculation of a rebuilt
// table, no layout of a rebuilt SVG).
function put(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function attr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}

function metricsLine(P, finalIds) {
  const grades = P.data.grades || {};
  if (!Object.keys(grades).length) {
    if (P.metricsKey !== "none") {
      P.metrics.replaceChildren(el("span", { class: "rf-muted" }, "No grades for this query yet: grade rows below and "
        + "nDCG@10 and recall@10 move here as you drag."));
      P.metricsKey = "none";
    }
    return;
  }
  const { ndcg: nd, recall: rc, ndcg0: nd0, recall0: rc0, ungraded } = panelScores(P.data, finalIds, K);
  const key = JSON.stringify([nd, rc, nd0, rc0, ungraded]);
  if (key === P.metricsKey) return; // the same numbers: nothing to draw
  P.metricsKey = key;
  const part = (name, v, v0, cls) => {
    const s = el("span", { class: "rf-metric " + cls });
    s.append(el("b", {}, `${name} ${v.toFixed(3)}`), el("span", { class: v > v0 ? "rf-up" : v < v0 ? "rf-down" : "rf-muted" },
      ` (${signed(v - v0)} vs saved)`));
    return s;
  };
  P.metrics.replaceChildren(part("nDCG@10", nd, nd0, "rf-ndcg"), part("recall@10", rc, rc0, "rf-recall"));
  if (ungraded) P.metrics.append(el("span", { class: "rf-ungraded-count" }, `${ungraded} of the top ${K} ungraded`));
}

const CELLS = new WeakMap(); // a row of the final table → its cells

function newRow() {
  const tr = el("tr", { tabindex: "0" });
  const c = { rank: el("td", { class: "rf-rank" }), move: el("td"), id: el("td", { class: "rf-id" }),
              text: el("td", { class: "rf-text" }), clip: el("div", { class: "rf-clip" }), score: el("td", { class: "rf-num" }),
              dense: el("td", { class: "rf-num" }), sparse: el("td", { class: "rf-num" }), grade: el("td") };
  c.text.append(c.clip); // two lines at most; the explanation shows the whole text
  tr.append(c.rank, c.move, c.id, c.text, c.score, c.dense, c.sparse, c.grade);
  CELLS.set(tr, c);
  return tr;
}

function drawTable(P, out) {
  const grades = P.data.grades || {}, graded = Object.keys(grades).length > 0;
  const savedRank = new Map(P.savedIds.map((id, i) => [id, i + 1]));
  const rows = P.tbody.children;
  while (rows.length > out.final.length) P.tbody.lastElementChild.remove();
  if (rows.length < out.final.length) {
    const more = [];
    for (let i = rows.length; i < out.final.length; i++) more.push(newRow());
    P.tbody.append(...more);
  }
  out.final.forEach((t, i) => {
    const tr = rows[i], c = CELLS.get(tr);
    attr(tr, "data-id", t.id);
    attr(tr, "data-score", String(t.score));
    attr(tr, "aria-label", `Explain ${t.id}`);
    tr.classList.toggle("rf-sel", t.id === P.selected);
    const was = savedRank.get(t.id);
    const move = was === undefined ? "new" : was === i + 1 ? "" : was > i + 1 ? `↑${was - i - 1}` : `↓${i + 1 - was}`;
    const f = t.fused;
    const src = own(P.data.credit || {}, t.id) ?? t.id; // a fact row is graded as its source (metrics.credited)
    const grade = own(grades, src) !== undefined ? `● ${own(grades, src)}` : graded && i < K ? "ungraded" : "";
    attr(c.grade, "title", src !== t.id ? `graded as the trace this fact was read from, ${src}` : "");
    put(c.rank, String(i + 1));
    attr(c.move, "class", "rf-move " + (move.startsWith("↑") || move === "new" ? "rf-up" : "rf-down"));
    put(c.move, move);
    attr(c.id, "title", t.id);
    put(c.id, shortId(t.id));
    put(c.clip, clip(own(P.data.texts, t.id) || "", 200));
    put(c.score, g(t.score));
    put(c.dense, String(f ? (f.ranks[0] ?? "—") : t.fact ? "fact" : "—"));
    put(c.sparse, String(f ? (f.ranks[P.data.dense.length] ?? "—") : "—"));
    attr(c.grade, "class", grade === "ungraded" ? "rf-ungraded" : "rf-grade");
    put(c.grade, grade);
  });
}

function flowColumns(P, out) {
  const ids = (l) => l.map((x) => (Array.isArray(x) ? x[0] : x.id));
  return [["Dense", P.data.stages.dense], ["Sparse", P.data.stages.sparse], ["Merged", ids(out.merged)],
          ["Final", ids(out.final)]];
}

const FLOW = { W: 480, top: 30, row: 24 };
const flowX = (c) => 34 + c * 78; // the labels after the Final column get the remaining ~190 units
const flowY = (r) => FLOW.top + FLOW.row * Math.min(r, K);

function buildFlow(P) {
  const H = FLOW.top + FLOW.row * (K + 1) + 8;
  const s = svg("svg", { viewBox: `0 0 ${FLOW.W} ${H}`, class: "rf-flow", role: "img",
                         "aria-label": "Rank flow: each trace's rank in dense, sparse, merged and final" });
  ["Dense", "Sparse", "Merged", "Final"].forEach((name, c) => s.append(svg("text", { x: flowX(c), y: 16,
    "text-anchor": "middle", class: "rf-col" }, name)));
  s.append(svg("text", { x: 8, y: flowY(K) + 4, class: "rf-deeper" }, `>${K}`));
  // Kept for every frame, in drawing order: the lines under the dots, the dots under the labels.
  P.lines = Array.from({ length: K }, () => svg("polyline", { class: "rf-line", display: "none" }));
  P.dots = [0, 1, 2, 3].map((c) => Array.from({ length: K }, (_, i) => {
    const dot = svg("circle", { cx: flowX(c), cy: flowY(i), r: 4, class: "rf-dot", display: "none" });
    dot.append(svg("title"));
    return dot;
  }));
  P.labels = Array.from({ length: K }, (_, i) => svg("text", { x: flowX(3) + 10, y: flowY(i) + 4, class: "rf-label",
                                                             display: "none" }));
  s.append(...P.lines, ...P.dots.flat(), ...P.labels);
  return s;
}

function shown(node, on) {
  if (on) { if (node.hasAttribute("display")) node.removeAttribute("display"); } else attr(node, "display", "none");
}

function drawFlow(P, out) {
  const cols = flowColumns(P, out);
  const pos = cols.map(([, l]) => new Map(l.map((id, i) => [id, i])));
  const finalTop = cols[3][1].slice(0, K), inFinal = new Set(finalTop);
  P.lines.forEach((line, i) => {
    const id = finalTop[i];
    shown(line, id !== undefined);
    if (id === undefined) return;
    const pts = pos.map((m, c) => (m.has(id) ? `${flowX(c)},${flowY(m.get(id))}` : null)).filter(Boolean);
    attr(line, "points", pts.join(" "));
    attr(line, "class", id === P.selected ? "rf-line rf-line-sel" : "rf-line");
  });
  cols.forEach(([name, l], c) => P.dots[c].forEach((dot, i) => {
    const id = l[i];
    shown(dot, id !== undefined);
    if (id === undefined) return;
    attr(dot, "r", id === P.selected ? "6" : "4");
    attr(dot, "data-id", id);
    attr(dot, "class", inFinal.has(id) ? "rf-dot" : "rf-dot rf-dot-out");
    put(dot.firstChild, `${id}: #${i + 1} ${name.toLowerCase()}`);
  }));
  P.labels.forEach((label, i) => {
    const id = finalTop[i];
    shown(label, id !== undefined);
    if (id === undefined) return;
    attr(label, "data-id", id);
    put(label, shortId(id, 24));
  });
}

function explainLines(P, id, out) {
  const d = P.data, s = P.setting, lines = [];
  const rank = out.final.findIndex((t) => t.id === id);
  const t = rank >= 0 ? out.final[rank] : out.pool.find((x) => x.id === id);
  const f = t ? t.fused : out.merged.find((x) => x.id === id);
  if (rank >= 0) lines.push(["Final", `#${rank + 1} of ${out.final.length}, score ${g(t.score, 6)}`]);
  else if (out.dropped[id]) lines.push(["Final", `dropped before the final list (${out.dropped[id]})`]);
  else if (t) lines.push(["Final", `not in the final top ${s.recall_top_k}: #${out.pool.indexOf(t) + 1} in the pool`]);
  else lines.push(["Final", "not among this search's candidates"]);
  if (t && t.fact) lines.push(["Fact", "an injected fact: it sits before the fused candidates"]);
  if (f) {
    const names = d.list_names, mi = out.merged.indexOf(f) + 1;
    const how = s.fusion === "rrf" ? `RRF, k ${s.rrf_k}` : s.fusion === "convex" ? `convex, ${s.normalization}` : "DBSF (μ ± 3σ)";
    lines.push(["Fusion", `${how}: fused ${g(f.score, 6)} (merged #${mi})`]);
    if (out.weights && (out.weights[0] !== s.dense_weight || out.weights[1] !== s.sparse_weight)) {
      lines.push(["Adaptive", `this query's rules moved the weights: dense ${g(out.weights[0], 3)}, sparse `
        + `${g(out.weights[1], 3)} (set: ${g(s.dense_weight, 3)} / ${g(s.sparse_weight, 3)})`]);
    }
    f.ranks.forEach((r, i) => {
      const w = (out.weights || [s.dense_weight, s.sparse_weight])[i < d.dense.length ? 0 : 1];
      if (r === null) { lines.push([names[i], "absent: adds 0"]); return; }
      const term = s.fusion === "rrf" ? `${g(w, 2)} / (${s.rrf_k} + ${r})` : `${g(w, 2)} × normalised ${g(f.norms[i], 5)}`;
      lines.push([names[i], `rank ${r}: ${term} = ${g(f.contributions[i], 6)}`]);
    });
  }
  if (t && t.blend) {
    const b = t.blend, base = d.blend_fused && f ? `fused ${g(f.score, 5)} / top ${g(out.merged[0].score, 5)}` : "cognitive";
    lines.push(["Blend", `(1 − ${g(b.weight, 2)}) × base ${g(b.base, 5)} (${base}) + ${g(b.weight, 2)} × rerank ${g(b.rerank, 5)} = ${g(b.blended, 6)}`]);
  }
  if (t && t.split) lines.push(["Split", `half ${t.split.chosen} scored ${g(t.split.better, 4)} > whole ${g(t.split.whole, 4)}: + ${g(t.split.gain, 5)}`]);
  const dense = own(d.dense_terms, id);
  if (dense) lines.push(["Dense terms", dense.map((r) => `${r.term} ${g(r.value, 3)} × ${g(r.weight, 2)} = ${g(r.points, 4)}`).join(" · ")]);
  if (own(d.bm25_terms, id) !== undefined) {
    const b = own(d.bm25_terms, id);
    lines.push(["BM25 terms", b && b.length ? b.map((r) => `${r.term} ${g(r.score, 4)}` + (r.tf != null ? ` (tf ${r.tf}, idf ${g(r.idf, 3)})` : "")).join(" · ") : "no query term in this text"]);
  } else if (f) lines.push(["BM25 terms", "not sent for this id (the server's explanation below has them)"]);
  return lines;
}

function drawExplain(P, out) {
  const id = P.selected;
  if (!id) {
    P.explain.replaceChildren();
    P.explainKey = null;
    return;
  }
  const lines = explainLines(P, id, out), text = own(P.data.texts, id);
  const shape = JSON.stringify([id, text, lines.map(([k]) => k)]);
  if (shape === P.explainKey) { // the same trace and the same lines: only numbers move (a slider step)
    lines.forEach(([, v], i) => put(P.explainDd[i], v));
    return;
  }
  P.explainKey = shape;
  const head = el("div", { class: "rf-x-head" });
  head.append(el("b", {}, "Live, at the sliders' setting: "), el("code", { class: "rf-x-id" }, id));
  const list = el("dl", { class: "rf-x" });
  P.explainDd = [];
  for (const [k, v] of lines) {
    const dd = el("dd", {}, v);
    P.explainDd.push(dd);
    list.append(el("dt", {}, k), dd);
  }
  P.explain.replaceChildren(head, list);
  if (text) P.explain.append(el("p", { class: "rf-x-text" }, text));
  P.explain.dataset.explained = id;
}

function render(P) {
  const t0 = performance.now();
  const s = P.setting;
  syncControls(P);
  const out = P.live ? assemble(P.data, s) : P.serverOut;
  P.out = out;
  const caseMode = P.mode === "case" && P.case;
  const now = caseMode ? caseScoresNow(P) : null; // every query of the case, re-fused
  const ms = performance.now() - t0;
  if (caseMode) {
    drawCase(P, now);
  } else {
    drawTable(P, out);
    drawFlow(P, out);
    metricsLine(P, out.final.map((t) => t.id));
    drawExplain(P, out);
  }
  const live = caseMode ? P.case.live : P.live;
  const what = caseMode ? `the case's ${P.case.data.queries.length} queries` : "";
  const both0 = s.dense_weight === 0 && s.sparse_weight === 0;
  P.status.textContent = both0 ? "Both weights are 0: nothing ranks the merged list. Give one a weight."
    : live ? (sameSetting(s, P.data.setting) ? "The saved setting." : `Re-fused ${what}${what ? " " : ""}in your `
      + `browser in ${ms.toFixed(2)} ms; saved when you let go (or press a key).`) : caseMode ? P.case.why : P.why;
  P.root.dataset.renders = String(Number(P.root.dataset.renders || 0) + 1);
  P.root.dataset.drawMs = (performance.now() - t0).toFixed(2); // this frame's whole redraw, for benchmarks
  P.root.dataset.setting = JSON.stringify(s);
}

function serverOut(d) {
  const final = d.server_final.map(([id, score]) => ({ id, score }));
  return { final, merged: [], pool: final, dropped: Object.create(null) };
}

function receive(P, data) {
  if (P.pending && data.committed === P.pendingAt) P.pending = null; // the server has applied our last commit
  if (P.explainAt && data.explained === P.explainAt) P.explainAt = null; // ... and taken our last click
  const fresh = !P.data || P.data.sig !== data.sig;
  if (fresh) P.explainAt = null;
  const view = JSON.stringify([data.sig, data.setting, data.grades, data.server_final, data.adaptive]);
  // While our last click is on its way, a run's explained id is from before it (an earlier click's run landing
  // late): keep the row the person clicked last.
  const targetMoved = P.data && !P.explainAt && data.target !== P.data.target && data.target !== P.selected;
  const caseSame = (P.case ? P.case.sig : null) === (data.case ? data.case.sig : null);
  if (!fresh && view === P.view && !targetMoved && caseSame) { P.data = data; return; } // nothing changes here
  P.view = view;
  P.data = data;
  P.savedIds = data.server_final.map((x) => x[0]);
  P.serverOut = serverOut(data);
  // A new search, or the server's setting moved (the sidebar, or our own commit arriving): take it; while a drag
  // is on, or while our commit is still on its way (a rerun from before it), keep what the person set.
  if (P.pending && sameSetting(P.pending, data.setting)) P.pending = null;
  if (fresh) P.pending = null;
  if (fresh || (!P.dragging && !P.pending)) P.setting = { ...data.setting };
  if (fresh || !P.selected || targetMoved) P.selected = data.target || P.savedIds[0] || null;
  P.live = true; // adaptive weights too: the record's shift adapts whatever weights are set (fuse.mjs adaptWeights)
  P.why = "";
  if (P.live) {
    const mine = assemble(data, data.setting).final;
    const same = mine.length === data.server_final.length && mine.every((t, i) => t.id === data.server_final[i][0]
      && Math.abs(t.score - data.server_final[i][1]) <= 1e-9);
    if (!same) {
      P.live = false;
      P.why = "The browser's fusion does not reproduce the server's list for this search: showing the server's.";
    }
  }
  fillControls(P);
  receiveCase(P, data);
  P.render();
}

function build(parent, P) {
  const root = el("div", { class: "rf" });
  P.root = root;
  P.status = el("p", { class: "rf-status", role: "status" });
  P.metrics = el("div", { class: "rf-metrics", "aria-live": "polite" });
  const table = el("table", { class: "rf-final" });
  const head = el("tr");
  for (const h of ["#", "move", "id", "text", "score", "dense #", "sparse #", "grade"]) head.append(el("th", {}, h));
  const thead = el("thead");
  thead.append(head);
  P.tbody = el("tbody");
  table.append(thead, P.tbody);
  P.flow = buildFlow(P);
  P.explain = el("div", { class: "rf-explain", "aria-live": "polite" });
  const lower = el("div", { class: "rf-lower" });
  const flowBox = el("div", { class: "rf-flowbox" });
  flowBox.append(P.flow);
  lower.append(flowBox, P.explain);
  P.queryBox = el("div", { class: "rf-query" });
  P.queryBox.append(P.metrics, table, lower);
  root.append(buildControls(P), ...buildModes(P), P.status, P.caseBox, P.queryBox);
  const pick = (id) => {
    if (!id) return;
    const t0 = performance.now();
    P.selected = id;
    drawExplain(P, P.out);
    for (const tr of P.tbody.children) tr.classList.toggle("rf-sel", tr.dataset.id === id);
    drawFlow(P, P.out);
    P.root.dataset.pickMs = (performance.now() - t0).toFixed(2); // the click's own redraw, for benchmarks
    // After the frame: the explanation is painted before any message work. While our last commit has not come back
    // applied, this request carries the sidebar's values from before it: the server applies the commit again.
    P.explainAt = `${Date.now()}-${++P.clicks}`;
    P.later("explain", { id, pending: P.pending ? P.pendingAt : null, at: P.explainAt });
  };
  table.addEventListener("click", (e) => pick(e.target.closest("tr[data-id]")?.dataset.id));
  table.addEventListener("keydown", (e) => {
    const tr = e.target.closest("tr[data-id]");
    if (!tr) return;
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(tr.dataset.id); }
    if (e.key === "ArrowDown" && tr.nextElementSibling) { e.preventDefault(); tr.nextElementSibling.focus(); }
    if (e.key === "ArrowUp" && tr.previousElementSibling) { e.preventDefault(); tr.previousElementSibling.focus(); }
  });
  lower.addEventListener("click", (e) => pick(e.target.closest("[data-id]")?.getAttribute("data-id")));
  const loading = parent.querySelector(".rf-loading");
  if (loading) loading.remove();
  parent.append(root);
}

export default function (component) {
  const { data, parentElement, setTriggerValue, setStateValue } = component;
  if (data && data.mode === "present") { mountPresent(component); return; } // presenter mode's live step
  if (data && data.mode === "scopes") { mountScopes(component); return; } // Home's traces per scope
  let P = PANELS.get(parentElement);
  if (!P) {
    P = { dragging: false, pending: null, mode: "query", case: null, commits: 0, clicks: 0, explainAt: null };
    P.render = () => { P.frame = 0; render(P); };
    P.renderSoon = () => { if (!P.frame) P.frame = requestAnimationFrame(P.render); };
    P.commit = () => {
      const s = P.setting;
      if (s.dense_weight === 0 && s.sparse_weight === 0) return;
      if (sameSetting(s, P.data.setting)) return;
      P.pending = { ...s };
      P.pendingAt = `${Date.now()}-${++P.commits}`;
      // A state value, not a trigger: Streamlit keeps one trigger list per component and a newer request's list
      // replaces a queued one, so a commit followed at once by a row click was lost. State merges: the newest holds
      // every key. `at` makes each commit a change (its callback runs on a change only).
      P.keepLater("commit", { ...s, at: P.pendingAt });
    };
    build(parentElement, P);
    PANELS.set(parentElement, P);
  }
  P.send = (event, value) => setTriggerValue(event, value);
  P.later = (event, value) => requestAnimationFrame(() => setTimeout(() => P.send(event, value), 0));
  P.keepLater = (name, value) => requestAnimationFrame(() => setTimeout(() => setStateValue(name, value), 0));
  if (data) receive(P, data);
}
