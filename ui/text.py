"""Untrusted text (trace content and ids, queries, case ids, sign-in names, error messages that quote them)
shown where something interprets markup: Streamlit reads Markdown in `st.markdown`, `st.caption`, `st.error`
and friends and in every widget label; plotly reads `%{…}` templates and HTML tags in hover templates and
text. Pass such text through these helpers so it shows as typed and never as an image, a link, a tag or
formatting. No Streamlit here: pure functions, tested on their own (tests/test_integrity_markdown.py).
"""
from __future__ import annotations

import re

ZWSP = "\u200b"  # zero-width space: invisible, but no URL pattern matches across it

# ASCII punctuation Markdown (CommonMark + GFM + Streamlit's extensions) may read anywhere in a line: emphasis,
# code, links and images, raw HTML and entities, tables, strikethrough, LaTeX, `:color[…]` directives.
# CommonMark lets a backslash escape any ASCII punctuation, and the escape renders as the character itself.
_ANYWHERE = re.compile(r"([\\`*_\[\](){}<>!|~$&])")
# Block markers that mean something only at the start of a line: bullets, setext underlines, ATX headings,
# ordered-list numbers ("1." — "1)" is escaped above). Escaped there only, so an id like "maya-inv-20931",
# a label like "#1 …" or a message like "mini.jsonl line 7: …" reads the same escaped or not.
_LINE_START = re.compile(r"^([ \t]*)([-+=]|#(?=#{0,5}(?:[ \t]|$)))", re.MULTILINE)
_NUMBERED = re.compile(r"^([ \t]*[0-9]{1,9})\.", re.MULTILINE)
# GFM turns bare URLs into links after parsing, from the text itself, so a backslash does not stop it:
# a zero-width space inside every "://" and "www." does.
_AUTOLINK = re.compile(r"(?i)(?<=:)(?=//)|(?<=www)(?=\.)")

_HOVER = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "%": "&#37;", "{": "&#123;", "}": "&#125;"}
_HOVER_RE = re.compile("[&<>%{}]")


def plain(text: object) -> str:
    """`text` escaped for any Streamlit element or label that reads Markdown: it renders as exactly these
    characters (a zero-width space inside "://" and "www." aside), never as formatting, an image, a link or
    HTML. (A bare e-mail address may still show as a mailto: link, as GFM makes it one.)"""
    out = _AUTOLINK.sub(ZWSP, str(text))
    out = _ANYWHERE.sub(r"\\\1", out)
    out = _NUMBERED.sub(r"\1\\.", out)
    return _LINE_START.sub(r"\1\\\2", out)


def code(text: object) -> str:
    """`text` as one Markdown code span, whatever backticks it holds: the fence is a backtick run longer than
    any inside it (CommonMark), padded with a space when the text starts or ends with a backtick. Newlines
    become spaces (a code span is one line)."""
    body = " ".join(str(text).splitlines()) or " "
    fence = "`" * (max((len(r) for r in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body[0] == "`" or body[-1] == "`" or (body[0] == " " and body[-1] == " " and body.strip()) else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def plotly_plain(text: object) -> str:
    """`text` escaped for a plotly hover template or text label: no `%{…}` substitution, no HTML tag (a
    `<a href>` there is a live link); shown as typed, plotly decoding the entities back."""
    return _HOVER_RE.sub(lambda m: _HOVER[m.group()], str(text))
