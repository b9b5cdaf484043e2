"""The site's jinja2 environment, with shortcuts that keep every page's bytes the same.

A site of 20,000 models renders a few million `row.field` look-ups and formatted figures, so
two costs of jinja2's general path dominate (measured with cProfile on the site benchmark):

* `row.field` on a row (a plain `dict`) first tries `getattr(row, "field")`, which raises and
  catches an `AttributeError` before it tries `row["field"]`. `PageEnvironment.getattr` looks
  the key up first when a plain attribute cannot exist (the name is not one of `dict`'s), so
  the result is the one jinja2 gives, without the exception; `PageCodeGenerator` compiles
  `row.field` to read a key a plain dict holds in place, without even that call.
* The formatting filters parse the same prices and timestamps again on every page.
  `remembered` keeps their results per exact argument (strings and integers only: equal
  floats or decimals such as `-0.0` and `0.0`, or `Decimal("0.10")` and `Decimal("0.1")`,
  may format differently, so they are always formatted afresh).
* Every `{{ value }}` of an autoescaped template goes through `markupsafe.escape`, which
  wraps its result in a new `Markup` that the page then only joins into its text.
  `escape_output` gives the same characters as a plain `str` (MarkupSafe's own escaping of
  a `str`, without the wrapper); `PageCodeGenerator` compiles the output of values to it,
  and escapes a `str` (most values: the filters' results) in place, without the call.
* A call in a template (`row.get("x")`, a macro) goes through `Context.call`, which looks
  for `pass_context` and its kind on the callee. A built-in method (`dict.get`) cannot carry
  one, so `PageContext.call` calls it at once.
* A template's root and each of its blocks are generators that yield every piece of output
  (hundreds per model page), each passing up through the child template, its parent and
  the block. `PageCodeGenerator` compiles them to gather their pieces in a list, as jinja2
  already does inside macros, and yield it joined once: the same text, a few yields a page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from types import BuiltinMethodType
from typing import Any

import jinja2
import markupsafe
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context

_DICT_ATTRIBUTES = frozenset(dir(dict))
_REMEMBERED_TYPES = (str, int)
_REMEMBERED_MAX = 1 << 16
"""Results kept per filter (then the memo starts again): bounds memory on huge sites."""


def _escape_replacing(text: str) -> str:
    """MarkupSafe's escaping of a `str`, by `str.replace` (when its own is not at hand)."""
    return (
        text.replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


_escape_text: Callable[[str], str] = getattr(markupsafe, "_escape_inner", _escape_replacing)
"""MarkupSafe's escaping of a plain `str` to a plain `str` (its compiled speedup when
present: tests/test_site_environment.py holds both to `markupsafe.escape`)."""


def escape_output(value: Any) -> str:
    """The characters `markupsafe.escape(value)` gives, as the text a page joins."""
    if type(value) is str:
        return _escape_text(value)
    if type(value) is markupsafe.Markup:  # already safe: escape returns it unchanged
        return value
    return markupsafe.escape(value)


class PageCodeGenerator(CodeGenerator):
    """Compiles the output of an autoescaped value to `escape_output` (same characters), an
    attribute of a plain dict to its key, and gathers the output of a template's root and of
    each block to yield it once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._escaped: list[str] = []
        """The names holding the values being output, innermost last."""

    def blockvisit(self, nodes_: Any, frame: Frame) -> None:
        """jinja2's `blockvisit`; the body of a root or block function (not of an `if` or
        a loop inside one) writes into a list that is then yielded joined. An `include`
        without context yields from its stream whatever the frame, so a body holding one
        keeps jinja2's own output."""
        body = list(nodes_)
        top = frame.rootlevel or (frame.block_frame and not frame.soft_frame)
        if (
            not top
            or frame.buffer is not None
            or self.environment.is_async
            or any(
                isinstance(n, nodes.Include) and not n.with_context
                for node in body
                for n in (node, *node.find_all(nodes.Include))
            )
        ):
            super().blockvisit(body, frame)
            return
        frame.buffer = self.temporary_identifier()
        self.writeline(f"{frame.buffer} = []")
        super().blockvisit(body, frame)
        self.writeline(f"yield concat({frame.buffer})")
        frame.buffer = None

    def visit_Getattr(self, node: nodes.Getattr, frame: Frame) -> None:
        """`obj.name` compiled to read `obj[name]` in place when `obj` is a plain dict holding
        `name` and `name` is none of `dict`'s attributes (what `PageEnvironment.getattr`
        answers then, without the call); anything else goes to `environment.getattr`."""
        if self.environment.is_async or node.attr in _DICT_ATTRIBUTES:
            super().visit_Getattr(node, frame)
            return
        held, name = self.temporary_identifier(), repr(node.attr)
        self.write(f"({held}[{name}] if type({held} := ")
        self.visit(node.node, frame)
        self.write(f") is dict and {name} in {held} else environment.getattr({held}, {name}))")

    def _output_child_pre(
        self, node: Any, frame: Frame, finalize: CodeGenerator._FinalizeInfo
    ) -> None:
        if frame.eval_ctx.volatile or not frame.eval_ctx.autoescape:
            super()._output_child_pre(node, frame, finalize)
            return
        if finalize.src is not None:
            self.write(f"environment.escape_output({finalize.src}")
            return
        # A `str` (most values: the filters' results) is escaped in place, without the call.
        self._escaped.append(held := self.temporary_identifier())
        self.write(f"(environment.escape_text({held}) if type({held} := ")

    def _output_child_post(
        self, node: Any, frame: Frame, finalize: CodeGenerator._FinalizeInfo
    ) -> None:
        if frame.eval_ctx.volatile or not frame.eval_ctx.autoescape or finalize.src is not None:
            super()._output_child_post(node, frame, finalize)
            return
        held = self._escaped.pop()
        self.write(f") is str else environment.escape_output({held}))")


class PageContext(Context):
    """A template context whose calls of built-in methods skip the search for
    `pass_context` (a built-in method cannot carry it)."""

    def call(__self, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """`__obj(*args, **kwargs)` as `Context.call` calls it."""
        if type(__obj) is not BuiltinMethodType:
            return super().call(__obj, *args, **kwargs)
        kwargs.pop("_block_vars", None)
        kwargs.pop("_loop_vars", None)
        try:
            return __obj(*args, **kwargs)
        except StopIteration:
            return __self.environment.undefined(
                "value was undefined because a callable raised a StopIteration exception"
            )


class PageEnvironment(jinja2.Environment):
    """A jinja2 environment whose attribute look-up on plain dicts skips a raised error,
    whose output of values skips building a `Markup`, and whose calls of built-in methods
    skip the search for `pass_context`."""

    code_generator_class = PageCodeGenerator
    context_class = PageContext
    escape_output = staticmethod(escape_output)
    escape_text = staticmethod(_escape_text)

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
