// The browser twin of retrieval.judgments.live.case_scores: every query of a case re-fused under one setting and
// scored as the library scores it (metrics.ndcg_at_k and metrics.recall_at_k of the credited final list, the mean
// over the graded queries). Grades are read through a Map, so an id such as "constructor" is just an id.
// node imports it for tests/test_refuse_case_parity.py; ui/refuse.py inlines it (imports and `export` dropped).
import { assemble } from "./fuse.mjs";

export function credited(ids, credit) {
  // SnapshotQuery.credited: fact-graph traces credited to their source, first appearance kept.
  const out = [], seen = new Set();
  for (const id of ids) {
    const c = Object.prototype.hasOwnProperty.call(credit, id) ? credit[id] : id;
    if (!seen.has(c)) { seen.add(c); out.push(c); }
  }
  return out;
}

function total(xs) { let s = 0; for (const x of xs) s += x; return s; }

export function gradeMap(grades) { return new Map(Object.entries(grades || {})); }

export function ndcgK(ranked, grades, k) {
  // metrics.ndcg_at_k over a Map {id → grade}.
  const ideal = [...grades.values()].filter((g) => g > 0).sort((a, b) => b - a).slice(0, k);
  const idcg = total(ideal.map((g, i) => g / Math.log2(i + 2)));
  const dcg = total(ranked.slice(0, k).map((d, i) => (grades.has(d) ? grades.get(d) : 0.0) / Math.log2(i + 2)));
  return idcg > 0 ? dcg / idcg : 0.0;
}

export function recallK(ranked, grades, k) {
  // metrics.recall_at_k: the share of the ids graded > 0 found in the first k.
  const relevant = [...grades.keys()].filter((d) => grades.get(d) > 0);
  if (!relevant.length) return 0.0;
  const top = new Set(ranked.slice(0, k));
  return relevant.filter((d) => top.has(d)).length / relevant.length;
}

export function panelScores(data, finalIds, k = 10) {
  // The single-query panel's line: nDCG@k and recall@k of the credited `finalIds` and of the server's saved list, and
  // how many of the credited top k have no grade, with the grades and the credit map (Diagnostics.credit) the server
  // sent (metrics.credited: a fact row counts as its source trace, once). Compare scores the same list so.
  const grades = gradeMap(data.grades), credit = data.credit || {};
  const ids = credited(finalIds, credit), saved = credited((data.server_final || []).map((x) => x[0]), credit);
  return { ndcg: ndcgK(ids, grades, k), recall: recallK(ids, grades, k), ndcg0: ndcgK(saved, grades, k),
           recall0: recallK(saved, grades, k), ungraded: ids.slice(0, k).filter((i) => !grades.has(i)).length };
}

export function caseFinals(queries, setting) {
  // {qid → the final ids} of every query under `setting` (a query whose search failed: []).
  const out = new Map();
  for (const q of queries) out.set(q.qid, q.record ? assemble(q.record, setting).final.map((t) => t.id) : []);
  return out;
}

export function caseScores(queries, finals, k = 10) {
  // case_scores: {ndcg, recall, judged, queries: Map qid → {ndcg, recall}} over the queries with grades.
  const per = new Map();
  for (const q of queries) {
    const grades = q.gradeMap || gradeMap(q.grades);
    if (!grades.size) continue;
    const ids = credited(finals.get(q.qid) || [], q.credit || {});
    per.set(q.qid, { ndcg: ndcgK(ids, grades, k), recall: recallK(ids, grades, k) });
  }
  const vals = [...per.values()], n = vals.length;
  return { ndcg: n ? total(vals.map((v) => v.ndcg)) / n : 0.0, recall: n ? total(vals.map((v) => v.recall)) / n : 0.0,
           judged: n, queries: per };
}
