"""The release's vectorised rank columns agree with the one rank rule (`rank_rows`) on any
frame: ties, missing values, boards split by columns, eligibility, signed zeros."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.release.schema import Eligible, RankRule

pytestmark = pytest.mark.unit

SCORES = st.one_of(st.none(), st.sampled_from([-0.0, 0.0, 1.5, 2.0, 2.0, 97.88, 1e-9]))
RULES = [
    RankRule("rank", "score"),
    RankRule("rank", "score", ("board",)),
    RankRule("rank", "score", eligible=Eligible("status", "ranked")),
    RankRule("rank", "score", ("board",), Eligible("runs", 3, at_least=True)),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            SCORES,
            st.sampled_from(["a", "b", None]),
            st.sampled_from(["ranked", "provisional", None]),
            st.one_of(st.none(), st.integers(0, 5)),
        ),
        max_size=40,
    ),
    st.sampled_from(range(len(RULES))),
)
def test_vectorised_ranks_equal_the_rank_rule(rows, which) -> None:
    frame = pl.DataFrame(
        rows,
        schema={"score": pl.Float64, "board": pl.Utf8, "status": pl.Utf8, "runs": pl.Int64},
        orient="row",
    )
    rule = RULES[which]
    assert rule.rank_series(frame).to_list() == rule.ranks(frame.to_dicts())


def test_integer_scores_and_decimal_text_are_ranked_too() -> None:
    rule = RankRule("rank", "score")
    ints = pl.DataFrame({"score": [3, None, 7, 3]})
    assert rule.rank_series(ints).to_list() == [2, None, 1, 2]
    text = pl.DataFrame({"score": ["10.5", "9.75", None, "10.50"]})  # exact decimals as text
    assert rule.rank_series(text).to_list() == [1, 3, None, 1]
