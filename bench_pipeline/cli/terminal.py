"""Writing untrusted text to a person's terminal, and reading whole answers back.

Outputs, reasons and names in the warehouse come from models and strangers: printed raw, an
escape sequence could move the cursor, recolour or clear the screen, retitle the window, or
make text look like something else. `SafeOutput` wraps a stream so that everything written
through it loses its control sequences (`core.text.strip_controls`); the commands that print
warehouse content (`bench review`, `bench status`, `bench scores`) write only through one.

`TerminalPrompter` asks questions so that pasted text can never answer the next one: a
free-text answer runs until a line holding only `END_MARKER`, and before each question any
input typed or pasted ahead is discarded (on a terminal).
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import termios
import textwrap
import warnings
from typing import Protocol, TextIO

from bench_pipeline.core.text import strip_controls

END_MARKER = "."
"""A line holding only this ends a free-text answer."""


class SafeOutput(io.TextIOBase):
    """A text stream that strips control sequences from everything written to `inner`."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(strip_controls(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def writable(self) -> bool:
        return True


def safe(out: TextIO) -> TextIO:
    """`out` behind a `SafeOutput` (once: wrapping a safe stream again changes nothing)."""
    return out if isinstance(out, SafeOutput) else SafeOutput(out)  # type: ignore[return-value]


def terminal_width() -> int:
    """The columns to wrap text to: the terminal's (or `COLUMNS`), one spare for the cursor,
    never under 40; 100 when the output is no terminal."""
    return max(40, shutil.get_terminal_size((101, 24)).columns - 1)


def wrapped(text: str, width: int | None = None) -> str:
    """`text` with every line longer than `width` (default: `terminal_width()`) broken at
    spaces, its continuations indented as the line was, so a terminal never cuts a word in
    two. A word longer than a whole line (a URL) is left whole, and short lines (code,
    tables) are kept as they are."""
    width = width or terminal_width()
    lines: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        lines += textwrap.wrap(
            line, width, subsequent_indent=indent, break_long_words=False,
            break_on_hyphens=False, tabsize=4,
        ) or [line]  # fmt: skip
    return "\n".join(lines)


def quiet_dagster() -> None:
    """Keep Dagster's own warnings (beta, preview, superseded APIs) off a person's terminal:
    they speak to the pipeline's developers, who see them in the tests, not to its operator.
    Imports Dagster, so only commands that use it call this."""
    import dagster as dg

    warnings.filterwarnings("ignore", module=r"dagster")
    for category in (dg.BetaWarning, dg.PreviewWarning, dg.SupersessionWarning):
        warnings.filterwarnings("ignore", category=category)


class Prompter(Protocol):
    """Asks the reviewer one question at a time."""

    def line(self, question: str) -> str:
        """A one-line answer (a score, a choice)."""
        ...

    def text(self, question: str) -> str:
        """A free-text answer of any number of lines."""
        ...


class TerminalPrompter:
    """Reads answers from `stdin` (see the module docstring); EOF raises `EOFError`."""

    def __init__(self, stdin: TextIO = sys.stdin, out: TextIO = sys.stdout) -> None:
        self.stdin, self.out = stdin, out

    def _discard_pending(self) -> None:
        try:
            if self.stdin.isatty():
                termios.tcflush(self.stdin.fileno(), termios.TCIFLUSH)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass  # not a terminal: nothing typed ahead to discard

    def _read(self) -> str:
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    def line(self, question: str) -> str:
        self._discard_pending()
        self.out.write(question)
        self.out.flush()
        return self._read()

    def text(self, question: str) -> str:
        self._discard_pending()
        self.out.write(f"{question}(end with a line holding only {END_MARKER}){os.linesep}")
        self.out.flush()
        lines = []
        while (line := self._read()) != END_MARKER:
            lines.append(line)
        return "\n".join(lines)
