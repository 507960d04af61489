"""Pick a labelled query set for Compare and Tune: a case in this store (graded in Inspect or imported),
BEIR queries + qrels, or a judgments .jsonl — limited to the scopes this visitor may see."""
from __future__ import annotations

import streamlit as st

from retrieval.eval.datasets import beir_judgments, judgments_from_bytes
from retrieval.judgments.store import JudgmentStoreError

from .access import session_access
from .cache import judgments
from .glossary import helps
from .grading import visible_case_names
from .text import plain
from .widgets import scope_picker

CASES, BEIR, JSONL = "a case in this store", "BEIR queries + qrels", "judgments .jsonl"


def pick_labelled_set(ws, prefix: str) -> list:
    """The chosen set's `LabelledQuery`s that this visitor may see (empty when none is chosen yet). A visitor
    limited to some scopes is offered only the cases all of whose queries are in those scopes; a damaged
    judgments table turns cases off with its message, the uploads still work."""
    access = session_access()
    js = judgments(ws.uri)
    try:
        names = visible_case_names(js, access)
        broken = None
    except JudgmentStoreError as exc:
        names, broken = [], str(exc)
    src = st.radio("Labelled queries", [CASES, BEIR, JSONL], horizontal=True, key=f"{prefix}src",
                   help="Cases hold queries with the grades given in Inspect (or imported: "
                        "`python -m retrieval case import`). The demo corpus ships the case `demo`.\n\n"
                        + helps("BEIR", "qrels"))
    queries: list = []
    try:
        if src == CASES:
            if broken:
                st.warning(f"Grading and cases are off: {plain(broken)}")
                return []
            if access.limited:  # said always, not only when one is left out: no count of others' cases
                st.caption("Only cases whose queries all lie in your scopes are listed.")
            if not names:
                st.info("No case of yours yet: grade results in Inspect and add the query to a case."
                        if access.limited else "No case in this store yet: grade results in Inspect and add the "
                        "query to a case, or import one with `python -m retrieval case import NAME --queries … "
                        "--qrels …`.")
                return []
            name = st.selectbox("Case", names, index=names.index("demo") if "demo" in names else 0,
                                key=f"{prefix}case")
            queries = js.labelled(name)
            if not queries:
                st.info(f"Case {plain(name)} has no graded query yet: grade its results in Inspect.")
        elif src == BEIR:
            st.caption("Load the BEIR corpus on the Corpus page first (a zipped BEIR folder), into the scope chosen "
                       "here.")
            c1, c2, c3 = st.columns(3)
            qfile = c1.file_uploader("queries.jsonl", type=["jsonl"], key=f"{prefix}bq")
            rfile = c2.file_uploader("qrels (.tsv)", type=["tsv"], key=f"{prefix}br")
            with c3:
                scope = scope_picker(ws, f"{prefix}bscope", label="Scope the corpus is in", allow_all=False, bind=False)
            if qfile is not None and rfile is not None:
                queries = beir_judgments(qfile.getvalue(), rfile.getvalue(), scope)
        else:
            st.caption('One JSON object per line: {"qid": "q1", "query": "...", "scope": "user:u1", '
                       '"relevant": {"trace-id": 2}}. Large BEIR sets: `python -m retrieval eval --dataset beir:PATH`.')
            up = st.file_uploader("Judgments", type=["jsonl"], key=f"{prefix}upload")
            if up is not None:
                queries = judgments_from_bytes(up.getvalue(), source=up.name)
    except ValueError as exc:
        st.error(f"Could not read the judgments: {plain(exc)}")
        return []
    except JudgmentStoreError as exc:  # the table broke between listing and reading
        st.warning(f"Grading and cases are off: {plain(exc)}")
        return []
    hidden = [q for q in queries if not access.sees(q.scope)]
    if hidden:  # the check lives in retrieval.access; a query in another scope is never run
        st.warning(f"{len(hidden)} of {len(queries)} queries are in scopes you may not see; they are left out.")
    return [q for q in queries if access.sees(q.scope)]
