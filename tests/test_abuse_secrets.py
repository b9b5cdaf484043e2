"""The API key never leaks: `bench run` in live model mode with a canary key, against model
and judge servers that misbehave (a 401 echoing the Authorization header, an error object
quoting the key, a 500 dumping it base64-encoded, a model parroting it back), then every file
the pipeline wrote, and everything it printed, searched for the key in every form.

Model calls go to a loopback server through the setups' `base_url`, with the key of its own
that the record names (`api_key_env`); the judges get the OpenRouter key. Judges are called
at OpenRouter's https address, so the `bench run` subprocess reaches them the way a client
behind a TLS-inspecting proxy does: `HTTPS_PROXY` names a local proxy that answers CONNECT for
openrouter.ai with a certificate from a throwaway CA, which `SSL_CERT_FILE` makes the only CA
trusted. Nothing leaves the machine.

The operator's path, twice: the first run meets the misbehaving server (some model runs fail
for good, so the run stops after the model runs); people then review some of the stored runs
(two each, so the judge-person calibration gate has its pairs); the second run meets a healthy
server, resumes the failed runs, grades everything and publishes the release and the site.
"""

import asyncio
import base64
import fnmatch
import hashlib
import json
import shutil
import ssl
import subprocess
import sys
import threading
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import duckdb
import pytest
from abuse_tally import TALLY
from loopback import LoopbackServer, Reply, chat_completions
from stages import bench_env

from bench_pipeline.core import settings
from bench_pipeline.grading.judge_simulated import SimulatedJudgeProvider
from bench_pipeline.providers.base import ChatRequest
from bench_pipeline.providers.openai_compatible import scrub

pytestmark = [pytest.mark.unit, pytest.mark.abuse]

REPO = Path(__file__).resolve().parent.parent
MODEL_PATH = "/v1/chat/completions"
JUDGE_HOST = "openrouter.ai"
MODEL_KEY_VARIABLE = "LOOPBACK_MODEL_KEY"
"""The model server's own key (its record's `api_key_env`); the judges get OPENROUTER_API_KEY."""
REDACTED = b"[redacted]"


# --- the key in every form it could be written in ---------------------------------------------


def key_forms(key: str) -> dict[str, bytes]:
    """Byte strings that give the key away: as is, as a header, hex, and base64 (standard and
    URL-safe) both whole and as the stable middle of a longer base64 text, at each of the three
    byte alignments the key could sit at."""
    raw = key.encode()
    forms = {"key": raw, "Bearer key": b"Bearer " + raw, "hex": raw.hex().encode()}
    for name, data in (("key", raw), ("Bearer key", b"Bearer " + raw)):
        forms[f"base64({name})"] = base64.b64encode(data)
        forms[f"base64url({name})"] = base64.urlsafe_b64encode(data)
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        core = encoded[4 if shift else 0 : 4 * ((shift + len(raw)) // 3)]
        forms[f"base64 core at +{shift}"] = core
        forms[f"base64url core at +{shift}"] = core.replace(b"+", b"-").replace(b"/", b"_")
    return forms


# --- the model server: misbehaving, then healthy ----------------------------------------------


class ModelServer:
    """Answers chat completions on the loopback; while `misbehaving`, a request's hash picks
    its fate: 401 echoing the header, an error object quoting the key, a 500 dumping it base64
    (once: the retry succeeds), or (always) a model parroting the header back."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.misbehaving = True
        self.answer = chat_completions()
        self.failed_once: set[str] = set()
        self.injected: Counter[str] = Counter()

    def __call__(self, sent: bytes) -> Reply:
        digest = hashlib.sha256(sent).hexdigest()
        fate = int(digest[:8], 16) % 8
        header = f"Bearer {self.key}"
        b64 = base64.b64encode(header.encode()).decode()
        if fate == 3:  # a model that repeats what it was sent, whatever the mode
            self.injected["parrot"] += 1
            return self._parrot(sent, header, b64)
        if not self.misbehaving:
            return self.answer(sent)
        if fate == 0:
            self.injected["401 echoing the header"] += 1
            error = {"message": f"Invalid credentials. Authorization: {header}", "code": 401}
            return Reply(401, body=json.dumps({"error": error}), headers=_JSON)
        if fate == 1:
            self.injected["error object quoting the key"] += 1
            error = {"message": f"Key {self.key} is not allowed ({b64})", "code": 403}
            return Reply(200, body=json.dumps({"error": error}), headers=_JSON)
        if fate == 2 and digest not in self.failed_once:
            self.failed_once.add(digest)
            self.injected["500 dumping the header base64"] += 1
            basic = base64.b64encode(f":{self.key}".encode()).decode()
            return Reply(500, body=f"proxy debug: auth={b64} basic={basic} raw={header}")
        return self.answer(sent)

    def _parrot(self, sent: bytes, header: str, b64: str) -> Reply:
        body = json.loads(self.answer(sent).payload())
        body["choices"][0]["message"]["content"] = (
            f"You sent me the header Authorization: {header} (base64 {b64}), "
            f"so the key is {self.key}."
        )
        body["debug"] = {"headers": {"Authorization": header}, "echo": f"key={self.key}"}
        return Reply(200, body=json.dumps(body), headers=_JSON)


_JSON = {"Content-Type": "application/json"}


# --- the judges' endpoint: https://openrouter.ai behind a local TLS-inspecting proxy ----------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for openrouter.ai signed by it: (ca, cert, key)."""
    folder.mkdir()
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=bench test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)  # fmt: skip
    _openssl("req", *ec, "-keyout", "host.key", "-out", "host.csr", "-subj", f"/CN={JUDGE_HOST}",
             cwd=folder)  # fmt: skip
    (folder / "host.ext").write_text(
        f"subjectAltName=DNS:{JUDGE_HOST}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
    )
    _openssl("x509", "-req", "-in", "host.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "host.pem", "-days", "2", "-extfile", "host.ext",
             cwd=folder)  # fmt: skip
    return folder / "ca.pem", folder / "host.pem", folder / "host.key"


class _JudgeHandler(BaseHTTPRequestHandler):
    """HTTP inside the tunnel: judge requests answered by the offline judge's rules."""

    server: "JudgeProxy"

    def do_POST(self) -> None:
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.authorizations.append(self.headers.get("Authorization"))
        body = json.loads(sent)
        request = ChatRequest(model=body["model"], messages=body["messages"])
        answer = asyncio.run(SimulatedJudgeProvider().complete(request))
        reply = json.dumps({
            "id": "judge-" + answer.request_hash[:12],
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer.content}}],
            "usage": {"prompt_tokens": answer.usage.prompt_tokens,
                      "completion_tokens": answer.usage.completion_tokens},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        return


class _ProxyHandler(BaseHTTPRequestHandler):
    server: "JudgeProxy"

    def do_CONNECT(self) -> None:
        if self.path != f"{JUDGE_HOST}:443":
            self.send_error(403, "this proxy only knows the judges' host")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        try:
            tunnel = self.server.tls.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            self.close_connection = True
            return
        _JudgeHandler(tunnel, self.client_address, self.server)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        return


class JudgeProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, certificate: Path, key: Path) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(certificate, key)
        self.lock = threading.Lock()
        self.authorizations: list[str | None] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> "JudgeProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


# --- the setups and the scan ------------------------------------------------------------------


def _setups(folder: Path, base_url: str) -> Path:
    folder.mkdir()
    (folder / "models.toml").write_text(
        f'[[model]]\nid = "loopback-model"\napi_id = "test/loopback-1"\ncompany = "Test Co"\n'
        f'context_limit = 8192\npricing_date = 2026-01-01\nbase_url = "{base_url}"\n'
        f'api_key_env = "{MODEL_KEY_VARIABLE}"\n'
    )
    (folder / "harnesses.toml").write_text('[[harness]]\nid = "api-bare"\nenvironment = "api"\n')
    (folder / "pricing.toml").write_text(
        '[[rate]]\napi_id = "test/loopback-1"\neffective_date = 2026-01-01\n'
        'input = "1"\noutput = "2"\n'
    )
    shutil.copy(settings.REPO_ROOT / "setups" / "judges.toml", folder / "judges.toml")
    return folder


AREAS = (  # (area, path under BENCH_HOME it holds), most specific first
    ("warehouse", "warehouse"),
    ("analyst copy", "build/warehouse"),
    ("releases", "build/releases"),
    ("downloads", "build/site-versions/*/data"),  # build/site is a link to the newest
    ("site", "build/site-versions"),
    ("raw payloads", "build/raw"),
    ("response cache", "cache/responses"),
    ("inbox", "inbox"),
    ("dagster runs and event logs", "build/dagster/history"),
    ("dagster compute logs", "build/dagster/storage/*/compute_logs"),
    ("dagster step outputs", "build/dagster/storage"),
    ("dagster instance", "build/dagster"),
)


def _area(relative: Path) -> str:
    for area, pattern in AREAS:
        if fnmatch.fnmatchcase(relative.as_posix(), pattern + "/*"):
            return area
    return "other"


def _table_text(database: Path) -> bytes:
    """Every value of every table of a DuckDB file, as text (DuckDB compresses strings in
    its blocks, so a byte search of the file alone could miss one)."""
    with duckdb.connect(str(database), read_only=True) as conn:
        tables = conn.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() ORDER BY ALL"
        ).fetchall()
        rows = [conn.execute(f'SELECT * FROM "{s}"."{t}"').fetchall() for s, t in tables]
    return repr(rows).encode()


def _parquet_text(path: Path) -> bytes:
    with duckdb.connect() as conn:
        return repr(conn.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()).encode()


def _readable(path: Path) -> list[bytes]:
    """The file's bytes, and for compressed containers their decoded content as well."""
    data = path.read_bytes()
    texts = [data]
    if data[8:12] == b"DUCK":
        texts.append(_table_text(path))
    elif data[:4] == b"PAR1":
        texts.append(_parquet_text(path))
    return texts


def scan(home: Path, outputs: dict[str, bytes], forms: dict[str, bytes]):
    """(files scanned per area, hits as (where, form), redaction markers seen per area)."""
    scanned: Counter[str] = Counter()
    redacted: Counter[str] = Counter()
    hits: list[tuple[str, str]] = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        area = _area(path.relative_to(home))
        scanned[area] += 1
        for text in _readable(path):
            hits += [(str(path), form) for form, needle in forms.items() if needle in text]
            redacted[area] += text.count(REDACTED)
    for name, text in outputs.items():
        scanned["bench run output"] += 1
        hits += [(name, form) for form, needle in forms.items() if needle in text]
        redacted["bench run output"] += text.count(REDACTED)
    return scanned, hits, redacted


def _bench_run(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "run"], env=env, cwd=REPO,
                          capture_output=True, timeout=900, check=False)  # fmt: skip


def _review(run_id: str, reviewer: str) -> dict:
    return {"schema_version": 1, "run_id": run_id, "reviewer": reviewer, "score": 1,
            "understood": "nothing of the brief", "missed": "the whole task",
            "decisive_reason": "the answer is a stub, not an attempt"}  # fmt: skip


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl for the judges' TLS")
@pytest.mark.timeout(1200)
def test_the_api_key_never_leaks_anywhere(tmp_path: Path) -> None:
    key = f"sk-or-canary-{uuid.uuid4().hex}"
    model_key = f"model-server-canary-{uuid.uuid4().hex}"
    forms = key_forms(key) | {f"model {n}": f for n, f in key_forms(model_key).items()}
    home = tmp_path / "home"
    ca, certificate, tls_key = _certificates(tmp_path / "tls")
    model = ModelServer(model_key)
    with LoopbackServer({MODEL_PATH: model}) as server, JudgeProxy(certificate, tls_key) as proxy:
        env = {k: v for k, v in bench_env(home).items() if not k.lower().endswith("_proxy")}
        env |= {
            "BENCH_SETUPS": str(_setups(tmp_path / "setups", server.url + "/v1")),
            "BENCH_MODEL_MODE": "live",
            "OPENROUTER_API_KEY": key,
            MODEL_KEY_VARIABLE: model_key,
            "HTTPS_PROXY": proxy.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "SSL_CERT_FILE": str(ca),
        }
        first = _bench_run(env)
        assert first.returncode == 1, first.stderr.decode()[-3000:]
        assert b"FAILED" in first.stdout

        # People review the runs stored so far: a stub answer is worth 1, as the judges say.
        with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
            rows = conn.execute("SELECT run_id FROM model_runs WHERE suite = 'pm' ORDER BY 1")
            stored = [run_id for (run_id,) in rows.fetchall()]
        assert len(stored) >= 5, "too few runs survived the first run to calibrate on"
        inbox = home / "inbox" / "reviews"
        inbox.mkdir(parents=True)
        for run_id in stored:
            for reviewer in ("Ada", "Grace"):
                (inbox / f"{run_id}-{reviewer}.json").write_text(
                    json.dumps(_review(run_id, reviewer))
                )

        model.misbehaving = False
        second = _bench_run(env)
        assert second.returncode == 0, second.stdout.decode()[-3000:] + second.stderr.decode()
        model_auth_all = [r.headers.get("Authorization") for r in server.requests(MODEL_PATH)]
        model_auth = set(model_auth_all)
        judge_auth = set(proxy.authorizations)

    # The keys were really used: every model and judge request carried its endpoint's own.
    assert model_auth == {f"Bearer {model_key}"}
    assert judge_auth == {f"Bearer {key}"}
    assert sum(model.injected.values()) > 0 and len(model.injected) == 4, model.injected

    outputs = {
        "first run stdout": first.stdout,
        "first run stderr": first.stderr,
        "second run stdout": second.stdout,
        "second run stderr": second.stderr,
    }
    scanned, hits, redacted = scan(home, outputs, forms)
    assert hits == [], f"the key leaked: {hits[:20]}"
    # The scan covered every kind of file the pipeline writes...
    for area, _pattern in AREAS:
        assert scanned[area] > 0, f"nothing scanned in {area}: {dict(scanned)}"
    assert scanned["bench run output"] == 4
    # ...and the key-bearing text did reach them, scrubbed.
    assert redacted["warehouse"] > 0 and redacted["response cache"] > 0, dict(redacted)
    assert redacted["bench run output"] + redacted["dagster runs and event logs"] > 0
    # Every request that carried the key is an input the pipeline kept secret.
    requests = len(model_auth_all) + len(proxy.authorizations)
    TALLY.add(faults=sum(model.injected.values()), inputs=requests, survived=requests, lost=0)


def test_scrub_hides_the_key_in_every_form_a_server_echoes() -> None:
    key = f"sk-or-canary-{uuid.uuid4().hex}"
    forms = key_forms(key)
    echoes = [
        f"Authorization: Bearer {key}",
        base64.b64encode(f"Bearer {key}".encode()).decode(),
        base64.urlsafe_b64encode(f"x{key}".encode()).decode(),
        "Basic " + base64.b64encode(f":{key}".encode()).decode(),
        "https://example.test/?auth=" + quote(f"Bearer {key}", safe=""),
        f"key%3D{key}",
    ]
    kept = scrub({"error": {"message": " | ".join(echoes)}, "Authorization": key}, [key])
    text = json.dumps(kept).encode()
    assert [form for form, needle in forms.items() if needle in text] == []
    assert "Authorization" not in kept and text.count(REDACTED) == len(echoes)
    assert scrub("nothing secret here", [key]) == "nothing secret here"
    TALLY.add(faults=len(echoes), inputs=len(echoes), survived=len(echoes), lost=0)
