"""A built site served over loopback HTTP, and Debian's Chromium to read it, for the site's
browser tests (one home for both, so every browser test starts them alike)."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from bench_pipeline.grading.browser import QUIET_ARGS

CHROMIUM = Path("/usr/bin/chromium")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[str]:
    """`folder` served on a free loopback port: yields its base URL, stops on exit."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[Browser]:
    """Debian's Chromium, headless, with its config and cache under `profile`; a missing
    Chromium fails the test with the command that installs it."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium`", pytrace=False)
    env = {"XDG_CONFIG_HOME": str(profile / "config"), "XDG_CACHE_HOME": str(profile / "cache")}
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", *QUIET_ARGS], env=env
        )
        try:
            yield launched
        finally:
            launched.close()
