// Reads [data, …] (the live panel's data: refuse_payload + grades) as JSON on stdin; re-fuses each at its own setting
// and writes the panel's scores {ndcg, recall, ndcg0, recall0, ungraded} as JSON. Used by tests/test_live_metrics.py
// to hold Inspect's live line against what Compare shows for the same list and grades.
import { assemble } from "../../ui/refuse/fuse.mjs";
import { panelScores } from "../../ui/refuse/case.mjs";

let text = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => { text += c; });
process.stdin.on("end", () => {
  const out = JSON.parse(text).map((data) => panelScores(data, assemble(data, data.setting).final.map((t) => t.id)));
  process.stdout.write(JSON.stringify(out));
});
