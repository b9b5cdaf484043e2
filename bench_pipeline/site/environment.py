"""The site's jinja2 environment, with two shortcuts that keep every page's bytes the same.

A site of 20,000 models renders a few million `row.field` look-ups and formatted figures, so
two costs of jinja2's general path dominate (measured with cProfile on the site benchmark):

* `row.field` on a row (a plain `dict`) first tries `getattr(row, "field")`, which raises and
  catches an `AttributeError` before it tries `row["field"]`. `PageEnvironment.getattr` looks
  the key up first when a plain attribute cannot exist (the name is not one of `dict`'s), so
  the result is the one jinja2 gives, without the exception.
* The formatting filters parse the same prices and timestamps again on every page.
  `remembered` keeps their results per exact argument (strings and integers only: equal
  floats or decimals such as `-0.0` and `0.0`, or `Decimal("0.10")` and `Decimal("0.1")`,
  may format differently, so they are always formatted afresh).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import jinja2

_DICT_ATTRIBUTES = frozenset(dir(dict))
_REMEMBERED_TYPES = (str, int)
_REMEMBERED_MAX = 1 << 16
"""Results kept per filter (then the memo starts again): bounds memory on huge sites."""


class PageEnvironment(jinja2.Environment):
    """A jinja2 environment whose attribute look-up on plain dicts skips a raised error."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        """`obj.attribute` in a template, as `jinja2.Environment.getattr` resolves it."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def remembered(formatter: Callable[..., str]) -> Callable[..., str]:
    """`formatter` with its results kept for arguments whose equality implies identical
    formatting (see the module docstring); any other call goes straight to `formatter`."""
    memo: dict[tuple[Any, ...], str] = {}

    @wraps(formatter)
    def format_remembered(value: Any, *options: Any) -> str:
        if type(value) not in _REMEMBERED_TYPES or any(
            type(o) not in _REMEMBERED_TYPES for o in options
        ):
            return formatter(value, *options)
        key = (type(value), value, *options)
        try:
            return memo[key]
        except KeyError:
            pass
        if len(memo) >= _REMEMBERED_MAX:
            memo.clear()
        result = memo[key] = formatter(value, *options)
        return result

    return format_remembered
