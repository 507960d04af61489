"""What context costs (issue 36 item 5) and where it must cost nothing: a writer that keeps writing to its threads
reads each thread once (store/thread_cache.py), never a version another writer moved past; a store of documents
without a thread (SciFact, BEIR) indexes and ranks exactly the same with the setting on as off."""
from __future__ import annotations

import random

import pytest

import retrieval.store.threads as threads
from retrieval.bm25 import BM25Index
from retrieval.eval.datasets import BEIR_SCOPE, BEIR_TIME
from retrieval.models import HashingEmbedder
from retrieval.store.context import NEW_STORE_CONTEXT, OFF, ContextSetting, by_thread, contexts
from retrieval.store.thread_cache import ThreadCache
from retrieval.types import MemoryTrace
from retrieval.workspace import Workspace

from conftest import NOW, U1, make_trace

W1 = ContextSetting(window=1, sides="both", max_chars=300)


def ws_at(uri, setting: ContextSetting) -> Workspace:
    ws = Workspace(str(uri), embedder=HashingEmbedder(32), clock=lambda: NOW, fact_extractor=None)
    ws.store.new_context = setting
    return ws


def turn(tid: str, text: str, pos: int, thread: str = "s1") -> MemoryTrace:
    return make_trace(tid, text, "u1", thread=thread, position=pos)


@pytest.fixture
def thread_reads(monkeypatch) -> list[int]:
    """Rows each thread scan of a context write returned (scans by id alone are not counted)."""
    seen: list[int] = []
    scan = threads._scan

    def counted(tbl, where):
        got = scan(tbl, where)
        if "thread IN" in where:
            seen.append(len(got))
        return got

    monkeypatch.setattr(threads, "_scan", counted)
    return seen


def test_a_writer_reads_its_threads_once_while_it_keeps_writing(tmp_path, thread_reads):
    ws = ws_at(tmp_path / "s", W1)
    ws.ingest([turn("a0", "Did you adopt the greyhound?", 0), turn("b0", "Where is the invoice?", 0, "s2")])
    ws.ingest([turn("a1", "Yes, last Tuesday!", 1), turn("b1", "In the blue folder", 1, "s2")])
    ws.ingest([turn("a2", "What colour is the lead?", 2), turn("b2", "Thanks", 2, "s2")])
    ws.ingest([turn("a3", "Red", 3), turn("b3", "Bye", 3, "s2")])
    # the first write has no table to read; the second reads the two threads (the store recorded its identity after
    # the first commit, a version of its own); the next ones take them from the writer's own last commit
    assert thread_reads == [2]
    got = {t.id: t.context for t in ws.store.get(["a1", "a2", "a3", "b1", "b2", "b3"])}
    assert got == {"a1": "Did you adopt the greyhound?", "a2": "Yes, last Tuesday!", "a3": "What colour is the lead?",
                   "b1": "Where is the invoice?", "b2": "In the blue folder", "b3": "Thanks"}


def test_another_writers_commit_is_read_from_the_table_not_from_what_was_kept(tmp_path, thread_reads):
    uri = tmp_path / "s"
    mine, theirs = ws_at(uri, W1), ws_at(uri, W1)
    mine.ingest([turn("t0", "Did you adopt the greyhound?", 0)])
    mine.ingest([turn("t1", "Yes, last Tuesday!", 1)])
    mine.ingest([turn("x0", "Another thread", 0, "s9")])  # from here on, my writes keep thread s1 (no read)
    thread_reads.clear()
    mine.ingest([turn("x1", "Still another", 1, "s9")])
    assert thread_reads == []
    theirs.ingest([turn("t1", "No, the whippet", 1)])  # another writer edits the turn my next one follows
    thread_reads.clear()
    mine.ingest([turn("t2", "What colour is the lead?", 2)])
    assert thread_reads == [2]  # my kept thread was for an older version: read again
    assert [t.context for t in mine.store.get(["t1", "t2"])] == ["Did you adopt the greyhound?", "No, the whippet"]
    assert [i for i, _ in mine.bm25.search("whippet", top_k=5, scopes=[U1])] == ["t1", "t2"]


def test_a_delete_after_kept_threads_rewrites_the_follower(tmp_path, thread_reads):
    ws = ws_at(tmp_path / "s", W1)
    ws.ingest([turn("t0", "Did you adopt the greyhound?", 0), turn("t1", "Yes, last Tuesday!", 1)])
    ws.ingest([turn("t2", "What colour is the lead?", 2)])
    thread_reads.clear()
    ws.delete(["t1"])
    ws.ingest([turn("t3", "That one, the blue one", 3)])
    assert thread_reads == []  # both took the thread from the writer's own last commit
    assert [t.context for t in ws.store.get(["t2", "t3"])] == ["Did you adopt the greyhound?",
                                                                 "What colour is the lead?"]



def test_a_writer_knows_which_ids_are_stored_only_while_no_other_writer_committed(tmp_path, monkeypatch):
    """The writer answers "which of my ids are stored, and in which thread?" from the ids it keeps (no scan for
    the batch's ids) while the table is at the version its own last commit made; after another writer's commit it
    reads them from the table again, and so finds a turn that writer stored in another thread."""
    learned: list[tuple[ThreadCache, int]] = []
    id_scans: list[str] = []
    learn, scan = ThreadCache.learn_ids, threads._scan

    def counted_learn(self, ids, keys):
        learned.append((self, len(ids)))
        learn(self, ids, keys)

    def counted_scan(tbl, where):
        if "id IN" in where:
            id_scans.append(where)
        return scan(tbl, where)

    monkeypatch.setattr(ThreadCache, "learn_ids", counted_learn)
    monkeypatch.setattr(threads, "_scan", counted_scan)
    uri = tmp_path / "s"
    mine, theirs = ws_at(uri, W1), ws_at(uri, W1)
    mine.ingest([turn("a0", "Did you adopt the greyhound?", 0)])
    mine.ingest([turn("a1", "Yes, last Tuesday!", 1)])
    mine.ingest([turn("a2", "What colour is the lead?", 2)])
    learned.clear()
    mine.ingest([turn("a3", "Red", 3)])
    assert (learned, id_scans) == ([], [])  # known from my own commits: no scan for the ids
    theirs.ingest([turn("x0", "Where is the invoice?", 0, "s9"), turn("x1", "In the blue folder", 1, "s9"),
                   turn("x2", "Thanks", 2, "s9")])
    mine.ingest([turn("x1", "Whippet", 4)])  # their turn moved into my thread: its old thread's follower changes
    # theirs read the 4 ids stored before its write; mine, after it, the 7 (the table moved past my last commit)
    assert [n for c, n in learned] == [4, 7] and learned[1][0] is mine.store.writes.threads
    assert {t.id: t.context for t in mine.store.get(["x1", "x2"])} == {"x1": "Red", "x2": "Where is the invoice?"}
    assert mine.store.writes.threads.ids is not None and mine.store.writes.threads.ids["x1"] == ("user", "u1", "s1")
    assert [i for i, _ in mine.bm25.search("invoice", top_k=5, scopes=[U1])] == ["x0", "x2"]


def test_a_writer_keeps_no_ids_of_a_table_past_its_bound(tmp_path):
    ws = ws_at(tmp_path / "s", W1)
    ws.store.writes.threads = ThreadCache(max_rows=2)
    ws.ingest([turn("t0", "Did you adopt the greyhound?", 0), turn("t1", "Yes, last Tuesday!", 1)])
    ws.ingest([turn("t2", "What colour is the lead?", 2)])
    assert ws.store.writes.threads.ids is None  # 2 rows stored before the write: read; 3 after it: none kept
    ws.ingest([turn("t1", "No, the whippet", 1, "s2")])  # a move, found by the scan for the batch's ids
    assert [t.context for t in ws.store.get(["t1", "t2"])] == [None, "Did you adopt the greyhound?"]


WORDS = ["greyhound", "invoice", "folder", "lead", "blue", "tuesday", "whippet", "colour", "red", "bye", "adopt",
         "thanks"]


def random_writes(seed: int) -> list[tuple]:
    """Writes as agents make them, mostly appending turns to a few threads (some batches touch every thread),
    with edits of stored turns, moves to another place or thread, turns without a position, deletes and
    (de)activations in between."""
    rng = random.Random(seed)
    nxt: dict[str, int] = {}
    ids: list[str] = []
    ops: list[tuple] = []
    for n in range(16):
        r = rng.random()
        if r < 0.65 or not ids:
            batch = []
            for k in range(rng.randint(1, 4)):
                thread = rng.choice(["s1", "s2", "s3"])
                pos = nxt.get(thread, 0)
                nxt[thread] = pos + 1
                text = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
                if rng.random() < 0.1:
                    pos = None  # after every positioned turn
                batch.append(("new", f"t{n}-{k}", text, thread, pos, rng.random() * 3))
            if ids and rng.random() < 0.3:  # an edit, or a move to another place or thread
                batch.append(("new", rng.choice(ids), rng.choice(WORDS), rng.choice(["s1", "s2", "s3"]),
                              rng.randint(0, 6), rng.random() * 3))
            ops.append(("ingest", batch))
            ids += [b[1] for b in batch]
        elif r < 0.8:
            ops.append(("delete", [rng.choice(ids)]))
        else:
            ops.append(("active", rng.sample(ids, min(len(ids), 2)), rng.random() < 0.5))
    return ops


def apply_writes(ws: Workspace, ops: list[tuple]) -> None:
    for op in ops:
        if op[0] == "ingest":
            ws.ingest([make_trace(i, text, "u1", days, thread=thread, position=pos)
                       for _, i, text, thread, pos, days in op[1]])
        elif op[0] == "delete":
            ws.delete(op[1])
        else:
            ws.set_active(op[1], op[2])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("setting", [NEW_STORE_CONTEXT, W1], ids=["new-store-default", "w1-both"])
def test_random_writes_store_and_score_as_a_writer_that_keeps_no_thread(tmp_path, seed, setting):
    """A writer that keeps its threads (and assembles only appended turns' contexts from a kept thread's last
    turns) stores every row, context and BM25 score exactly as one that reads every thread from the table on every
    write, and as the contexts of the stored threads recomputed from scratch."""
    kept, read = ws_at(tmp_path / "kept", setting), ws_at(tmp_path / "read", setting)
    read.store.writes.threads = ThreadCache(max_rows=0)  # holds nothing: every write reads its threads
    ops = random_writes(seed)
    apply_writes(kept, ops)
    apply_writes(read, ops)
    rows = {ws: {t.id: (t.content, t.thread, t.position, t.is_active, t.context, t.context_sides)
                 for t in ws.store.all_traces()} for ws in (kept, read)}
    assert rows[kept] == rows[read]
    for group in by_thread(kept.store.all_traces()).values():
        for i, ctx in contexts(group, setting).items():
            assert rows[kept][i][4:] == ctx
    fresh = BM25Index(tokenizer=kept.bm25.tokenizer)
    fresh.sync(kept.store.all_traces())
    for q in WORDS + ["greyhound tuesday", "blue folder invoice"]:
        got = [ws.bm25.search(q, top_k=100) for ws in (kept, read)] + [fresh.search(q, top_k=100)]
        assert [i for i, _ in got[0]] == [i for i, _ in got[1]] == [i for i, _ in got[2]]
        assert [s for _, s in got[0]] == pytest.approx([s for _, s in got[1]], rel=1e-12)
        assert [s for _, s in got[0]] == pytest.approx([s for _, s in got[2]], rel=1e-12)

# ------------------------------------------------------------------ no thread: a no-op (SciFact, BEIR)
ABSTRACTS = [
    ("4983", "Microstructural development of human newborn cerebral white matter assessed in vivo by diffusion "
             "tensor magnetic resonance imaging."),
    ("5836", "Induction of myelodysplasia by myeloid-derived suppressor cells. Myelodysplastic syndromes are "
             "age-dependent stem cell malignancies."),
    ("7912", "BC1 RNA, the transcript from a master gene for ID element amplification, is able to prime its own "
             "reverse transcription."),
    ("18670", "The DNA Methylome of Human Peripheral Blood Mononuclear Cells. DNA methylation plays an important "
              "role in biological processes."),
    ("19238", "The human myelin basic protein gene is included within a 179-kilobase transcription unit."),
    ("33370", "Tumour vascularization via endothelial differentiation of glioblastoma stem-like cells."),
    ("38485", "Vitamin D status and cardiovascular disease risk in the elderly: magnetic resonance imaging of the "
              "heart."),
    ("52188", "Myeloid-derived suppressor cells expand in tumour-bearing hosts and suppress T cell responses."),
]
QUERIES = ["myeloid suppressor cells", "magnetic resonance imaging white matter", "DNA methylation blood",
           "stem cells glioblastoma tumour", "vitamin D heart"]


def beir_like() -> list[MemoryTrace]:
    """Documents as the BEIR loader makes them (retrieval/eval/datasets.py `load_beir`): no thread, no position."""
    return [MemoryTrace(id=i, content=text, scope=BEIR_SCOPE.scope, scope_id=BEIR_SCOPE.scope_id, type="semantic",
                        created_at=BEIR_TIME, source_type="document") for i, text in ABSTRACTS]


def rankings(ws: Workspace) -> list:
    bm25 = [ws.bm25.search(q, top_k=len(ABSTRACTS), scopes=[BEIR_SCOPE]) for q in QUERIES]
    hybrid = [[(s.id, s.retrieval_score) for s in ws.retriever().retrieve(q, scope=BEIR_SCOPE).traces]
              for q in QUERIES]
    return [bm25, hybrid]


@pytest.mark.parametrize("setting", [NEW_STORE_CONTEXT, ContextSetting(window=5, next=True, sides="both")],
                         ids=["new-store-default", "w5-next-both"])
def test_documents_without_a_thread_index_and_rank_the_same_with_context_on(tmp_path, setting):
    off, on = ws_at(tmp_path / "off", OFF), ws_at(tmp_path / "on", setting)
    off.ingest(beir_like())
    on.ingest(beir_like())
    stored = on.store.get([i for i, _ in ABSTRACTS])
    assert [(t.context, t.context_sides) for t in stored] == [(None, None)] * len(ABSTRACTS)
    assert [t.text_for("bm25") for t in stored] == [t.text_for("dense") for t in stored] == [a for _, a in ABSTRACTS]
    want = rankings(off)
    assert all(len(hits) > 0 for hits in want[0]) and all(len(hits) > 0 for hits in want[1])
    assert rankings(on) == want  # every BM25 score and every hybrid score, exactly
    # switching an existing store's setting on rewrites nothing and changes nothing
    report = off.set_context(setting)
    assert (report["rewritten"], report["reembedded"]) == (0, 0)
    assert rankings(off) == want
