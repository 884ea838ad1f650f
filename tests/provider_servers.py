"""Loopback HTTP servers that speak the embedding providers' wire formats.

Each test starts its own ``ProviderServer`` on 127.0.0.1 (a real socket, a
``ThreadingHTTPServer``), points memdeck at it through ``remote.baseUrl`` and
then inspects what arrived. The server is strict about what it accepts (auth
header, body shape) so a wrong request fails the test, and it can misbehave on
demand: status codes, ``Retry-After``, garbage, wrong dimensions, hanging.

Vectors are deterministic bags of hashed words, so texts sharing words are
close and searches through the real engine rank sensibly.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

WORD = re.compile(r"\w+")
TEST_KEY = "sk-test-1234567890"
#: fast but real retries: 1 ms backoff, 5 s timeout (see RetryPolicy.from_env)
FAST_ENV = {"MEMDECK_REMOTE_BACKOFF_MS": "1", "MEMDECK_REMOTE_TIMEOUT_S": "5"}
NOTES = {
    "MEMORY.md": "# Memory\n\nDana prefers flat white coffee.\n",
    "memory/2026-03-01.md": "# 2026-03-01\n\nAtlas rollback plan drafted.\n",
}


class QuietHTTPServer(ThreadingHTTPServer):
    """A loopback server that does not print a traceback when a client hangs up
    mid-request (the tests that cancel a search or time out a provider do that on
    purpose); any other error in a handler is printed as usual."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


def write_notes(root: Path, extra: dict[str, str] | None = None) -> Path:
    """The two-file workspace most remote tests index, plus ``extra`` {rel: text}."""
    for rel, text in {**NOTES, **(extra or {})}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def text_vector(text: str, dims: int) -> list[float]:
    """A bag of hashed lowercase words, plus one constant so no vector is zero."""
    v = np.zeros(dims, dtype=np.float64)
    v[0] = 0.05
    for word in WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
        v[1 + h % (dims - 1)] += 1.0
    return [round(float(x), 6) for x in v]


def bytes_vector(data: bytes, dims: int) -> list[float]:
    digest = hashlib.sha256(data).digest()
    return [((digest[i % 32] / 255.0) - 0.5) for i in range(dims)]


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    #: send the status line at once, then the rest one byte every this many seconds
    trickle_s: float | None = None

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain"
        return json.dumps(self.body).encode(), "application/json"


#: a fault plan gets (index of this embedding request, the request) and may answer for it
FaultPlan = Callable[[int, Recorded], Reply | None]


@dataclass
class BatchJob:
    id: str
    kind: str  # "openai", "voyage", "gemini"
    lines: list[dict[str, Any]]
    params: dict[str, Any]
    polls: int = 0
    state: str = "running"
    output: str | None = None


class ProviderServer:
    """All five wire formats at their real paths; one instance per test."""

    def __init__(self, *, dims: int = 16, api_key: str | None = TEST_KEY):
        self.dims = dims
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.faults: FaultPlan | None = None
        self.wrong_dims: int | None = None  # answer vectors of this size instead
        self.batch_polls_to_finish = 1
        self.batch_fail_jobs = 0  # the first N jobs end in state "failed"
        self.jobs: dict[str, BatchJob] = {}
        self.max_jobs_running = 0  # most jobs running at once, seen at job creation
        self.files: dict[str, bytes] = {}
        self._embed_calls = itertools.count()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1  # one send per response (headers + body) ...

            def setup(self) -> None:
                super().setup()
                # ... and no Nagle delay, or every keep-alive request costs ~40 ms
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                rec = Recorded(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                with server._lock:
                    server.requests.append(rec)
                reply = server.dispatch(rec)
                if reply.hang:
                    server._stop.wait(30)
                    return
                data, ctype = reply.encoded()
                if reply.trickle_s is not None:
                    head = (
                        f"HTTP/1.1 {reply.status} OK\r\nContent-Type: {ctype}\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n"
                    ).encode()
                    try:
                        for i in range(len(head + data)):
                            self.wfile.write((head + data)[i : i + 1])
                            self.wfile.flush()
                            if server._stop.wait(reply.trickle_s):
                                return
                    except OSError:
                        pass
                    return
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.headers.pop("Content-Type", ctype))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = _handle

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle -------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ProviderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection ------------------------------------------------------------
    def embed_requests(self) -> list[Recorded]:
        return [r for r in self.requests if _is_embed_path(r.path)]

    def paths(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]

    # -- routing ---------------------------------------------------------------
    def dispatch(self, rec: Recorded) -> Reply:
        if _is_embed_path(rec.path):
            with self._lock:
                n = next(self._embed_calls)
            if self.faults is not None:
                planned = self.faults(n, rec)
                if planned is not None:
                    return planned
        try:
            return self._route(rec)
        except (ValueError, KeyError, TypeError) as exc:
            return Reply(400, {"error": {"message": f"bad request: {exc}"}})

    def _route(self, rec: Recorded) -> Reply:
        p, m = rec.path, rec.method
        if m == "POST" and p == "/api/embeddings":
            return self._ollama(rec)
        if m == "POST" and p.endswith("/embeddings"):
            return self._openai_like(rec)
        gm = re.fullmatch(r"/v1beta/models/([\w.-]+):(\w+)", p)
        if m == "POST" and gm:
            return self._gemini(rec, gm.group(1), gm.group(2))
        if m == "POST" and p == "/upload/v1beta/files":
            return self._gemini_upload(rec)
        dm = re.fullmatch(r"/download/v1beta/(files/[\w-]+):download", p)
        if m == "GET" and dm:
            return self._auth(rec, "gemini") or Reply(200, self.files[dm.group(1)])
        bm = re.fullmatch(r"/v1beta/(batches/[\w-]+)(:cancel)?", p)
        if bm:
            return self._auth(rec, "gemini") or self._gemini_batch(bm.group(1), bool(bm.group(2)))
        if m == "POST" and p.endswith("/files"):
            return self._openai_upload(rec)
        if m == "POST" and p.endswith("/batches"):
            return self._openai_create(rec)
        om = re.fullmatch(r"/v1/batches/([\w-]+)(/cancel)?", p)
        if om:
            return self._auth(rec, "openai") or self._openai_batch(om.group(1), bool(om.group(2)))
        fm = re.fullmatch(r"/v1/files/([\w-]+)/content", p)
        if m == "GET" and fm:
            return self._auth(rec, "openai") or Reply(200, self.files[fm.group(1)])
        return Reply(404, {"error": {"message": f"no route {m} {p}"}})

    def _auth(self, rec: Recorded, style: str) -> Reply | None:
        if self.api_key is None:
            return None
        if style == "gemini":
            ok = rec.headers.get("x-goog-api-key") == self.api_key
        else:
            ok = rec.headers.get("authorization") == f"Bearer {self.api_key}"
        if ok:
            return None
        return Reply(401, {"error": {"message": "invalid api key"}})

    def _vec(self, text: str) -> list[float]:
        if self.wrong_dims is not None:
            return text_vector(text, self.wrong_dims)
        return text_vector(text, self.dims)

    # -- openai / mistral / voyage / custom ----------------------------------------
    def _openai_like(self, rec: Recorded) -> Reply:
        denied = self._auth(rec, "openai")
        if denied:
            return denied
        body = rec.json
        inputs = body["input"]
        if not isinstance(body.get("model"), str):
            raise ValueError("model missing")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
            raise ValueError("input must be a list of strings")
        if "input_type" in body and body["input_type"] not in ("query", "document"):
            raise ValueError("input_type must be query or document")
        data = [
            {"object": "embedding", "index": i, "embedding": self._vec(t)}
            for i, t in enumerate(inputs)
        ]
        return Reply(200, {"object": "list", "data": data[::-1], "model": body["model"]})

    def _openai_upload(self, rec: Recorded) -> Reply:
        denied = self._auth(rec, "openai")
        if denied:
            return denied
        fields = _multipart(rec)
        if fields.get("purpose") != b"batch":
            raise ValueError("purpose must be batch")
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = fields["file"]
        return Reply(200, {"id": file_id, "object": "file", "purpose": "batch"})

    def _openai_create(self, rec: Recorded) -> Reply:
        denied = self._auth(rec, "openai")
        if denied:
            return denied
        body = rec.json
        if body["endpoint"] != "/v1/embeddings":
            raise ValueError("endpoint")
        raw = self.files[body["input_file_id"]]
        lines = [json.loads(x) for x in raw.decode().splitlines() if x.strip()]
        kind = "voyage" if "request_params" in body else "openai"
        job = BatchJob(f"batch_{next(self._ids)}", kind, lines, body.get("request_params") or {})
        self._add_job(job)
        return Reply(200, {"id": job.id, "object": "batch", "status": "validating"})

    def _add_job(self, job: BatchJob) -> None:
        with self._lock:
            self.jobs[job.id] = job
            running = sum(1 for j in self.jobs.values() if j.state == "running")
            self.max_jobs_running = max(self.max_jobs_running, running)

    def _advance(self, job: BatchJob) -> None:
        if job.state != "running":
            return
        job.polls += 1
        if job.polls < self.batch_polls_to_finish:
            return
        failed_so_far = sum(1 for j in self.jobs.values() if j.state == "failed")
        if failed_so_far < self.batch_fail_jobs:
            job.state = "failed"
            return
        out_id = f"file-{next(self._ids)}"
        if job.kind == "gemini":
            out_id = f"files/out-{next(self._ids)}"
        self.files[out_id] = self._batch_output(job)
        job.output = out_id
        job.state = "done"

    def _batch_output(self, job: BatchJob) -> bytes:
        rows = []
        for line in job.lines:
            if job.kind == "gemini":
                request = line["request"]
                text = request["content"]["parts"][0]["text"]
                dims = self.wrong_dims or request.get("outputDimensionality", self.dims)
                values = text_vector(text, dims)
                rows.append({"key": line["key"], "response": {"embedding": {"values": values}}})
            else:
                text = line["body"]["input"]
                text = text[0] if isinstance(text, list) else text
                body = {"data": [{"index": 0, "embedding": self._vec(text)}]}
                rows.append(
                    {
                        "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "body": body},
                        "error": None,
                    }
                )
        return "".join(json.dumps(r) + "\n" for r in rows).encode()

    def _openai_batch(self, job_id: str, cancel: bool) -> Reply:
        job = self.jobs[job_id]
        if cancel:
            job.state = "cancelled"
        else:
            self._advance(job)
        status = {"running": "in_progress", "done": "completed"}.get(job.state, job.state)
        info: dict[str, Any] = {"id": job.id, "object": "batch", "status": status}
        if job.state == "done":
            info["output_file_id"] = job.output
        if job.state == "failed":
            info["errors"] = {"data": [{"message": "simulated batch failure"}]}
        return Reply(200, info)

    # -- gemini ------------------------------------------------------------------
    def _gemini(self, rec: Recorded, model: str, method: str) -> Reply:
        denied = self._auth(rec, "gemini")
        if denied:
            return denied
        body = rec.json
        if method == "embedContent":
            return Reply(200, {"embedding": {"values": self._gemini_one(body, model)}})
        if method == "batchEmbedContents":
            reqs = body["requests"]
            embs = [{"values": self._gemini_one(r, model)} for r in reqs]
            return Reply(200, {"embeddings": embs})
        if method == "asyncBatchEmbedContent":
            batch = body["batch"]
            raw = self.files[batch["inputConfig"]["fileName"]]
            lines = [json.loads(x) for x in raw.decode().splitlines() if x.strip()]
            job = BatchJob(f"batches/{next(self._ids)}", "gemini", lines, {"model": model})
            self._add_job(job)
            return Reply(200, {"name": job.id, "metadata": {"state": "BATCH_STATE_PENDING"}})
        raise ValueError(f"unknown method {method}")

    def _gemini_one(self, req: dict[str, Any], model: str) -> list[float]:
        if req["model"] != f"models/{model}":
            raise ValueError("model in body does not match the URL")
        if req["taskType"] not in ("RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT"):
            raise ValueError("taskType")
        part = req["content"]["parts"][0]
        dims = req.get("outputDimensionality", self.dims)
        if self.wrong_dims is not None:
            dims = self.wrong_dims
        if "inlineData" in part:
            return bytes_vector(base64.b64decode(part["inlineData"]["data"]), dims)
        return text_vector(part["text"], dims)

    def _gemini_upload(self, rec: Recorded) -> Reply:
        denied = self._auth(rec, "gemini")
        if denied:
            return denied
        parts = _multipart_parts(rec)
        meta = json.loads(parts[0][1])
        if "file" not in meta:
            raise ValueError("metadata part")
        name = f"files/in-{next(self._ids)}"
        self.files[name] = parts[1][1]
        return Reply(200, {"file": {"name": name, "mimeType": parts[1][0]}})

    def _gemini_batch(self, name: str, cancel: bool) -> Reply:
        job = self.jobs[name]
        if cancel:
            job.state = "cancelled"
            return Reply(200, {})
        self._advance(job)
        state = {
            "running": "BATCH_STATE_RUNNING",
            "done": "BATCH_STATE_SUCCEEDED",
            "failed": "BATCH_STATE_FAILED",
            "cancelled": "BATCH_STATE_CANCELLED",
        }[job.state]
        info: dict[str, Any] = {"name": name, "metadata": {"state": state}}
        if job.state == "done":
            info["done"] = True
            info["response"] = {"responsesFile": job.output}
        return Reply(200, info)

    # -- ollama ------------------------------------------------------------------
    def _ollama(self, rec: Recorded) -> Reply:
        body = rec.json
        if not isinstance(body.get("prompt"), str) or not isinstance(body.get("model"), str):
            raise ValueError("ollama wants {model, prompt}")
        return Reply(200, {"embedding": self._vec(body["prompt"])})


def _is_embed_path(path: str) -> bool:
    return path.endswith(("/embeddings", ":embedContent", ":batchEmbedContents"))


def _multipart_parts(rec: Recorded) -> list[tuple[str, bytes]]:
    ctype = rec.headers["content-type"]
    msg = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + rec.body
    )
    return [(p.get_content_type(), p.get_payload(decode=True)) for p in msg.iter_parts()]


def _multipart(rec: Recorded) -> dict[str, bytes]:
    ctype = rec.headers["content-type"]
    msg = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + rec.body
    )
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[str(name)] = part.get_payload(decode=True)
    return out


# -- fault plans ----------------------------------------------------------------
def fail_first(n: int, reply: Reply) -> FaultPlan:
    """The next ``n`` embedding requests (counted from when the plan is installed)
    get ``reply``."""
    calls = itertools.count()
    return lambda _i, _rec: reply if next(calls) < n else None


def every_nth(k: int, reply: Reply) -> FaultPlan:
    """Every ``k``-th embedding request (the 1st, (k+1)-th, ...) gets ``reply``."""
    return lambda i, _rec: reply if i % k == 0 else None


def always(reply: Reply) -> FaultPlan:
    return lambda _i, _rec: reply
