"""The program that runs inside the unit-test jail: load an answer's code, make one call.

Started by `grading.sandbox.JailedSandbox` as `python -I -S -B -X utf8 child.py` inside
bubblewrap, once per call (a fresh jail and interpreter each time), never imported by the
pipeline. It reads the job (JSON: the code, the entrypoint, how to call it and the
arguments; never an expected value) from stdin, keeps a private copy of stdout for its
reports (one JSON event a line), sends the answer's own output (Python and C level) nowhere
but a counting sink, sets the resource limits, installs the audit hook (the second layer
behind the jail), and only then loads the answer and makes the call.

Events, in order: `ready`; then `load_error` or `missing_entrypoint`, or `loaded` followed by
one `reply`: what the call returned as plain JSON data (`returned`), the exception it raised
(`raised`), or why what it returned is not JSON data (`not_json`), with what was printed.

The answer runs in this process and can write anything on the report channel too: the grader
reads whatever arrives as this one call's reply (so a forged line can only spoil the answer's
own result), and the grader alone knows what was expected.
"""

import json
import math
import os
import re
import resource
import sys

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
REFUSED = (
    "socket.", "subprocess.", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "os.system", "os.kill", "os.killpg", "signal.pthread_kill", "pty.",
    "ctypes.", "resource.setrlimit", "resource.prlimit", "os.chroot", "os.setns",
    "os.unshare",
)  # fmt: skip
"""Audit events refused outright (prefixes)."""
REFUSED_IMPORTS = frozenset({"_posixsubprocess", "_ctypes", "_testcapi", "_testinternalcapi"})
"""Extension modules that start processes or reach raw memory without an audit event."""
PATH_EVENTS = {
    "os.remove": 0, "os.rmdir": 0, "os.mkdir": 0, "os.rename": (0, 1), "os.symlink": (0, 1),
    "os.link": (0, 1), "os.chmod": 0, "os.chown": 0, "os.truncate": 0, "os.utime": 0,
    "shutil.rmtree": 0, "shutil.copyfile": 1,
}  # fmt: skip
"""Audit events that change a path, with the argument positions holding paths."""
NESTING = 100
"""Deepest nesting of lists and objects a result may have (`taskbank.models.CALL_NESTING`:
this program runs alone in the jail and imports nothing of the pipeline)."""
MESSAGE_CHARS = 500
"""Longest exception message or type name sent back (the grader cuts it further)."""


class Sink:
    """Stands in for stdout and stderr: counts everything, keeps the first `limit` chars."""

    def __init__(self, limit):
        self.limit, self.count, self.kept = limit, 0, []

    def write(self, text):
        text = str(text)
        if self.count < self.limit:
            self.kept.append(text[: self.limit - self.count])
        self.count += len(text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def guard_for(home):
    """The audit hook: refuses process creation, sockets and writes outside `home`."""

    def inside(path):
        if isinstance(path, int):
            return True
        path = os.fsdecode(path)
        if path == os.devnull:
            return True
        full = os.path.realpath(os.path.join(home, path))
        return full == home or full.startswith(home + os.sep)

    def guard(event, args):
        if event.startswith(REFUSED):
            raise PermissionError(f"not allowed while grading: {event}")
        if event == "import" and args[0] in REFUSED_IMPORTS:
            raise PermissionError(f"not allowed while grading: import {args[0]}")
        if event == "open" and args[2] & WRITE_FLAGS and not inside(args[0]):
            raise PermissionError(f"not allowed while grading: writing {args[0]!r}")
        if event in PATH_EVENTS:
            spots = PATH_EVENTS[event]
            for spot in spots if isinstance(spots, tuple) else (spots,):
                if not inside(args[spot]):
                    raise PermissionError(f"not allowed while grading: {event} {args[spot]!r}")

    return guard


class NotJson(Exception):
    """A result that is not plain JSON data; the message names what is not (`type Foo`)."""


def plain(value, depth=0):
    """`value` as plain JSON data: exactly None, bool, int, finite float, str, list (a tuple
    becomes one) or dict with str keys, nested at most `NESTING` deep. Types are tested
    exactly, so no method of the answer's classes (a subclass's `__eq__`, `__iter__`, ...) is
    ever called here."""
    kind = type(value)
    if depth > NESTING:
        raise NotJson(f"nesting deeper than {NESTING} levels")
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        if not math.isfinite(value):
            raise NotJson(f"the float {value!r}")
        return value
    if kind in (list, tuple):
        return [plain(item, depth + 1) for item in value]
    if kind is dict:
        converted = {}
        for key, item in value.items():
            if type(key) is not str:
                raise NotJson(f"an object key of type {type(key).__name__[:80]}")
            converted[key] = plain(item, depth + 1)
        return converted
    raise NotJson(f"type {kind.__name__[:80]}")


def error_text(exc):
    """`Type: message` (or `Type`), cut at `MESSAGE_CHARS`; never raises."""
    try:
        name = type(exc).__name__
        message = str(exc)
    except BaseException:
        return "an exception that cannot be shown"
    text = f"{name}: {message}" if message else name
    return text[:MESSAGE_CHARS]


def make_call(namespace, entrypoint, via, args):
    """What the call gives: `entrypoint(*args)`, the entrypoint itself, or whether it
    fully matches `args[0]` as a pattern."""
    target = namespace[entrypoint]
    if via == "value":
        return target
    if via == "fullmatch":
        return re.fullmatch(target, args[0]) is not None
    return target(*args)


def main():
    job = json.loads(sys.stdin.read())
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    printed = Sink(job["kept"])
    sys.stdout = sys.stderr = printed
    sys.stdin = open(os.devnull)

    def emit(**event):
        report.write(json.dumps(event, allow_nan=False) + "\n")
        report.flush()

    for limit, value in (
        (resource.RLIMIT_AS, job["memory"]),
        (resource.RLIMIT_FSIZE, job["fsize"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))

    import subprocess  # noqa: F401  (loaded now, so an answer's import needs no extension)

    os.environ.clear()  # what start-up added (locale coercion sets LC_CTYPE) goes too
    sys.addaudithook(guard_for(os.path.realpath(os.getcwd())))
    emit(event="ready")

    entrypoint, via, args = job["entrypoint"], job["via"], job["args"]
    code = job["code"]
    del job  # the answer could read this frame: it holds the call, never an expected value
    namespace = {"__name__": "__answer__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "answer.py", "exec"), namespace)
    except BaseException as exc:
        emit(event="load_error", error=error_text(exc))
        os._exit(0)
    if entrypoint not in namespace:
        emit(event="missing_entrypoint")
        os._exit(0)
    emit(event="loaded")

    reply = {}
    try:
        result = make_call(namespace, entrypoint, via, args)
    except BaseException as exc:
        reply.update(status="raised", error=error_text(exc))
    else:
        try:
            reply.update(status="returned", value=plain(result))
        except NotJson as exc:
            reply.update(status="not_json", error=str(exc))
        except BaseException as exc:  # too deep for the interpreter, out of memory, ...
            reply.update(status="not_json", error=f"reading it raised {error_text(exc)}")
    output = "".join(printed.kept)
    try:
        emit(event="reply", printed=printed.count, output=output, **reply)
    except BaseException as exc:  # an int too long to write, say
        emit(event="reply", printed=printed.count, output=output, status="not_json",
             error=f"writing it as JSON raised {error_text(exc)}")  # fmt: skip
    os._exit(0)  # threads or atexit handlers the answer left behind must not keep it running


if __name__ == "__main__":
    main()
