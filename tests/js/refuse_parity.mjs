// Reads [{payload, setting}, …] as JSON on stdin; writes each case's final list [[id, score], …] as JSON.
// Used by tests/test_refuse_parity.py to hold the browser's fusion (ui/refuse/fuse.mjs) against `assemble`.
import { assemble } from "../../ui/refuse/fuse.mjs";

let text = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => { text += c; });
process.stdin.on("end", () => {
  const out = JSON.parse(text).map(({ payload, setting }) =>
    assemble(payload, setting).final.map((t) => [t.id, t.score]));
  process.stdout.write(JSON.stringify(out));
});
