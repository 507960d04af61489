"""Replaying the agent's own retrieval log: import it (JSONL or OpenInference RETRIEVER spans, bad lines
reported by number), keep it beside the store (`query_log`), and compare what the agent got then with what
the current configuration returns now and on the store as of the log's time (overlap@k, RBO); feedback
becomes implicit grades.

`logs` parses untrusted lines; `store` is the `QueryLog` table, its import and its filters; `compare`
puts then, now and as-of side by side; `select` picks which logged queries to replay and replays them.
"""
from retrieval.replay.compare import Replayed, compare_lists, replay
from retrieval.replay.logs import BadLine, LoggedQuery, implicit_grades, parse_lines, polarity
from retrieval.replay.store import ImportReport, QueryLog, record_implicit_grades, sample

__all__ = ["BadLine", "ImportReport", "LoggedQuery", "QueryLog", "Replayed", "compare_lists", "implicit_grades",
           "parse_lines", "polarity", "record_implicit_grades", "replay", "sample"]
