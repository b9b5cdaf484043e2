"""Throwaway PostgreSQL and Redis servers for the scale-out tests (session-scoped fixtures).

Each server lives in its own temporary folder, listens on 127.0.0.1 on a free port and is
stopped (then its folder removed) when the session ends, whatever the tests did. Nothing
global is started or touched: no system cluster, no service, no fixed port.

Should the test process itself die (a CI timeout's SIGTERM or SIGKILL), no finalizer runs: a
small watchdog process (the `reaper` fixture) then kills whatever is still registered with it.
Tests start their own long-lived processes through it too (`reaper.spawn`, `reaper.stop`).

A missing binary fails the test with the package to install, rather than skipping it:
`.ci/run` (through `make services`) installs Debian's `postgresql` and `redis-server`.

Use them from a test module with `from servers import postgres_server, reaper, redis_server`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HOST = "127.0.0.1"
# PostgreSQL refuses to run as root; as root the cluster is owned and run by this system user.
POSTGRES_SYSTEM_USER = "postgres"
START_ATTEMPTS = 3  # a free port can be taken between the probe and the server's bind


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


# --- The watchdog -----------------------------------------------------------------------------

_REAPER_SCRIPT = r"""
import json, os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups, commands = {}, {}
for line in sys.stdin:  # ends when the test process closes the pipe, or dies
    verb, key, payload = line.rstrip("\n").split(" ", 2)
    if verb == "group":
        groups[key] = int(payload)
    elif verb == "commands":
        commands[key] = json.loads(payload)
    else:  # forget: the payload is the key of an earlier registration
        groups.pop(payload, None)
        commands.pop(payload, None)
for pgid in groups.values():
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
for argvs in commands.values():
    for argv in argvs:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
"""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Reaper:
    """A watchdog process that reads registrations on a pipe. When the pipe closes with
    registrations left (the test process died before its finalizers ran), it SIGKILLs the
    registered process groups and runs the registered clean-up commands."""

    def __init__(self) -> None:
        self._keys = itertools.count()
        self._group_keys: dict[int, str] = {}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _REAPER_SCRIPT],
            stdin=subprocess.PIPE,
            text=True,
            start_new_session=True,  # outside the test's process group: it must outlive it
        )

    def _send(self, verb: str, payload: str) -> str:
        key = str(next(self._keys))
        self.process.stdin.write(f"{verb} {key} {payload}\n")
        self.process.stdin.flush()
        return key

    def commands(self, argvs: list[list[str]]) -> str:
        """Run these commands, in order, if the tests die; returns the key to `forget`."""
        return self._send("commands", json.dumps(argvs))

    def forget(self, key: str) -> None:
        self._send("forget", key)

    def spawn(self, argv: list[str], **popen_kwargs) -> subprocess.Popen:
        """`subprocess.Popen` in a new session (so the process and every child it forks share
        one process group), registered to be killed if the tests die."""
        process = subprocess.Popen(argv, start_new_session=True, **popen_kwargs)
        self._group_keys[process.pid] = self._send("group", str(process.pid))
        return process

    def stop(self, *processes: subprocess.Popen, grace: float = 10) -> None:
        """TERM each process's group, wait up to `grace` seconds for every group (with, say, a
        Celery pool) to be gone, then KILL whatever is left; and unregister them."""
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        alive = list(processes)
        while alive and time.monotonic() < deadline:
            for process in alive:
                process.poll()  # reap our own child, so that it does not linger as a zombie
            alive = [p for p in alive if _group_alive(p.pid)]
            time.sleep(0.1)
        for process in alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        for process in processes:
            process.wait()
            if process.pid in self._group_keys:
                self.forget(self._group_keys.pop(process.pid))

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="session")
def reaper() -> Iterator[Reaper]:
    watchdog = Reaper()
    try:
        yield watchdog
    finally:
        watchdog.close()


# --- PostgreSQL -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str
    db: str

    def env(self) -> dict[str, str]:
        """The variables `deploy/postgres/dagster.yaml` reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": self.db,
        }

    def connect(self, db: str | None = None):
        import psycopg2

        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=db or self.db,
            connect_timeout=10,
        )


def postgres_bindir() -> Path:
    """Where `initdb` and `pg_ctl` are: Debian keeps them off PATH, under
    /usr/lib/postgresql/<major>/bin (the newest major wins); else PATH."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.parent.name)] or [0],
    )
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    pytest.fail(
        "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin "
        "or on PATH. Install Debian's postgresql package: `make services` "
        "(apt-get install -y --no-install-recommends postgresql).",
        pytrace=False,
    )


def _server_user() -> pwd.struct_passwd | None:
    """None when we are not root (the server runs as ourselves), else its unprivileged owner,
    created as a system user if Debian's package has not created it."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(POSTGRES_SYSTEM_USER)
    except KeyError:
        nologin = ["--no-create-home", "--shell", "/usr/sbin/nologin"]
        subprocess.run(["useradd", "--system", *nologin, POSTGRES_SYSTEM_USER], check=True)
        return pwd.getpwnam(POSTGRES_SYSTEM_USER)


def _as(user: pwd.struct_passwd | None, command: list[str]) -> list[str]:
    return command if user is None else ["runuser", "-u", user.pw_name, "--", *command]


@pytest.fixture(scope="session")
def postgres_server(reaper: Reaper) -> Iterator[Postgres]:
    """A fresh PostgreSQL cluster: password (SCRAM) login over TCP on 127.0.0.1 and an empty
    database `dagster` owned by the user `bench`. fsync is off: nothing here must survive."""
    bindir = postgres_bindir()
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    data, sockets, log = root / "data", root / "sockets", root / "server.log"
    pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data)]
    stop = _as(user, [*pg_ctl, "-m", "immediate", "-w", "stop"])
    cleanup = reaper.commands([stop, ["rm", "-rf", str(root)]])
    password = secrets.token_hex(12)
    pwfile = root / "password"
    pwfile.write_text(password + "\n")
    sockets.mkdir()
    if user is not None:
        for path in (root, sockets, pwfile):
            os.chown(path, user.pw_uid, user.pw_gid)
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "bench", f"--pwfile={pwfile}"]
        initdb += ["--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"]
        done = subprocess.run(
            _as(user, [*initdb, "--locale=C"]), capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            pytest.fail(f"initdb failed: {done.stdout}{done.stderr}", pytrace=False)
        for attempt in range(START_ATTEMPTS):
            port = free_port()
            options = (
                f"-c listen_addresses={HOST} -p {port} -c unix_socket_directories={sockets} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            start = [*pg_ctl, "-l", str(log), "-o", options, "-w", "-t", "60", "start"]
            done = subprocess.run(_as(user, start), capture_output=True, text=True, timeout=90)
            if done.returncode == 0:
                break
            subprocess.run(stop, capture_output=True, timeout=60)
            if attempt == START_ATTEMPTS - 1:
                server_log = log.read_text() if log.exists() else ""
                pytest.fail(f"pg_ctl start failed: {done.stderr}\n{server_log}", pytrace=False)
        server = Postgres(host=HOST, port=port, user="bench", password=password, db="dagster")
        with contextlib.closing(server.connect(db="postgres")) as admin:
            admin.autocommit = True
            with admin.cursor() as cursor:
                cursor.execute("CREATE DATABASE dagster")
        yield server
    finally:
        subprocess.run(stop, capture_output=True, timeout=60)
        pidfile = data / "postmaster.pid"
        if pidfile.exists():  # pg_ctl could not stop it: it must not outlive the tests
            with contextlib.suppress(ValueError, IndexError, ProcessLookupError):
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
        reaper.forget(cleanup)


# --- Redis ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Redis:
    host: str
    port: int

    def url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"


@pytest.fixture(scope="session")
def redis_server(reaper: Reaper) -> Iterator[Redis]:
    """A fresh redis-server that writes nothing to disk."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "redis-server not found on PATH. Install Debian's redis-server package: "
            "`make services` (apt-get install -y --no-install-recommends redis-server).",
            pytrace=False,
        )
    root = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    cleanup = reaper.commands([["rm", "-rf", str(root)]])
    log = root / "server.log"
    process = None
    try:
        for attempt in range(START_ATTEMPTS):
            port = free_port()
            argv = [binary, "--port", str(port), "--bind", HOST, "--save", ""]
            argv += ["--appendonly", "no", "--dir", str(root), "--daemonize", "no"]
            with log.open("ab") as output:
                process = reaper.spawn(argv, stdout=output, stderr=subprocess.STDOUT)
            client = redis.Redis(host=HOST, port=port, socket_timeout=2)
            deadline = time.monotonic() + 15
            ready = False
            while not ready and time.monotonic() < deadline and process.poll() is None:
                try:
                    ready = bool(client.ping())
                except redis.RedisError:
                    time.sleep(0.1)
            client.close()
            if ready:
                break
            reaper.stop(process)
            process = None
            if attempt == START_ATTEMPTS - 1:
                pytest.fail(f"redis-server did not answer:\n{log.read_text()}", pytrace=False)
        yield Redis(host=HOST, port=port)
    finally:
        if process is not None:
            reaper.stop(process)
        shutil.rmtree(root, ignore_errors=True)
        reaper.forget(cleanup)
