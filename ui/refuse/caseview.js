// The live panel's case mode (issue 35, item 3): every query of a case, sent once, re-fused in the browser on each
// input event; the case's mean nDCG@10 and recall@10 and the change against the saved setting, and which queries win
// and lose. The numbers are the library's (case.mjs is held to retrieval.judgments.live by a parity test, and the
// panel checks itself against the server's saved numbers before it goes live). Text goes in by textContent only.

const CASE_SHOWN = 5; // queries listed on each side (wins, losses)
const TINY = 1e-12; // a change smaller than this is no change

function signed3(x) { return (x > TINY ? "+" : x < -TINY ? "−" : "±") + Math.abs(Math.abs(x) > TINY ? x : 0).toFixed(3); }

function caseSaved(c) {
  // The server's (library's) scores of the saved setting, with queries as a Map like caseScores gives.
  return { ndcg: c.saved.ndcg, recall: c.saved.recall, judged: c.saved.judged,
           queries: new Map(Object.entries(c.saved.queries)) };
}

function caseCheck(c) {
  // Why the browser cannot re-fuse this case (null: it can): a list or metric it would not reproduce for the saved
  // setting (under adaptive weights each query's record carries its own shift).
  const savedFinals = new Map();
  for (const q of c.queries) {
    if (!q.record) { savedFinals.set(q.qid, []); continue; }
    const mine = assemble(q.record, q.record.setting).final, theirs = q.record.server_final;
    const same = mine.length === theirs.length && mine.every((t, i) => t.id === theirs[i][0]
      && Math.abs(t.score - theirs[i][1]) <= 1e-9);
    if (!same) return `The browser's fusion does not reproduce query ${q.qid}'s list.`;
    savedFinals.set(q.qid, mine.map((t) => t.id));
  }
  const mine = caseScores(c.queries, savedFinals, c.k), saved = caseSaved(c);
  const off = Math.abs(mine.ndcg - saved.ndcg) > 1e-9 || Math.abs(mine.recall - saved.recall) > 1e-9;
  return off ? "The browser's case metric does not reproduce the server's." : null;
}

function receiveCase(P, data) {
  const c = data.case;
  if (!c) {
    P.case = null;
    P.mode = "query";
  } else if (!P.case || P.case.sig !== c.sig) {
    const fresh = !P.case || P.case.data.case !== c.case;
    for (const q of c.queries) q.gradeMap = gradeMap(q.grades);
    const why = caseCheck(c);
    P.case = { data: c, sig: c.sig, live: !why, why, saved: caseSaved(c),
               byQid: new Map(c.queries.map((q) => [q.qid, q])) };
    if (fresh) P.mode = "case";
  }
  P.modeBar.hidden = !P.case;
  if (P.case) {
    const c2 = P.case.data;
    P.modeCase.textContent = `Case ${c2.case} · ${P.case.saved.judged} graded of ${c2.queries.length} queries`;
  }
  syncMode(P);
}

function syncMode(P) {
  const caseMode = Boolean(P.case) && P.mode === "case";
  P.modeQuery.setAttribute("aria-pressed", String(!caseMode));
  P.modeCase.setAttribute("aria-pressed", String(caseMode));
  P.caseBox.hidden = !caseMode;
  P.queryBox.hidden = caseMode;
  P.root.dataset.mode = caseMode ? "case" : "query";
}

function buildModes(P) {
  const bar = el("div", { class: "rf-modes", role: "group", "aria-label": "What the live metric is over" });
  P.modeQuery = el("button", { type: "button", class: "rf-mode", "data-mode": "query" }, "This query");
  P.modeCase = el("button", { type: "button", class: "rf-mode", "data-mode": "case" }, "Case");
  bar.append(P.modeQuery, P.modeCase);
  bar.hidden = true;
  for (const b of [P.modeQuery, P.modeCase]) {
    b.addEventListener("click", () => { P.mode = b.dataset.mode; syncMode(P); P.render(); });
  }
  P.modeBar = bar;
  P.caseBox = el("div", { class: "rf-case", "aria-live": "polite" });
  P.caseBox.hidden = true;
  return [bar, P.caseBox];
}

function caseMetric(name, v, v0, attr) {
  const s = el("span", { class: "rf-metric", [attr]: String(v) });
  s.append(el("b", {}, `mean ${name} ${v.toFixed(3)}`),
           el("span", { class: v - v0 > TINY ? "rf-up" : v0 - v > TINY ? "rf-down" : "rf-muted" },
              ` (${signed3(v - v0)} vs saved)`));
  return s;
}

function caseRow(P, r) {
  const q = P.case.byQid.get(r.qid), li = el("li", { "data-qid": r.qid });
  const pre = P.data.prefix || "i_", u = new URL(location.href);
  u.searchParams.set(`${pre}q`, q.query);
  u.searchParams.set(`${pre}scope`, q.scope);
  u.searchParams.delete(`${pre}id`);
  const a = el("a", { class: "rf-cq", href: u.toString(), title: `Open in Inspect: ${q.query} (${q.scope || "all scopes"})` },
               shortId(q.query, 56));
  a.addEventListener("click", (e) => { // this page, this session: the case stays chosen
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    P.mode = "query";
    syncMode(P);
    P.render();
    P.later("open", { query: q.query, scope: q.scope });
  });
  li.append(a,
            el("span", { class: "rf-cn" }, ` nDCG ${r.nd0.toFixed(3)} → ${r.nd.toFixed(3)} (${signed3(r.d)})`
              + (Math.abs(r.dr) > TINY ? ` · recall ${r.rc0.toFixed(2)} → ${r.rc.toFixed(2)}` : "")));
  return li;
}

function caseSide(P, title, rows, cls) {
  const box = el("div", { class: "rf-case-side " + cls });
  box.append(el("b", {}, `${title} (${rows.length})`));
  const list = el("ol", {});
  rows.slice(0, CASE_SHOWN).forEach((r) => list.append(caseRow(P, r)));
  box.append(list);
  if (rows.length > CASE_SHOWN) box.append(el("span", { class: "rf-muted" }, `and ${rows.length - CASE_SHOWN} more`));
  return box;
}

function caseScoresNow(P) {
  // Every query of the case re-fused under the panel's setting (or the saved scores when it cannot be).
  const C = P.case, c = C.data;
  return C.live ? caseScores(c.queries, caseFinals(c.queries, P.setting), c.k) : C.saved;
}

function drawCase(P, now) {
  const C = P.case, c = C.data, saved = C.saved;
  const rows = [...now.queries].map(([qid, v]) => {
    const w = saved.queries.get(qid) || { ndcg: 0, recall: 0 };
    return { qid, nd: v.ndcg, nd0: w.ndcg, rc: v.recall, rc0: w.recall, d: v.ndcg - w.ndcg, dr: v.recall - w.recall };
  });
  const up = (r) => r.d > TINY || (Math.abs(r.d) <= TINY && r.dr > TINY);
  const down = (r) => r.d < -TINY || (Math.abs(r.d) <= TINY && r.dr < -TINY);
  const wins = rows.filter(up).sort((a, b) => b.d - a.d || b.dr - a.dr);
  const losses = rows.filter(down).sort((a, b) => a.d - b.d || a.dr - b.dr);
  const line = el("div", { class: "rf-case-metrics" });
  line.append(el("span", {}, `Case ${c.case}:`), caseMetric("nDCG@10", now.ndcg, saved.ndcg, "data-ndcg"),
              caseMetric("recall@10", now.recall, saved.recall, "data-recall"));
  const failed = c.queries.filter((q) => q.error).length;
  const note = el("p", { class: "rf-muted rf-case-note" }, `Over the ${now.judged} graded queries of ${c.queries.length}`
    + (failed ? `; ${failed} could not be searched and score 0` : "") + `. ${rows.length - wins.length - losses.length}`
    + " unchanged against the saved setting.");
  const sides = el("div", { class: "rf-case-sides" });
  sides.append(caseSide(P, "Loses", losses, "rf-case-loses"), caseSide(P, "Wins", wins, "rf-case-wins"));
  P.caseBox.replaceChildren(line, note, sides);
  if (!C.live) P.caseBox.prepend(el("p", { class: "rf-status" }, `${C.why} Showing the saved setting's numbers.`));
}
