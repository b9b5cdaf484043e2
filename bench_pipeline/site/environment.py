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
  one and a template's macro does not, so `PageContext.call` calls them at once; and
  `PageCodeGenerator` compiles `row.get(...)` on a plain dict to call `dict.get` in place,
  without looking the method up first (a dozen such calls and a few macros a model page:
  together with the shortcut above, 7% of a model page's cost at 50 times today's data).
* A template's root and each of its blocks are generators that yield every piece of output
  (hundreds per model page), each passing up through the child template, its parent and
  the block. `PageCodeGenerator` compiles them to gather their pieces in a list, as jinja2
  already does inside macros, and yield it joined once: the same text, a few yields a page.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from functools import wraps
from types import BuiltinMethodType
from typing import Any

import jinja2
import markupsafe
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.runtime import Context, Macro

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

    @optimizeconst  # as jinja2's: a call of constants is folded first
    def visit_Call(self, node: nodes.Call, frame: Frame, forward_caller: bool = False) -> None:
        """`obj.get(...)` with positional arguments compiled to call `dict.get` in place when
        `obj` is a plain dict (what `Context.call` of the bound method does then, without
        the look-up of the method and the call through the context); anything else, and
        every other call, as jinja2 compiles it."""
        method = node.node
        if (
            forward_caller
            or self.environment.is_async
            or self.environment.sandboxed
            or not isinstance(method, nodes.Getattr)
            or method.attr != "get"
            or node.kwargs
            or node.dyn_args is not None
            or node.dyn_kwargs is not None
        ):
            super().visit_Call(node, frame, forward_caller=forward_caller)
            return
        held = self.temporary_identifier()
        self.write(f"({held}.get(")
        for number, argument in enumerate(node.args):
            self.write(", " if number else "")
            self.visit(argument, frame)
        self.write(f") if type({held} := ")
        self.visit(method.node, frame)
        self.write(f") is dict else context.call(environment.getattr({held}, 'get')")
        self.signature(node, frame, self._call_kwargs(frame))
        self.write("))")

    @staticmethod
    def _call_kwargs(frame: Frame) -> dict[str, str] | None:
        """The loop and block variables jinja2's `visit_Call` passes to `Context.call`."""
        loop_kwargs = {"_loop_vars": "_loop_vars"} if frame.loop_frame else {}
        block_kwargs = {"_block_vars": "_block_vars"} if frame.block_frame else {}
        return {**loop_kwargs, **block_kwargs} or None

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


_PLAIN_CALLABLES = frozenset({BuiltinMethodType, Macro})
"""Callables that never ask for the context: a built-in method cannot carry
`pass_context`, and a template's macro does not."""


class PageContext(Context):
    """A template context whose calls of built-in methods and macros skip the search for
    `pass_context` (see `_PLAIN_CALLABLES`)."""

    def call(__self, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """`__obj(*args, **kwargs)` as `Context.call` calls it."""
        if type(__obj) not in _PLAIN_CALLABLES:
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: tuple[jinja2.Environment, dict[str, jinja2.Template]] = (self, {})
        """This environment and each template it loaded, by name (see `_load_template`); an
        overlay, which starts with a copy of its parent's attributes, sees its parent here
        and starts its own (a template is bound to the environment that loaded it)."""

    def _load_template(
        self, name: str, globals: MutableMapping[str, Any] | None
    ) -> jinja2.Template:
        """jinja2's, from a plain dict when templates are neither reloaded nor given
        globals of their own: a model page loads three (its own, the one it extends and the
        one it imports), and jinja2's cache takes a lock and makes a weak reference each."""
        if self.auto_reload or globals or self.cache is None:
            return super()._load_template(name, globals)
        owner, loaded = self._loaded
        if owner is not self:
            self._loaded = (self, loaded := {})
        try:
            return loaded[name]
        except KeyError:
            template = loaded[name] = super()._load_template(name, globals)
            return template

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
        if type(value) not in _REMEMBERED_TYPES:
            return formatter(value, *options)
        for option in options:  # none or one: a loop, not a generator made per call
            if type(option) not in _REMEMBERED_TYPES:
                return formatter(value, *options)
        key = (type(value), value, *options)
        # `get`, not a caught KeyError: most prices are met once, and raising costs more
        # than the look-up (a result of None would only be formatted again)
        if (known := memo.get(key)) is not None:
            return known
        if len(memo) >= _REMEMBERED_MAX:
            memo.clear()
        result = memo[key] = formatter(value, *options)
        return result

    return format_remembered
