"""Tables that read at a 1366 px laptop (issue 35): nothing in the main area scrolls sideways.

`st.dataframe` draws a canvas grid that sizes each column to its longest cell and scrolls sideways when the
columns are wider than its box: at 1366 px (the main column is 904 px beside the sidebar, 444 px in half of
it) numbers sat past the right edge. The pages give their grids fewer, narrower columns with pixel widths that
add up to less than the box (`widths`), few decimals (`num`), and show everything a row holds — long text,
links, the columns left out — for the row a person clicks (`detail`), so no number is dropped, only moved.
`tests/test_browser_width.py` opens every page at 1366 and 1920 px and fails on any sideways scroll.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui.text import plain

# The grid's own parts, in px: the row-selection checkbox column and the borders.
SELECT_PX = 34
# The widths of the main column at 1366 px beside the open sidebar: whole, and each of two columns.
FULL_PX, HALF_PX = 900, 440


def widths(cols: dict[str, int], budget: int = FULL_PX, select: bool = False,
           config: dict[str, Any] | None = None) -> dict[str, Any]:
    """A column_config giving each column in `cols` its width in px (a column not named keeps `config`'s, or
    Streamlit's own; `select`: the grid has a row-selection column). Widths adding up to more than `budget` are
    scaled down to fit it (a column narrower than its text cuts the text with "…", never a number's place)."""
    room, total = budget - (SELECT_PX if select else 0), sum(cols.values())
    if total > room:
        cols = {c: max(40, px * room // total) for c, px in cols.items()}
    out: dict[str, Any] = dict(config or {})
    for name, px in cols.items():
        base = out.get(name)
        if base is None:
            out[name] = st.column_config.Column(width=px)
        else:  # a typed column (number, link, date): keep its type and format, set its width
            base["width"] = px
    return out


def num(x: Any, places: int = 3) -> Any:
    """A float to `places` decimals (None and non-floats as they are): a grid column of 0.5929 reads at 60 px,
    0.592941 needs 80."""
    return round(x, places) if isinstance(x, float) else x


def detail(row: dict[str, Any] | None, title: str, empty: str = "Click a row to see all of it here.") -> None:
    """Every field of one row, each on its own line, wrapped: the long text and the columns a grid leaves out.
    Field values are shown as typed (never Markdown)."""
    if row is None:
        st.caption(empty)
        return
    lines = [f"**{plain(k)}**: {plain('—' if v is None or v == '' else v)}" for k, v in row.items()]
    with st.container(border=True):
        st.markdown(f"**{plain(title)}**  \n" + "  \n".join(lines))
