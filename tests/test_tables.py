"""ui/tables.py: grid column widths that fit the 1366 px main column, and few decimals."""
from __future__ import annotations

import streamlit as st

from ui.tables import FULL_PX, HALF_PX, SELECT_PX, num, widths


def test_widths_set_each_named_column_and_keep_a_typed_columns_format():
    link = st.column_config.LinkColumn(display_text="open B")
    out = widths({"id": 200, "Inspect B": 70}, HALF_PX, select=True, config={"Inspect B": link})
    assert out["id"]["width"] == 200
    assert out["Inspect B"]["width"] == 70 and out["Inspect B"]["type_config"]["display_text"] == "open B"


def test_widths_too_wide_for_the_budget_are_scaled_down_to_fit_it():
    out = widths({"a": 600, "b": 400, "c": 200}, FULL_PX, select=True)
    assert [out[c]["width"] for c in "abc"] == [433, 288, 144]
    assert sum(out[c]["width"] for c in "abc") + SELECT_PX <= FULL_PX
    assert widths({"a": 10, "b": 2000}, HALF_PX)["a"]["width"] == 40  # never narrower than 40 px


def test_num_rounds_floats_only():
    assert (num(0.592941), num(0.592941, 4), num(3), num(None), num("0.5929")) == (0.593, 0.5929, 3, None, "0.5929")
