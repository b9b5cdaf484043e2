"""The program that runs inside the unit-test jail: load an answer's code, run each test.

Started by `grading.sandbox.JailedSandbox` as `python -I -S -B -X utf8 child.py` inside
bubblewrap, never imported by the pipeline. It reads the job (JSON) from stdin, keeps a
private copy of stdout for its reports (one JSON event a line), sends the answer's own
output (Python and C level) nowhere but a counting sink, sets the resource limits, installs
the audit hook (the second layer behind the jail), and only then loads the answer and runs
each test in its own copy of the answer's namespace.

Events, in order: `ready`; then `load_error` or `missing_entrypoint` (and nothing more), or
for each test `start` and `test`; finally `done` with what was printed.
"""

import ast
import json
import os
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


def left_side(test, scope):
    """For a failed `assert a <op> b`, what `a` was: the value a reader wants first."""
    try:
        statement = ast.parse(test).body[-1]
        if not (isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare)):
            return None
        value = eval(compile(ast.Expression(statement.test.left), "<left side>", "eval"), scope)
        return repr(value)
    except BaseException:
        return None


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
        report.write(json.dumps(event) + "\n")
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

    namespace = {"__name__": "__answer__", "__builtins__": __builtins__}
    try:
        exec(compile(job["code"], "answer.py", "exec"), namespace)
    except BaseException as exc:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        emit(event="load_error", error=message)
        os._exit(0)
    if job["entrypoint"] not in namespace:
        emit(event="missing_entrypoint")
        os._exit(0)

    for number, test in enumerate(job["tests"], 1):
        emit(event="start", test=number)
        scope = dict(namespace)
        try:
            exec(compile(test, f"<test {number}>", "exec"), scope)
        except AssertionError as exc:
            emit(event="test", test=number, passed=False, error="AssertionError",
                 message=str(exc), left=left_side(test, scope))  # fmt: skip
        except BaseException as exc:
            emit(event="test", test=number, passed=False, error=type(exc).__name__,
                 message=str(exc), left=None)  # fmt: skip
        else:
            emit(event="test", test=number, passed=True)
    emit(event="done", printed=printed.count, output="".join(printed.kept))
    os._exit(0)  # threads or atexit handlers the answer left behind must not keep it running


if __name__ == "__main__":
    main()
