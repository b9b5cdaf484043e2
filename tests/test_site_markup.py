"""The methodology pages' Markdown: markdown-it-py with the site's heading ids and link rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench_pipeline.site.markup import markdown, slugify

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
