"""The aligned stage table: one row per trace, its text once, its rank and score in each of the five stages.

Pure functions (no Streamlit; tested on their own): the rows, their order when sorted by any stage, what
moved against the previous setting, and the table as HTML. Every piece of trace text and every id is
escaped here (`html.escape`), so the markup is ours alone; query terms are marked with `<mark>`.
"""
from __future__ import annotations

import html
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from retrieval.bm25.index import default_tokenizer

from .view import DASH, UNGRADED, num, origin, snippet, split_mark

STAGE_ORDER = ("dense", "sparse", "merged", "reranked", "final")
STAGE_HEADS = {"dense": "Dense", "sparse": "BM25", "merged": "Merged", "reranked": "Reranked", "final": "Final"}
ORIGIN_WORDS = {"both": "both", "dense": "dense", "sparse": "BM25", "fact": "fact"}
SNIPPET = 150  # characters of text per row: two or three lines in the text column at 1366 px
ID_CHARS = 26


@dataclass(frozen=True)
class Row:
    """One trace of the aligned table. `ranks` / `scores` hold None where the stage does not list it."""

    id: str
    origin: str  # dense | sparse | both | fact
    text: str  # what the final list ranks: a split trace's chosen half, otherwise the stored text
    split: str  # "✂ half b: 0.61 vs whole 0.42" or ""
    ranks: dict[str, int | None] = field(default_factory=dict)
    scores: dict[str, float | None] = field(default_factory=dict)
    move: str = ""  # "▲3", "▼2", "new", "left" or "" (against the previous setting)


def moves(before: Sequence[str] | None, after: Sequence[str]) -> dict[str, str]:
    """What moved in the final list against `before` (the list under the previous setting): "▲n" up n
    places, "▼n" down n, "new" entered, "left" dropped out. Unmoved ids are left out; `before` None: {}."""
    if before is None:
        return {}
    old = {tid: n for n, tid in enumerate(before)}
    out: dict[str, str] = {}
    for n, tid in enumerate(after):
        if tid not in old:
            out[tid] = "new"
        elif old[tid] != n:
            out[tid] = f"▲{old[tid] - n}" if old[tid] > n else f"▼{n - old[tid]}"
    now = set(after)
    out.update({tid: "left" for tid in before if tid not in now})
    return out


def remember_final(memory: dict, query: str, scope: object, setting: object, final: Sequence[str],
                   keep: int = 20) -> tuple[bool, dict[str, str]]:
    """Per query and scope, the final list under the current setting and what moved against the previous one.

    `memory` (session state) maps (query, scope) to {"setting", "final", "moved"}. Returns (whether the setting
    changed on this run, the marks of `moves`). A rerun under the same setting (a row click, a grade) keeps the
    marks and reports no change; the same setting giving another list (the store read at another version) drops
    them; a new query or scope starts with none. The `keep` latest entries stay.
    """
    key = (query, str(scope))
    entry = memory.get(key)
    if entry is not None and entry["setting"] == setting:
        if entry["final"] != list(final):  # the same setting ranked anew (another store version): no stale marks
            entry.update(final=list(final), moved={})
        return False, entry["moved"]
    moved = moves(entry["final"], final) if entry is not None else {}
    memory.pop(key, None)
    memory[key] = {"setting": setting, "final": list(final), "moved": moved}
    for old in list(memory)[:-keep]:
        del memory[old]
    return entry is not None, moved


def legend(moved: bool) -> str:
    """The caption under the table (plain words; no Markdown in it)."""
    out = ("Each stage column: the rank over the score; — = not in that list; grey = below the top shown. "
           "found by: dense = the embedding only · BM25 = BM25 only · both · fact = the fact graph · "
           "✂ = split (a half replaced the text). Click a row to explain it.")
    if moved:
        out += " moved: against the previous setting — ▲ up, ▼ down, new = entered the final list, left = dropped out."
    return out


def short_id(tid: str, limit: int = ID_CHARS) -> str:
    """Long ids keep their head and tail ("fact-graph:user:li…640000"); the full id goes in a tooltip."""
    if len(tid) <= limit:
        return tid
    tail = max(6, limit // 3)
    return tid[: limit - tail - 1] + "…" + tid[-tail:]


def aligned_rows(diag, whole: Mapping[str, str], depth: int, moved: Mapping[str, str] | None = None) -> list[Row]:
    """A row for every trace in the top `depth` of any stage, and for every trace that left the final list."""
    moved = moved or {}
    ids: list[str] = []
    for stage in STAGE_ORDER:
        ids += [i for i in list(diag.stage_ids.get(stage, ()))[:depth] if i not in ids]
    ids += [i for i, m in moved.items() if m == "left" and i not in ids]
    pos = {s: {tid: n for n, tid in enumerate(diag.stage_ids.get(s, ()), start=1)} for s in STAGE_ORDER}
    rows = []
    for tid in ids:
        mark = split_mark(diag.splits.get(tid)) if tid in diag.stage_ids.get("final", ()) else ""
        text = diag.pool[tid].content if mark and tid in diag.pool else whole.get(tid, "")
        rows.append(Row(id=tid, origin=origin(tid, diag.stage_ids, diag.fact_ids), text=text, split=mark,
                        ranks={s: pos[s].get(tid) for s in STAGE_ORDER},
                        scores={s: diag.stage_scores.get(s, {}).get(tid) for s in STAGE_ORDER},
                        move=moved.get(tid, "")))
    return rows


def sort_rows(rows: Sequence[Row], stage: str) -> list[Row]:
    """By rank in `stage`; the traces it does not list follow, by their best rank anywhere."""
    big = 10**9

    def key(r: Row) -> tuple:
        own = r.ranks.get(stage)
        best = min((v for v in r.ranks.values() if v is not None), default=big)
        return (own is None, own or best, best, r.id)

    return sorted(rows, key=key)


def marked(text: str, query: str, limit: int = SNIPPET) -> str:
    """An escaped snippet of `text` around the first query term, each query term in <mark>; one line."""
    terms = set(default_tokenizer(query or ""))
    out = []
    for piece in re.split(r"([^\W_]+)", snippet(text, query, limit)):
        esc = html.escape(piece)
        out.append(f"<mark>{esc}</mark>" if piece.lower() in terms else esc)
    return "".join(out)


def _stage_cell(r: Row, stage: str, depth: int) -> str:
    rank, score = r.ranks.get(stage), r.scores.get(stage)
    if rank is None:
        return f"<td class='rt-st rt-none' data-stage='{stage}'>{DASH}</td>"
    deep = " rt-deep" if rank > depth else ""
    return (f"<td class='rt-st{deep}' data-stage='{stage}'><span class='rt-rank'>{rank}</span>"
            f"<span class='rt-score'>{html.escape(num(score))}</span></td>")


def _move_cell(move: str) -> str:
    kind = {"▲": "up", "▼": "down"}.get(move[:1], move or "none")
    title = {"up": "up {n} places", "down": "down {n} places", "new": "entered the final list",
             "left": "left the final list"}.get(kind, "")
    tip = f" title='{title.format(n=move[1:])} against the previous setting'" if title else ""
    return f"<td class='rt-move rt-{kind}'{tip}>{html.escape(move)}</td>"


def _row_html(r: Row, query: str, depth: int, hot: bool, unrated: bool = False) -> str:
    tid = html.escape(r.id, quote=True)
    by = ORIGIN_WORDS[r.origin]
    split = f" <span class='rt-split'>{html.escape(r.split)}</span>" if r.split else ""
    if unrated:
        split += f" <span class='rt-ungraded' title='No rater has graded this result for this query'>{UNGRADED}</span>"
    text = marked(r.text, query) if r.text else "<i>(not in the store)</i>"
    cls = "rt-row" + (" rt-hot" if hot else "") + (" rt-left" if r.move == "left" else "")
    return (f"<tr class='{cls}' data-pick='{tid}' tabindex='0' title='Click to explain {tid}'>"
            + _move_cell(r.move)
            + f"<td class='rt-trace'><div class='rt-meta'><span class='rt-id' title='{tid}'>"
              f"{html.escape(short_id(r.id))}</span> <span class='rt-by rt-by-{r.origin}'>{by}</span>{split}</div>"
              f"<div class='rt-text'>{text}</div></td>"
            + "".join(_stage_cell(r, s, depth) for s in STAGE_ORDER) + "</tr>")


def _head(sort: str, notes: Mapping[str, str]) -> str:
    cells = ["<th class='rt-move'>moved</th>", "<th class='rt-trace'>trace · found by · text</th>"]
    for s in STAGE_ORDER:
        on = " rt-sorted" if s == sort else ""
        arrow = " ▾" if s == sort else ""
        note = f"<span class='rt-note'>{html.escape(notes[s])}</span>" if notes.get(s) else ""
        cells.append(f"<th class='rt-st{on}' data-sort-stage='{s}' title='Sort by {STAGE_HEADS[s]} rank'>"
                     f"{STAGE_HEADS[s]}{arrow}{note}</th>")
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def table_html(rows: Sequence[Row], query: str, sort: str, depth: int, target: str | None = None,
               notes: Mapping[str, str] | None = None, unrated: Collection[str] = ()) -> str:
    """The table as one HTML fragment (with its style). Each row carries its id in `data-pick` (a click
    explains it); each stage cell shows the rank over the score, ranks deeper than `depth` greyed; `ungraded`
    final results are marked as such."""
    body = "".join(_row_html(r, query, depth, r.id == target, r.id in unrated) for r in rows)
    sort_attr = html.escape(sort, quote=True)
    return (f"<style>{CSS}</style><div class='rt-wrap'><table class='rt-stages' data-sort='{sort_attr}'>"
            "<colgroup><col class='rt-c-move'><col class='rt-c-trace'>" + "<col class='rt-c-st'>" * 5
            + "</colgroup>" + _head(sort, notes or {}) + f"<tbody>{body}</tbody></table></div>")


CSS = """
.rt-wrap{width:100%;overflow-x:hidden}
table.rt-stages{width:100%;table-layout:fixed;border-collapse:collapse;font-size:0.86rem;line-height:1.3}
.rt-stages col.rt-c-move{width:3.2rem}.rt-stages col.rt-c-st{width:4.6rem}
.rt-stages th{font-weight:600;text-align:left;padding:4px 6px;border-bottom:2px solid rgba(49,51,63,.25);
 vertical-align:bottom;font-size:0.8rem}
.rt-stages th.rt-st{cursor:pointer;text-align:center;white-space:nowrap;overflow:hidden}
.rt-stages th.rt-sorted{background:rgba(255,75,75,.09)}
.rt-stages .rt-note{display:block;font-weight:400;font-size:0.7rem;opacity:.7;white-space:normal}
.rt-stages td{padding:4px 6px;border-bottom:1px solid rgba(49,51,63,.12);vertical-align:top}
.rt-stages tr.rt-row{cursor:pointer}
.rt-stages tr.rt-row:hover{background:rgba(28,131,225,.07)}
.rt-stages tr.rt-row:focus{outline:2px solid rgba(28,131,225,.6)}
.rt-stages tr.rt-hot{background:rgba(255,189,69,.22)}
.rt-stages tr.rt-left{opacity:.6}
.rt-stages td.rt-st{text-align:center;white-space:nowrap}
.rt-stages .rt-rank{display:block;font-weight:600;font-size:0.95rem}
.rt-stages .rt-score{display:block;font-size:0.75rem;opacity:.75;font-variant-numeric:tabular-nums}
.rt-stages td.rt-deep{opacity:.45}.rt-stages td.rt-none{opacity:.35}
.rt-stages td.rt-move{font-weight:600;white-space:nowrap;text-align:center}
.rt-stages td.rt-up{color:#1a7f37}.rt-stages td.rt-down{color:#cf222e}
.rt-stages td.rt-new{color:#0969da}.rt-stages td.rt-left{color:#6e7781}
.rt-stages .rt-meta{font-size:0.75rem;margin-bottom:2px}
.rt-stages .rt-id{font-family:ui-monospace,monospace;opacity:.8}
.rt-stages .rt-by{border-radius:3px;padding:0 4px;color:#fff;font-size:0.7rem}
.rt-stages .rt-by-dense{background:#1f77b4}.rt-stages .rt-by-sparse{background:#c25e00}
.rt-stages .rt-by-both{background:#9467bd}.rt-stages .rt-by-fact{background:#2ca02c}
.rt-stages .rt-split{background:rgba(255,189,69,.35);border-radius:3px;padding:0 4px}
.rt-stages .rt-ungraded{border:1px dashed rgba(49,51,63,.45);border-radius:3px;padding:0 4px;font-size:0.7rem}
.rt-stages .rt-text{overflow-wrap:anywhere}
.rt-stages mark{background:rgba(255,214,10,.55);padding:0 1px}
"""
