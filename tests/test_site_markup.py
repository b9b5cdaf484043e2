"""The methodology pages' Markdown: markdown-it-py with the site's heading ids and link rule."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path

import pytest

from bench_pipeline.site import markup
from bench_pipeline.site.markup import markdown, slugify

pytestmark = pytest.mark.unit

METHODOLOGY = Path(__file__).resolve().parents[1] / "site" / "methodology"


@pytest.mark.parametrize(
    "target",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "vbscript:msgbox(1)",
        "VBScript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "data:image/png;base64,iVBORw0KGgo=",
        "file:///etc/passwd",
        "<javascript:alert(1)>",
    ],
)
def test_a_link_to_an_unsafe_scheme_keeps_only_its_label(target: str) -> None:
    html = str(markdown(f"See [the label]({target}) here."))
    assert "<a" not in html and "href" not in html
    assert html.strip() == "<p>See the label here.</p>"


@pytest.mark.parametrize(
    ("target", "href"),
    [
        ("x.html", "x.html"),
        ("../methodology/pm-suite.html#scores", "../methodology/pm-suite.html#scores"),
        ("#known-good-index", "#known-good-index"),
        ("https://epoch.ai/benchmarks", "https://epoch.ai/benchmarks"),
        ("mailto:data@example.org", "mailto:data@example.org"),
    ],
)
def test_relative_anchor_web_and_mail_links_are_kept(target: str, href: str) -> None:
    assert f'<a href="{href}">label</a>' in str(markdown(f"[label]({target})"))


def test_raw_html_is_escaped_and_headings_carry_their_slug() -> None:
    html = str(
        markdown("# The `PM` suite\n\n<script>alert(1)</script> <b>x</b>\n\n## Scores, 0–100")
    )
    assert "<script" not in html and "<b>" not in html and "&lt;script&gt;" in html
    assert '<h1 id="the-pm-suite">The <code>PM</code> suite</h1>' in html
    assert '<h2 id="scores-0-100">Scores, 0–100</h2>' in html


def test_every_methodology_page_renders_with_ids_and_its_tables() -> None:
    pages = sorted(METHODOLOGY.glob("*.md"))
    assert pages
    for page in pages:
        source = page.read_text("utf-8")
        html = str(markdown(source))
        headings = re.findall(r"^#{1,6} +(.+)$", source, re.MULTILINE)
        ids = re.findall(r'<h[1-6] id="([^"]+)"', html)
        assert ids == [slugify(re.sub(r"[`*]", "", h)) for h in headings], page.name
        if re.search(r"^\|.*\|\s*$", source, re.MULTILINE):
            assert "<table>" in html, page.name


def _usd_oracle(value: object) -> str:
    """`markup.usd` as first written, without its shortcuts (the oracle)."""
    if markup.missing(value):
        return markup.MISSING
    try:
        exact = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    if not exact.is_finite():
        return str(value)
    places = markup.MONEY_PLACES
    if not exact.is_zero() and abs(exact) < markup.MONEY_CENTS_FROM:
        published = -int(exact.normalize().as_tuple().exponent)
        significant = -exact.adjusted() - 1 + markup.MONEY_SMALL_DIGITS
        places = max(markup.MONEY_PLACES, min(published, significant))
    rounded = exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    sign = "-" if rounded < 0 else ""
    return f"{sign}${abs(rounded):,.{places}f}"


def _number_oracle(value: object, places: int = 2) -> str:
    """`markup.number` as first written, without its shortcuts (the oracle)."""
    if markup.missing(value):
        return markup.MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and places == 0:
        return f"{value:,}"
    return f"{float(value):,.{places}f}"  # type: ignore[arg-type]


def _outcome(formatter: Callable[..., str], *arguments: object) -> str:
    try:
        return formatter(*arguments)
    except (ValueError, TypeError, ArithmeticError) as error:
        return type(error).__name__


def test_money_and_figures_format_as_the_unshortened_formatters_do() -> None:
    """`usd`, `number` and `text` give what their plain forms give: prices as published
    text of every magnitude and precision (both sides of ten cents, of a thousand and of
    the point where `str` of a `Decimal` turns to an exponent), signed zeros, floats, ints,
    booleans and what is not a number at all."""
    rng = random.Random(7)
    values: list[object] = [
        None, "", "0", "-0", "0.00", "-0.00", "-0.001", "0.0999999", "0.1", "999.995",
        "999.994999", "1000", "-1000.5", "1e-9", "1E+3", "NaN", "-Infinity", "abc", " 3 ",
        True, False, 0, -0.0, 0.0, 1e300, -1e-300, 2**70, Decimal("0.10"), Decimal("-0"),
        float("nan"), float("inf"), "0.0000001", "0.000001", "0.0000012345678", "1e40",
    ]  # fmt: skip
    for _ in range(4000):
        drawn = rng.uniform(-1, 1) * 10 ** rng.randint(-12, 8)
        digits = rng.randint(0, 14)
        values += [f"{drawn:.{digits}f}", round(drawn, digits), rng.randint(-(10**7), 10**7)]
    for value in values:
        assert _outcome(markup.usd, value) == _outcome(_usd_oracle, value), value
        for places in (0, 1, 2, 3):
            expected = _outcome(_number_oracle, value, places)
            assert _outcome(markup.number, value, places) == expected, (value, places)
        assert markup.text(value) == (markup.MISSING if markup.missing(value) else str(value))
