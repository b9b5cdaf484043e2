"""The site environment's shortcuts give exactly what jinja2's general path and the plain
formatters give, on hostile and random inputs (the oracle is the unshortened code)."""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal

import jinja2
import pytest
from markupsafe import Markup, escape

from bench_pipeline.site import markup
from bench_pipeline.site.environment import PageEnvironment, remembered

pytestmark = pytest.mark.unit


class _Row(dict):
    """A dict subclass with an attribute of its own: must take jinja2's general path."""

    name = "class attribute"


def _same(left: object, right: object) -> bool:
    if isinstance(left, jinja2.Undefined) or isinstance(right, jinja2.Undefined):
        return type(left) is type(right)
    return type(left) is type(right) and (left is right or left == right)


_GETATTR_CASES = [
    ({"name": "a"}, "name"),
    ({"items": "a key shadowing a method"}, "items"),
    ({"get": 1}, "get"),
    ({"__class__": "x"}, "__class__"),
    ({}, "missing"),
    ({"name": None}, "name"),
    (_Row(name="key"), "name"),
    (_Row(), "other"),
    ([1, 2], "count"),
    ("text", "upper"),
    (None, "name"),
    ({1: "int key"}, "1"),
]


@pytest.mark.parametrize(("obj", "attribute"), _GETATTR_CASES)
def test_getattr_matches_jinja2(obj: object, attribute: str) -> None:
    plain = jinja2.Environment(undefined=jinja2.StrictUndefined)
    fast = PageEnvironment(undefined=jinja2.StrictUndefined)
    assert _same(fast.getattr(obj, attribute), plain.getattr(obj, attribute))


@pytest.mark.parametrize("undefined", [jinja2.Undefined, jinja2.StrictUndefined])
@pytest.mark.parametrize(("obj", "attribute"), _GETATTR_CASES)
def test_a_compiled_attribute_renders_what_jinja2_renders(
    obj: object, attribute: str, undefined: type[jinja2.Undefined]
) -> None:
    """`obj.name` read in place by the compiled page, output escaped in place, inside a
    macro, a filtered loop and a test too, or the same error jinja2 raises."""
    source = (
        f"{{{{ obj.{attribute} }}}}|{{{{ obj.{attribute} is defined }}}}|"
        f"{{% macro m(o) %}}[{{{{ o.{attribute} }}}}]{{% endmacro %}}{{{{ m(obj) }}}}|"
        f"{{% for o in [obj, obj] if o.{attribute} is defined %}}{{{{ o.{attribute} }}}};"
        "{% endfor %}"
    )
    rendered = []
    for env in (jinja2.Environment, PageEnvironment):
        try:
            rendered.append(env(autoescape=True, undefined=undefined).from_string(source)
                            .render(obj=obj))  # fmt: skip
        except jinja2.UndefinedError as error:
            rendered.append(f"UndefinedError: {error}")
    assert rendered[1] == rendered[0]


def test_a_template_renders_the_same_through_either_environment() -> None:
    source = "{% for r in rows %}{{ r.name }}|{{ r.items }}|{{ r.get('x') }};{% endfor %}"
    rows = [{"name": "<b>", "x": 1}, {"name": Markup("<i>"), "items": "it"}, _Row(x=2)]
    plain = jinja2.Environment(autoescape=True).from_string(source).render(rows=rows)
    fast = PageEnvironment(autoescape=True).from_string(source).render(rows=rows)
    assert fast == plain


_TEMPLATES = {
    "base.html": "<h1>{% block title %}{% endblock %}</h1>{% for r in rows %}{{ r }},"
    "{% if r %}<b>{% block main scoped %}{{ r }}{% endblock %}</b>{% endif %}{% endfor %}"
    "{% set s %}{{ rows|length }}{% endset %}{{ s }}{% include 'part.html' %}"
    "{% filter upper %}{{ rows[0] }}{% endfilter %}{% macro m(x) %}<{{ x }}>{% endmacro %}"
    "{{ m(rows[-1]) }}",
    "child.html": "{% extends 'base.html' %}{% block title %}{{ title }}{% endblock %}"
    "ignored {{ title }}{% block main scoped %}[{{ super() }}|{{ self.title() }}]{% endblock %}",
    "part.html": "{% for r in rows %}({{ r }}){% endfor %}",
    "static.html": "<p>static</p>",
    "streamed.html": "a{% include 'static.html' ignore missing without context %}{{ title }}",
}


@pytest.mark.parametrize("name", ["base.html", "child.html", "part.html", "streamed.html"])
def test_a_template_yields_its_output_gathered_and_the_same(name: str) -> None:
    def environment(kind: type[jinja2.Environment]) -> jinja2.Environment:
        loader = jinja2.DictLoader(_TEMPLATES)
        return kind(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)

    values = {"rows": ["<x>", "", Markup("<i>"), 0, 3], "title": "T & 'q'"}
    plain = environment(jinja2.Environment).get_template(name)
    fast = environment(PageEnvironment).get_template(name)
    assert fast.render(values) == plain.render(values)
    pieces = list(fast.root_render_func(fast.new_context(values)))
    if name != "streamed.html":  # an include without context streams: jinja2's own output
        assert len(pieces) <= 3  # the child's (empty) root, then the parent's whole page
        assert len(list(plain.root_render_func(plain.new_context(values)))) > 10


def _values(rng: random.Random) -> list[object]:
    fixed: list[object] = [
        None, "", 0, 1, -1, True, False, 0.0, -0.0, float("nan"), float("inf"),
        Decimal("0.10"), Decimal("0.1"), Decimal("-0"), "0.10", "0.1", "1e3", "abc",
        "2025-06-01T06:00:00Z", "2025-06-01", "2025-06-01T06:00:00+02:00", Markup("<b>"),
        "<b>", 10**20, "3.437500", "0.022245325444",
    ]  # fmt: skip
    drawn = [round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)) for _ in range(300)]
    drawn += [str(v) for v in drawn] + [rng.randint(-(10**9), 10**9) for _ in range(100)]
    return fixed + drawn


@pytest.mark.parametrize("formatter", [markup.number, markup.usd, markup.when, markup.text])
def test_remembered_formatters_match_the_plain_ones(formatter) -> None:
    rng = random.Random(20)
    fast = remembered(formatter)
    values = _values(rng)
    options = [(), (0,), (1,), (3,)] if formatter is markup.number else [()]
    for _ in range(2):  # the second pass answers from the memo
        for value in rng.sample(values, len(values)):
            for option in options:
                expected, got = _outcome(formatter, value, option), _outcome(fast, value, option)
                assert got == expected and type(got) is type(expected), (value, option)


def _outcome(formatter, value: object, option: tuple) -> object:
    """What the call returns, or the kind of error it raises."""
    try:
        return formatter(value, *option)
    except (ValueError, TypeError) as error:
        return type(error).__name__


class _Html:
    """An object that renders itself as HTML (its own markup, trusted)."""

    def __html__(self) -> str:
        return "<b>&amp;</b>"


def _escape_cases(rng: random.Random) -> list[object]:
    pieces = ["&", "<", ">", "'", '"', "a", "é", "\x00", " ", "&amp;", "\u2028", "𝔘"]
    drawn = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(400)]
    return [*drawn, "", Markup("<i>&</i>"), type("Sub", (Markup,), {})("<s>"), _Html(),
            0, -1.5, float("nan"), None, True, Decimal("0.10"), [1, "<"], {"a": "<"}]  # fmt: skip


@pytest.mark.parametrize("inner", ["markupsafe", "replacing"])
def test_escape_output_gives_the_characters_markupsafe_escape_gives(
    inner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench_pipeline.site import environment

    if inner == "replacing":  # the path taken when MarkupSafe's own is not at hand
        monkeypatch.setattr(environment, "_escape_text", environment._escape_replacing)
    for value in _escape_cases(random.Random(5)):
        assert environment.escape_output(value) == str(escape(value)), value
    undefined = jinja2.StrictUndefined(name="nothing")
    with pytest.raises(jinja2.UndefinedError):
        environment.escape_output(undefined)
    with pytest.raises(jinja2.UndefinedError):
        escape(undefined)


def test_a_template_calls_what_jinja2_calls_with_what_it_passes() -> None:
    source = (
        "{% set d = {'a': '<x>'} %}{{ d.get('a') }}|{{ d.get('b', 'no') }}|{{ ctx_name() }}|"
        "{{ env_name() }}|{{ stops() }}|{{ first(empty()) }}|"
        "{% for k in [1, 2] %}{{ d.get(k, k) }}{% endfor %}"
        "{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m('<y>') }}"
    )
    names = {
        "ctx_name": jinja2.pass_context(lambda context: context.name),
        "env_name": jinja2.pass_environment(lambda env: type(env).__name__[:4]),
        "stops": lambda: next(iter(())),
        "first": next,  # a built-in: the shortcut's path, StopIteration included
        "empty": lambda: iter(()),
    }
    plain = jinja2.Environment(autoescape=True)
    fast = PageEnvironment(autoescape=True)
    for env in (plain, fast):
        env.globals.update(names)
    expected = plain.from_string(source).render()
    got = fast.from_string(source).render()
    assert got.replace("Page", "Envi") == expected
    assert "&lt;x&gt;|no|" in got and "[&lt;y&gt;]" in got


class _OwnGet(dict):
    """A dict subclass whose `get` is its own: must take jinja2's general path."""

    def get(self, key: object, default: object = None) -> object:
        return f"own {key}"


class _ContextGet:
    """Not a dict, with a `get` that asks for the context."""

    @jinja2.pass_context
    def get(self, context: object, key: object) -> object:
        return f"context {key}"


@pytest.mark.parametrize("undefined", [jinja2.Undefined, jinja2.StrictUndefined])
@pytest.mark.parametrize(
    "obj",
    [{"a": "<x>"}, {}, {"get": "a key"}, _OwnGet(a=1), _ContextGet(), None, "text"],
    ids=["dict", "empty", "get-key", "own-get", "context-get", "none", "str"],
)
def test_a_get_call_renders_what_jinja2_renders(
    obj: object, undefined: type[jinja2.Undefined]
) -> None:
    """`obj.get(...)` called in place on a plain dict, at the top, in a loop, a macro and a
    block, with one argument or two, or the same output or error jinja2 gives."""
    source = (
        "{{ obj.get('a') }}|{{ obj.get('a', '<d>') }}|{{ obj.get(*['a']) }}|"
        "{% for k in ['a', 'b'] %}{{ obj.get(k) }};{% endfor %}"
        "{% macro m(o) %}[{{ o.get('a', 1) }}]{% endmacro %}{{ m(obj) }}|"
        "{{ {'a': 2}.get('a') }}|{{ missing.get('a') is defined }}"
        "{% block b %}{% set v = obj %}{{ v.get('a') }}{% endblock %}"
    )
    rendered = []
    for env in (jinja2.Environment, PageEnvironment):
        try:
            rendered.append(env(autoescape=True, undefined=undefined).from_string(source)
                            .render(obj=obj))  # fmt: skip
        except (jinja2.UndefinedError, TypeError) as error:
            rendered.append(f"{type(error).__name__}: {error}")
    assert rendered[1] == rendered[0]


def test_macros_called_through_the_shortcut_render_what_jinja2_renders() -> None:
    source = (
        "{% macro plain(a, b='<b>') %}{{ a }}{{ b }}{% endmacro %}"
        "{% macro rest() %}{{ varargs|join(',') }}{{ kwargs|dictsort }}{% endmacro %}"
        "{% macro wraps(x) %}({{ caller(x) }}){% endmacro %}"
        "{{ plain('<a>') }}|{{ plain(1, b=2) }}|{{ rest(1, '<2>', k='<v>') }}|"
        "{% for i in [1, 2] %}{{ plain(i) }}{% endfor %}|"
        "{% call(v) wraps('<w>') %}[{{ v }}]{% endcall %}"
    )
    plain = jinja2.Environment(autoescape=True).from_string(source).render()
    fast = PageEnvironment(autoescape=True).from_string(source).render()
    assert fast == plain
    with pytest.raises(TypeError, match="takes no keyword argument"):
        PageEnvironment().from_string("{% macro m() %}{% endmacro %}{{ m(x=1) }}").render()


def test_an_environment_loads_each_template_once_and_an_overlay_its_own() -> None:
    """Without reloading, a template is loaded once per environment (then from a plain dict,
    not jinja2's cache); an overlay's templates are bound to the overlay, its parent's to the
    parent, however their loads alternate; with reloading, an edited template is read again."""
    sources, loads = {"page.html": "{{ who }}"}, []

    def load(name: str) -> tuple[str, None, Callable[[], bool]]:
        loads.append(name)
        return sources[name], None, lambda: False

    env = PageEnvironment(loader=jinja2.FunctionLoader(load), auto_reload=False)
    overlay = env.overlay()
    overlay.globals = {"who": "overlay"}
    for _ in range(2):
        for environment in (env, overlay, env):
            template = environment.get_template("page.html")
            assert template.environment is environment
            assert environment.get_template("page.html") is template
    env.cache.clear()  # a template no longer in jinja2's cache is still the one loaded
    assert env.get_template("page.html").render(who="x") == "x"
    assert overlay.get_template("page.html").render() == "overlay"
    assert loads == ["page.html", "page.html"]  # once by each environment
    reloading = PageEnvironment(loader=jinja2.FunctionLoader(load), auto_reload=True)
    assert reloading.get_template("page.html").render(who="x") == "x"
    sources["page.html"] = "edited"
    assert reloading.get_template("page.html").render() == "edited"
