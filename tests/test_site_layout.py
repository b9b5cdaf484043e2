"""How the site reads a release's JSON: the same objects as Python's parser, every declared
column present."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.site.layout import complete, decode_json

pytestmark = pytest.mark.unit

COLUMNS = [{"name": "model_id"}, {"name": "score"}, {"name": "note"}]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    """Equal, with the same types and key order all the way down (0.0 is not -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return repr(a) == repr(b)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_decoding_gives_what_pythons_parser_gives(value: object) -> None:
    content = json.dumps(value).encode()
    assert _same(decode_json(content), json.loads(content))


@pytest.mark.parametrize(
    "content",
    [
        b'[{"a": NaN, "b": Infinity}]',  # only Python's parser reads these
        b'{"a": 1, "a": 2, "b": 3}',  # a repeated key: the last value at its first place
        b'["\\ud800"]',  # a lone surrogate
        b"[123456789012345678901234567890, 1e400, -0.0]",
    ],
)
def test_what_msgspec_refuses_or_reads_oddly_gets_pythons_reading(content: bytes) -> None:
    assert _same(decode_json(content), json.loads(content.decode("utf-8")))


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b'{"a": ', json.JSONDecodeError),
        (b'\xef\xbb\xbf{"a": 1}', json.JSONDecodeError),  # a byte order mark
        (b'{"a": "\xff"}', UnicodeDecodeError),
    ],
)
def test_unreadable_json_raises_pythons_own_error(content: bytes, error: type) -> None:
    with pytest.raises(error):
        decode_json(content)


def test_rows_with_the_declared_columns_in_order_are_kept_others_completed() -> None:
    exact = {"model_id": "a", "score": 1, "note": None}
    missing = {"model_id": "b"}
    reordered = {"score": 2, "model_id": "c", "note": "x"}
    extra = {"model_id": "d", "score": 3, "note": None, "more": 1}
    rows = complete(COLUMNS, [exact, missing, reordered, extra])
    assert rows[0] is exact
    assert list(rows[1].items()) == [("model_id", "b"), ("score", None), ("note", None)]
    assert list(rows[2]) == ["model_id", "score", "note"] and rows[2]["score"] == 2
    assert list(rows[3]) == ["model_id", "score", "note", "more"]
    assert complete([], [missing]) == [missing]
