"""The unit-test jail against hostile answer code.

Each test grades an answer written as an attacker would and asserts that nothing secret comes
back and that the grade is the right one. The grade (outcome, reason, details) is the only
thing the jail hands to the grader: it is what `grading.cycle` stores in `grades` and what the
release publishes from there, so "nothing in the grade" is "nothing in the warehouse or the
release". Some tests read one call's raw reply (`_reply`) to see everything the answer could
send back. The `*_jail_alone` tests run programs in the bare jail, without the audit hook, to
show the jail holds by itself; a broken jail gives `inconclusive` and never a run without it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from loopback import CountingServer

from bench_pipeline.core import settings
from bench_pipeline.grading.outcomes import CheckResult
from bench_pipeline.grading.sandbox import (
    BWRAP,
    JAIL_HOME,
    CallRun,
    JailedSandbox,
    SandboxCall,
    SandboxJob,
    jail_command,
)
from bench_pipeline.grading.scripted import run_check
from bench_pipeline.taskbank.models import UnitTestCall, UnitTestsCheck

pytestmark = pytest.mark.integration

CANARY = "sk-or-v1-canary-0123456789abcdef0123456789abcdef"
WAREHOUSE_SECRET = "warehouse-secret-5f1c"


@pytest.fixture
def secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A canary key in the grader's environment and a BENCH_HOME with a warehouse."""
    monkeypatch.setenv("OPENROUTER_API_KEY", CANARY)
    home = tmp_path / "bench-home"
    (home / "warehouse").mkdir(parents=True)
    database = home / "warehouse" / "bench.duckdb"
    with duckdb.connect(str(database)) as conn:
        conn.execute("CREATE TABLE secrets AS SELECT ? AS value", [WAREHOUSE_SECRET])
    monkeypatch.setenv("BENCH_HOME", str(home))
    task_file = next(settings.tasks_dir().glob("navigator/*.toml"))
    return {"warehouse": database, "task": task_file, "home": home}


def _check(entrypoint: str, *calls: UnitTestCall, timeout: float = 10.0) -> UnitTestsCheck:
    return UnitTestsCheck(
        kind="unit_tests", entrypoint=entrypoint, calls=calls, timeout_seconds=timeout
    )


def _call(*args: object, expect: object) -> UnitTestCall:
    return UnitTestCall(args=args, expect=expect)


def _reply(code: str, entrypoint: str, *args: object) -> CallRun:
    """One call's reply, raw: everything the answer could send back from it."""
    job = SandboxJob(code, entrypoint, (SandboxCall("call", args),), timeout_seconds=20)
    [reply] = JailedSandbox().run(job).calls
    return reply


def _everything(result: CheckResult) -> str:
    return json.dumps([result.outcome, result.reason, result.details], default=str)


def _assert_nothing_secret(result: CheckResult) -> None:
    text = _everything(result)
    assert CANARY not in text
    assert WAREHOUSE_SECRET not in text
    assert "OPENROUTER" not in text


def _jail_processes(marker: bytes = b"/opt/grader/child.py") -> list[int]:
    """Host processes still running the jail's child program (or a command holding
    `marker`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


PROC_READER = """
import os


def everything(key):
    found = {}
    for name in ["self", str(os.getppid()), *os.listdir("/proc")]:
        for part in ("environ", "cmdline"):
            try:
                found[f"{name}/{part}"] = open(f"/proc/{name}/{part}", "rb").read().decode()
            except OSError as exc:
                found[f"{name}/{part}"] = type(exc).__name__
    found["parent/environ"] = found[f"{os.getppid()}/environ"]
    print(found)
    return found if key is None else found[key]
"""


def test_proc_environ_of_the_parent_shows_no_key(secrets):
    reply = _reply(PROC_READER, "everything", None)
    assert reply.status == "returned"
    assert "1/environ" in reply.value  # it did read the jail's PID 1
    assert CANARY not in json.dumps(reply.value) and CANARY not in reply.printed
    check = _check(
        "everything",
        _call("self/environ", expect="PWD=/home/answer\x00"),
        # A failing test quotes what was returned: whatever it read must be clean.
        _call("parent/environ", expect="x"),
        _call(None, expect={}),
    )
    result = run_check(check, PROC_READER, sandbox=JailedSandbox())
    assert result.outcome == "partial", result.reason
    # The parent is bubblewrap (PID 1): its environment is empty, or holds only the PWD of
    # the shell that put it in its cgroup, which is `/`, never the grader's directory.
    assert result.reason.startswith("1 of 3 tests passed; test 2 failed: returned ")
    assert reply.value["1/environ"] in ("", "PWD=/\x00")
    assert reply.value["self/environ"] == "PWD=/home/answer\x00"
    # The grade quotes what test 3 returned, without test 1's argument and expected value.
    assert 'test 3 failed: returned {"[hidden]": "[hidden]", "self/cmdline": ' in result.reason
    assert "'1/environ'" in result.details["printed"]
    _assert_nothing_secret(result)


def test_listing_proc_shows_only_the_jail(secrets):
    answer = (
        "import os\n\ndef pids():\n"
        "    return sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
    )
    result = run_check(_check("pids", _call(expect=[1, 2])), answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("pass", "1 of 1 tests passed")
    _assert_nothing_secret(result)


def test_the_task_bank_the_warehouse_and_the_repository_are_not_there(secrets):
    paths = {
        "task": str(secrets["task"]),
        "warehouse": str(secrets["warehouse"]),
        "bench_home": str(secrets["home"]),
        "repository": str(Path(__file__).resolve().parents[1]),
        "virtualenv": sys.prefix,
    }
    answer = f"""
import os

PATHS = {paths!r}


def attempts():
    found = {{}}
    for name, path in PATHS.items():
        try:
            found[name] = open(path, "rb").read(100).decode("latin-1")
        except OSError as exc:
            found[name] = type(exc).__name__
        found[name + " exists"] = os.path.exists(path)
    print(found)
    return found
"""
    nowhere = {name: "FileNotFoundError" for name in paths}
    nowhere |= {f"{name} exists": False for name in paths}
    result = run_check(_check("attempts", _call(expect=nowhere)), answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("pass", "1 of 1 tests passed")
    task_text = secrets["task"].read_text()
    assert task_text[:100] not in _everything(result)
    _assert_nothing_secret(result)


def test_writing_outside_the_home_is_refused(secrets, tmp_path):
    host_file = tmp_path / "escaped.txt"
    answer = f"""
import os


def writes():
    found = {{}}
    for path in ({str(host_file)!r}, "/usr/escaped", "/escaped", "/proc/escaped"):
        try:
            with open(path, "w") as handle:
                handle.write("x")
            found[path] = "written"
        except OSError as exc:
            found[path] = type(exc).__name__
    with open("inside.txt", "w") as handle:
        handle.write("fine")
    found["inside"] = open("inside.txt").read()
    found["cwd"] = os.getcwd()
    return found
"""
    refused = {path: "PermissionError" for path in (str(host_file), "/usr/escaped", "/escaped",
                                                     "/proc/escaped")}  # fmt: skip
    check = _check("writes", _call(expect=refused | {"inside": "fine", "cwd": JAIL_HOME}))
    result = run_check(check, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("pass", "1 of 1 tests passed")
    _assert_nothing_secret(result)
    assert not host_file.exists()


def test_a_fork_bomb_starts_nothing_and_leaves_nothing(secrets):
    answer = """
import os
import subprocess
import sys


def reload_posixsubprocess():
    # A fresh copy of the extension, in case the loaded one was tampered with.
    sys.modules.pop("_posixsubprocess", None)
    __import__("_posixsubprocess")


def bomb():
    refused = []
    for name, start in [
        ("fork", os.fork),
        ("subprocess", lambda: subprocess.Popen(["/usr/bin/true"])),
        ("posix_spawn", lambda: os.posix_spawn("/usr/bin/true", ["true"], {})),
        ("system", lambda: os.system("true")),
        ("_posixsubprocess", reload_posixsubprocess),
    ]:
        try:
            while True:
                start()
        except PermissionError:
            refused.append(name)
    return refused
"""
    check = _check(
        "bomb", _call(expect=["fork", "subprocess", "posix_spawn", "system", "_posixsubprocess"])
    )
    result = run_check(check, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("pass", "1 of 1 tests passed")
    _assert_nothing_secret(result)
    assert _jail_processes() == []


def test_a_10_gb_allocation_is_refused(secrets):
    answer = "def big():\n    block = bytearray(10 * 1024**3)\n    return len(block)\n"
    check = _check("big", _call(expect=10 * 1024**3))
    started = time.monotonic()
    result = run_check(check, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == (
        "fail",
        "0 of 1 tests passed; test 1 failed: raised MemoryError",
    )
    assert time.monotonic() - started < 30
    _assert_nothing_secret(result)


def test_an_infinite_loop_is_killed_with_its_jail(secrets):
    answer = (
        "import signal, threading\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "def spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "def loop():\n    spin()\n"
    )
    check = _check("loop", _call(expect=None), _call(expect=None), timeout=2.0)
    started = time.monotonic()
    result = run_check(check, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("fail", "timed out after 2s")
    assert result.details["stuck_in_test"] == 1  # and the second call is not made
    assert [t["passed"] for t in result.details["tests"]] == [None, None]
    assert time.monotonic() - started < 10
    _assert_nothing_secret(result)
    assert _jail_processes() == []


def test_the_time_limit_covers_all_the_calls_together(secrets):
    # Each call alone is within the limit; the second one is not within what is left of it.
    answer = "import time\n\ndef slow(n):\n    time.sleep(2)\n    return n\n"
    check = _check("slow", *(_call(n, expect=n) for n in range(3)), timeout=3.5)
    started = time.monotonic()
    result = run_check(check, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("fail", "timed out after 3.5s")
    assert result.details["stuck_in_test"] == 2
    assert [t["passed"] for t in result.details["tests"]] == [True, None, None]
    assert time.monotonic() - started < 8
    assert _jail_processes() == []


@pytest.fixture
def server() -> Iterator[CountingServer]:
    listening = CountingServer()
    yield listening
    listening.close()


def _reaches(server: CountingServer) -> None:
    """The server does count a connection that is allowed (so a zero means something)."""
    before = server.accepted
    socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
    deadline = time.monotonic() + 2
    while server.accepted == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.accepted == before + 1


def test_a_socket_to_a_loopback_server_never_connects(secrets, server):
    answer = f"""
import socket

ADDRESS = ("127.0.0.1", {server.port})


def connect():
    tried = []
    for name, attempt in [
        ("socket", lambda: socket.create_connection(("127.0.0.1", {server.port}), timeout=1)),
        ("raw _socket", lambda: __import__("_socket").socket().connect(ADDRESS)),
    ]:
        try:
            attempt()
            tried.append(name + ": connected")
        except Exception as exc:
            tried.append(f"{{name}}: {{type(exc).__name__}}")
    return tried
"""
    check = _check("connect", _call(expect=["socket: PermissionError",
                                            "raw _socket: PermissionError"]))  # fmt: skip
    result = run_check(check, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("pass", "1 of 1 tests passed")
    _assert_nothing_secret(result)
    time.sleep(0.2)
    assert server.accepted == 0
    _reaches(server)


# The jail alone (no audit hook) ----------------------------------------------------------------

BARE_PROBE = """
import json, os, socket, sys
found = {{}}
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
    found["connect"] = "connected"
except OSError as exc:
    found["connect"] = type(exc).__name__
for path in ({paths}):
    try:
        open(path, "rb").read(10)
        found[path] = "read"
    except OSError as exc:
        found[path] = type(exc).__name__
for path in ("/usr/x", "/x", "/opt/x"):
    try:
        open(path, "w").write("x")
        found["write " + path] = "written"
    except OSError as exc:
        found["write " + path] = type(exc).__name__
found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
found["environ"] = {{p: open(f"/proc/{{p}}/environ", "rb").read().decode() for p in ("1", "self")}}
found["uid_map"] = open("/proc/self/uid_map").read().split()
found["capabilities"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")]
print(json.dumps(found))
"""


def test_the_jail_alone_holds_without_the_audit_hook(secrets, server, tmp_path):
    paths = [str(secrets["task"]), str(secrets["warehouse"]), str(tmp_path), "/etc/passwd"]
    script = BARE_PROBE.format(port=server.port, paths=", ".join(map(repr, paths)) + ",")
    python = os.path.realpath(sys.executable)
    command = jail_command(BWRAP, [python, "-I", "-S", "-c", script])
    finished = subprocess.run(command, env={}, capture_output=True, timeout=60, check=True)
    found = json.loads(finished.stdout)
    assert found["connect"] in {"OSError", "ConnectionRefusedError"} or found["connect"].endswith(
        "Error"
    )
    assert found["connect"] != "connected"
    for path in paths:
        assert found[path] == "FileNotFoundError", (path, found[path])
    assert {found[f"write {p}"] for p in ("/usr/x", "/x", "/opt/x")} <= {
        "OSError", "PermissionError", "FileNotFoundError"
    }  # fmt: skip
    assert found["pids"] == [1, 2]
    assert found["environ"] == {"1": "", "self": "PWD=/home/answer\x00"}
    assert found["capabilities"] == ["0000000000000000"]
    assert CANARY not in finished.stdout.decode()
    time.sleep(0.2)
    assert server.accepted == 0
    _reaches(server)


# A broken jail ---------------------------------------------------------------------------------


def _marker_answer(marker: Path) -> str:
    return f"def touch():\n    open({str(marker)!r}, 'w').write('ran unjailed')\n    return True\n"


def test_a_missing_bubblewrap_is_inconclusive(tmp_path):
    marker = tmp_path / "ran.txt"
    result = run_check(
        _check("touch", _call(expect=True)),
        _marker_answer(marker),
        sandbox=JailedSandbox(bwrap=str(tmp_path / "no-bwrap")),
    )
    assert (result.outcome, result.reason) == (
        "inconclusive",
        f"not graded: the unit-test jail is unavailable: bubblewrap is not installed at "
        f"{tmp_path / 'no-bwrap'}",
    )
    assert not marker.exists()


def test_a_jail_that_fails_to_start_is_inconclusive_never_a_run_without_it(tmp_path):
    # A bubblewrap that cannot set up its namespaces, as on a host that forbids them: the
    # real binary, refused one of its options.
    broken = tmp_path / "bwrap"
    broken.write_text(f'#!/bin/sh\nexec {BWRAP} --unshare-everything-please "$@"\n')
    broken.chmod(0o755)
    marker = tmp_path / "ran.txt"
    result = run_check(
        _check("touch", _call(expect=True)),
        _marker_answer(marker),
        sandbox=JailedSandbox(str(broken)),
    )
    assert result.outcome == "inconclusive"
    assert result.reason.startswith(
        "not graded: the unit-test jail is unavailable: the jail did not start (exit code 1): "
        "bwrap: Unknown option --unshare-everything-please"
    ), result.reason
    assert not marker.exists()


def test_a_broken_jail_in_a_grading_cycle_goes_to_a_person(tmp_path):
    import asyncio
    from datetime import UTC, datetime

    from bench_pipeline.grading.browser_offline import RecordedInspector
    from bench_pipeline.grading.cycle import RunToGrade, grade_runs
    from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
    from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
    from bench_pipeline.taskbank import load_bank

    case = load_bank().get("navigator", "nav-coding-small-functions")
    marker = tmp_path / "ran.txt"
    run = RunToGrade("r00000000000000aa", case, "slugify", _marker_answer(marker), "Nobody")
    result = asyncio.run(grade_runs(
        [run], SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, [], "c-jail",
        rates={}, now=datetime(2026, 11, 30, tzinfo=UTC), screenshots=tmp_path,
        inspector=RecordedInspector(tmp_path / "browser"),
        sandbox=JailedSandbox(bwrap=str(tmp_path / "no-bwrap")),
    ))  # fmt: skip
    [grade] = result.grades
    assert (grade["outcome"], grade["grader"]) == ("inconclusive", "script:unit_tests@2")
    assert grade["reason"].endswith("bubblewrap is not installed at " + str(tmp_path / "no-bwrap"))
    [look] = result.second_look
    assert (look.run_id, look.reason, look.detail) == (run.run_id, "inconclusive_check",
                                                      grade["reason"])  # fmt: skip
    assert not marker.exists()


def test_what_the_answer_read_never_reaches_the_warehouse(secrets, tmp_path):
    """The whole path: a cycle grades an answer that returns every environment it can read
    (so a failing assert quotes it), the grades are stored, and neither the rows nor the
    database file hold the canary key."""
    import asyncio
    from datetime import UTC, datetime

    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.grading.browser_offline import RecordedInspector
    from bench_pipeline.grading.cycle import RunToGrade, grade_runs
    from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
    from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
    from bench_pipeline.grading.store import store_cycle
    from bench_pipeline.taskbank import load_bank

    answer = (
        "import os\n\ndef slugify(title):\n    seen = []\n"
        "    for p in ['self', str(os.getppid()), *os.listdir('/proc')]:\n"
        "        try:\n            seen.append(open(f'/proc/{p}/environ').read())\n"
        "        except OSError:\n            pass\n"
        "    print(seen)\n    return '|'.join(seen)\n"
    )
    case = load_bank().get("navigator", "nav-coding-small-functions")
    now = datetime(2026, 11, 30, tzinfo=UTC)
    run = RunToGrade("r00000000000000bb", case, "slugify", answer, "Nobody")
    result = asyncio.run(grade_runs(
        [run], SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, [], "c-leak",
        rates={}, now=now, screenshots=tmp_path, sandbox=JailedSandbox(),
        inspector=RecordedInspector(tmp_path / "browser"),
    ))  # fmt: skip
    [grade] = result.grades
    assert grade["outcome"] == "fail"
    assert 'returned "PWD=/home/answer' in grade["reason"]  # what it read is quoted
    database = tmp_path / "grades.duckdb"
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        store_cycle(conn, "c-leak", result, now)
        stored = conn.execute("SELECT reason, details FROM grades").fetchall()
    assert len(stored) == 1 and "PWD=/home/answer" in stored[0][1]
    assert CANARY not in json.dumps(stored)
    assert CANARY.encode() not in database.read_bytes()


def test_a_jail_that_would_show_bench_home_is_refused(tmp_path, monkeypatch):
    # BENCH_HOME inside a directory the jail binds (here: the Python installation) would put
    # the warehouse inside the jail: the jail refuses to start instead.
    prefix = Path(os.path.realpath(sys.base_prefix))
    monkeypatch.setenv("BENCH_HOME", str(prefix / "lib"))
    result = run_check(_check("touch", _call(expect=True)), _marker_answer(tmp_path / "ran.txt"))
    assert result.outcome == "inconclusive"
    assert result.reason == (
        f"not graded: the unit-test jail is unavailable: {prefix}, which the jail would show, "
        f"holds BENCH_HOME ({prefix / 'lib'})"
    )


FORK_BOMB = """
import os, time
started = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
except OSError as exc:
    print(started, type(exc).__name__)
"""


def test_a_fork_bomb_in_the_jail_alone_is_capped():
    from bench_pipeline.grading.sandbox import PIDS_LIMIT, _in_cgroup, pids_cgroup

    python = os.path.realpath(sys.executable)
    with pids_cgroup() as cgroup:
        if cgroup is None:
            pytest.skip("this machine gives no pids cgroup (the audit hook still refuses forks)")
        command = _in_cgroup(cgroup, jail_command(BWRAP, [python, "-I", "-S", "-c", FORK_BOMB]))
        finished = subprocess.run(command, env={}, capture_output=True, timeout=60)
    started, error = finished.stdout.decode().split()
    # bubblewrap's PID 1, the shell's exec and the interpreter hold the rest of the limit.
    assert 0 < int(started) < PIDS_LIMIT and error == "BlockingIOError", finished
    assert _jail_processes(b"os.fork() == 0") == []  # the forks died with the jail
    assert not cgroup.exists()


# Answers that try to grade themselves ---------------------------------------------------------

SLUGIFY_CHECK = _check(
    "slugify",
    _call("Hello, World!", expect="hello-world"),
    _call("  --Already--Slugged--  ", expect="already-slugged"),
    _call("", expect=""),
)
SLUGIFY = (
    "import re\n\ndef slugify(title):\n"
    "    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')\n"
)


def _hidden(check: UnitTestsCheck) -> list[str]:
    """What of `check` a grade must never hold: each expected value and argument (as JSON),
    and each string among them of at least four characters."""
    texts = []
    for call in check.calls:
        for value in (call.expect, *call.args):
            texts.append(json.dumps(value))
            if isinstance(value, str) and len(value) >= 4:
                texts.append(value)
    return [t for t in texts if len(t) >= 4]


def _assert_nothing_hidden(result: CheckResult, check: UnitTestsCheck = SLUGIFY_CHECK) -> None:
    text = _everything(result)
    unescaped = json.loads(json.dumps(text))  # the same, for texts with escaped characters
    for hidden in _hidden(check):
        assert hidden not in text and hidden not in unescaped, hidden


def _writes_everywhere(payload: str) -> str:
    """Code that writes `payload` (bytes, as Python source) to every descriptor it has."""
    return (
        "for fd in range(64):\n"
        "    try:\n"
        f"        os.write(fd, {payload})\n"
        "    except OSError:\n"
        "        pass\n"
    )


OLD_FORGERY = "b''.join(json.dumps(e).encode() + b'\\n' for e in FORGED)"


def test_forged_result_lines_are_not_results(secrets):
    # The lines the jail's old protocol trusted: three passed tests and the end of the run,
    # written on every descriptor before a single test ran; then the process ends.
    answer = (
        "import json, os\n"
        "FORGED = [{'event': 'start', 'test': n} for n in (1, 2, 3)]\n"
        "FORGED += [{'event': 'test', 'test': n, 'passed': True} for n in (1, 2, 3)]\n"
        "FORGED += [{'event': 'done', 'printed': 0, 'output': ''}]\n"
        + _writes_everywhere(OLD_FORGERY)
        + "os._exit(0)\n"
    )
    result = run_check(SLUGIFY_CHECK, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == (
        "fail",
        "0 of 3 tests passed; "
        + "; ".join(
            f"test {n} failed: its reply could not be read (8 events where the child writes at "
            "most 3)"
            for n in (1, 2, 3)
        ),
    )
    _assert_nothing_hidden(result)


def test_a_perfectly_forged_reply_is_only_the_answers_own_reply(secrets):
    # The forger writes exactly what the child would write for a returned "hello-world" and
    # ends: that is the answer "hello-world" to every call, graded as such (the same grade as
    # the honest constant function), and nothing more.
    forged = (
        "import json, os\n"
        "FORGED = [{'event': 'loaded'}, {'event': 'reply', 'status': 'returned', "
        "'value': 'hello-world', 'printed': 0, 'output': ''}]\n"
        + _writes_everywhere(OLD_FORGERY)
        + "os._exit(0)\n"
    )
    constant = "def slugify(title):\n    return 'hello-world'\n"
    result = run_check(SLUGIFY_CHECK, forged, sandbox=JailedSandbox())
    honest = run_check(SLUGIFY_CHECK, constant, sandbox=JailedSandbox())
    assert (
        (result.outcome, result.reason)
        == (honest.outcome, honest.reason)
        == (
            "partial",
            '1 of 3 tests passed; test 2 failed: returned "[hidden]", not the expected value; '
            'test 3 failed: returned "[hidden]", not the expected value',
        )
    )
    _assert_nothing_hidden(result)


ALWAYS_EQUAL = """
class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


class Sneaky(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def slugify(title):
    return AlwaysEqual() if title else Sneaky("")
"""


def test_a_value_equal_to_everything_is_not_json(secrets):
    result = run_check(SLUGIFY_CHECK, ALWAYS_EQUAL, sandbox=JailedSandbox())
    why = "returned something that is not plain JSON data"
    assert (result.outcome, result.reason) == (
        "fail",
        f"0 of 3 tests passed; test 1 failed: {why} (type AlwaysEqual); "
        f"test 2 failed: {why} (type AlwaysEqual); test 3 failed: {why} (type Sneaky)",
    )
    _assert_nothing_hidden(result)


STACK_READER = """
import gc, sys

SEEN = []
WANTED = ("tcepxe", "tressa", "dlrow-olleh")  # reversed: never held forwards by this code


def look():
    frames, frame = [], sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    for frame in frames[1:]:  # its callers' locals: the old jail's tests were one frame up
        SEEN.append(repr(frame.f_locals)[:20000])
    for frame in frames:
        SEEN.append(repr(frame.f_globals)[:20000])
    for thing in gc.get_objects():
        try:
            text = repr(thing)
        except Exception:
            continue
        if any(wanted[::-1] in text for wanted in WANTED):
            SEEN.append(text[:2000])
    print(SEEN)


look()


def slugify(title):
    look()
    return "\\n".join(SEEN)
"""


def test_reading_the_tests_from_the_stack_finds_none(secrets):
    expected = [call.expect for call in SLUGIFY_CHECK.calls if call.expect]
    reply = _reply(STACK_READER, "slugify", "Hello, World!")
    assert reply.status == "returned" and "Hello, World!" in reply.value  # its own argument
    for value in expected:  # never the expected values: they never enter the process
        assert value not in reply.value and value not in reply.printed
    assert "slugify(" in reply.value  # it did see the harness's frames (its own code)
    result = run_check(SLUGIFY_CHECK, STACK_READER, sandbox=JailedSandbox())
    assert result.outcome == "fail" and result.reason.startswith("0 of 3 tests passed")
    assert result.details["printed"]  # what it printed is kept, without the hidden texts
    _assert_nothing_hidden(result)


def test_ending_the_process_before_the_tests_is_a_fail(secrets):
    answer = "import os\nos._exit(0)\n" + SLUGIFY
    result = run_check(SLUGIFY_CHECK, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == (
        "fail",
        "the code ended its process while loading (exit code 0)",
    )
    assert [t["passed"] for t in result.details["tests"]] == [None, None, None]


def test_printing_a_megabyte_is_still_graded(secrets):
    answer = SLUGIFY.replace("    return", "    print('x' * 1024**2)\n    return")
    result = run_check(SLUGIFY_CHECK, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == ("pass", "3 of 3 tests passed")
    assert result.details["printed_chars"] == 3 * (1024**2 + 1)
    assert len(result.details["printed"]) == 2000


def test_a_megabyte_on_the_reply_channel_is_killed_at_the_cap(secrets):
    answer = "import os\n" + SLUGIFY.replace(
        "    return", _writes_everywhere("b'x' * 1024**2").replace("\n", "\n    ") + "return"
    ).replace("def slugify(title):\n", "def slugify(title):\n    ")
    result = run_check(SLUGIFY_CHECK, answer, sandbox=JailedSandbox())
    assert (result.outcome, result.reason) == (
        "fail",
        "the answer wrote more than 1 MiB to the grader during test 1; its jail was killed",
    )
    assert [t["passed"] for t in result.details["tests"]] == [None, None, None]
    assert _jail_processes() == []


FLOOD_GRADER = """
import json, sys, time
from bench_pipeline.grading.sandbox import JailedSandbox
from bench_pipeline.grading.scripted import run_check
from bench_pipeline.taskbank.models import UnitTestsCheck

check = UnitTestsCheck.model_validate_json(sys.argv[1])
answer = sys.argv[2]
started = time.monotonic()
result = run_check(check, answer, sandbox=JailedSandbox())
peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"outcome": result.outcome, "reason": result.reason,
                  "seconds": time.monotonic() - started,
                  "peak_bytes": int(peak.split()[1]) * 1024}))
"""

GIGABYTE_FLOOD = """
import os, stat

def slugify(title):
    pipes = []
    for fd in range(64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes.append(fd)
        except OSError:
            pass
    block = b"x" * 1024**2
    for _ in range(1024):  # a gigabyte on every pipe it holds
        for fd in pipes:
            try:
                os.write(fd, block)
            except OSError:
                pass
    return "done"
"""


def test_a_gigabyte_flood_leaves_the_grader_under_200_mb(secrets):
    """The grader runs in a process of its own here so that its peak memory is the grading's
    alone: VmHWM, the high-water mark of its resident memory since it started (not
    `ru_maxrss`, which Linux carries over from the forked test process across the exec)."""
    command = [sys.executable, "-c", FLOOD_GRADER, SLUGIFY_CHECK.model_dump_json(),
               GIGABYTE_FLOOD]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, timeout=120, check=True)
    measured = json.loads(finished.stdout)
    assert measured["peak_bytes"] < 200 * 1024**2, measured
    assert (measured["outcome"], measured["reason"]) == (
        "fail",
        "the answer wrote more than 1 MiB to the grader during test 1; its jail was killed",
    )
    assert measured["seconds"] < 30, measured
    assert _jail_processes() == []


def test_nothing_hidden_reaches_the_stored_grade(secrets, tmp_path):
    """A cycle grades the stack reader on the bank's own check; the stored row holds neither
    an argument nor an expected value of any of its calls."""
    import asyncio
    from datetime import UTC, datetime

    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.grading.browser_offline import RecordedInspector
    from bench_pipeline.grading.cycle import RunToGrade, grade_runs
    from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
    from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
    from bench_pipeline.grading.store import store_cycle
    from bench_pipeline.taskbank import load_bank

    case = load_bank().get("navigator", "nav-coding-small-functions")
    [check] = [i.check for i in case.inputs if i.id == "slugify"]
    assert isinstance(check, UnitTestsCheck)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    run = RunToGrade("r00000000000000cc", case, "slugify", STACK_READER, "Nobody")
    result = asyncio.run(grade_runs(
        [run], SimulatedJudgeProvider(), SIMULATED_JUDGE_POOL, [], "c-stack",
        rates={}, now=now, screenshots=tmp_path, sandbox=JailedSandbox(),
        inspector=RecordedInspector(tmp_path / "browser"),
    ))  # fmt: skip
    database = tmp_path / "grades.duckdb"
    with connect(database) as conn:
        migrate(conn, settings.migrations_dir())
        store_cycle(conn, "c-stack", result, now)
        stored = conn.execute("SELECT outcome, reason, details FROM grades").fetchall()
    [(outcome, reason, details)] = stored
    assert outcome == "fail" and "[hidden]" in details
    for hidden in _hidden(check):
        assert hidden not in reason and hidden not in details, hidden
