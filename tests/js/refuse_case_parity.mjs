// Reads [{queries, setting, k}, …] as JSON on stdin; writes each case's scores {ndcg, recall, judged, queries:
// {qid: {ndcg, recall}}} as JSON. Used by tests/test_refuse_case_parity.py to hold ui/refuse/case.mjs against
// retrieval.judgments.live.case_scores.
import { caseFinals, caseScores } from "../../ui/refuse/case.mjs";

let text = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => { text += c; });
process.stdin.on("end", () => {
  const out = JSON.parse(text).map(({ queries, setting, k }) => {
    const s = caseScores(queries, caseFinals(queries, setting), k);
    return { ndcg: s.ndcg, recall: s.recall, judged: s.judged, queries: Object.fromEntries(s.queries) };
  });
  process.stdout.write(JSON.stringify(out));
});
