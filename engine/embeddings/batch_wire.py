"""Wire formats of the three batch APIs memdeck drives (see ``batch`` for the lifecycle).

- OpenAI: upload JSONL to ``/files`` (purpose ``batch``), ``POST /batches``
  (endpoint ``/v1/embeddings``, window 24h), ``GET /batches/{id}``, results
  from ``GET /files/{output_file_id}/content``.
- Voyage: the same shape, window 12h, model and ``input_type`` passed once as
  ``request_params``.
- Gemini: multipart upload to ``/upload/v1beta/files``,
  ``models/<m>:asyncBatchEmbedContent`` with the file as input, ``GET
  batches/<id>``, results from ``/download/v1beta/<file>:download?alt=media``.

Every call goes through the provider's ``HttpTransport`` (retries, redaction).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from engine.embeddings.base import ProviderError
from engine.embeddings.batch import JobStatus
from engine.embeddings.http_retry import HttpTransport

_FAILED = ("failed", "expired", "cancelled", "cancelling")


def to_jsonl(rows: Sequence[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def parse_jsonl(data: bytes, what: str) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise ProviderError(f"{what}: line {n} of the results is not JSON") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _vector(value: Any) -> list[float] | None:
    if isinstance(value, list) and value and all(isinstance(x, int | float) for x in value):
        return [float(x) for x in value]
    return None


class OpenAIStyleBatch:
    """OpenAI's Batch API; Voyage speaks the same dialect with small differences."""

    max_items = 50_000

    def __init__(
        self,
        transport: HttpTransport,
        base_url: str,
        model: str,
        *,
        name: str = "openai",
        input_type: str | None = None,
    ):
        self.t = transport
        self.base = base_url
        self.model = model
        self.name = name
        self.input_type = input_type

    def _line(self, key: str, text: str) -> dict[str, Any]:
        if self.name == "voyage":
            return {"custom_id": key, "body": {"input": [text]}}
        return {
            "custom_id": key,
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": self.model, "input": text},
        }

    def submit(self, items: Sequence[tuple[str, str]]) -> str:
        payload = to_jsonl([self._line(k, t) for k, t in items])
        uploaded = self.t.request(
            "POST",
            f"{self.base}/files",
            files={"file": ("memdeck-batch.jsonl", payload, "application/jsonl")},
            data={"purpose": "batch"},
        )
        file_id = uploaded.get("id") if isinstance(uploaded, dict) else None
        if not file_id:
            raise ProviderError(f"{self.name} batch: upload answered without a file id")
        body: dict[str, Any] = {
            "input_file_id": file_id,
            "endpoint": "/v1/embeddings",
            "completion_window": "12h" if self.name == "voyage" else "24h",
        }
        if self.name == "voyage":
            body["request_params"] = {"model": self.model, "input_type": self.input_type}
        else:
            body["metadata"] = {"source": "memdeck"}
        created = self.t.request("POST", f"{self.base}/batches", json_body=body)
        job_id = created.get("id") if isinstance(created, dict) else None
        if not job_id:
            raise ProviderError(f"{self.name} batch: create answered without a batch id")
        return str(job_id)

    def poll(self, job_id: str) -> JobStatus:
        info = self.t.request("GET", f"{self.base}/batches/{job_id}")
        if not isinstance(info, dict):
            raise ProviderError(f"{self.name} batch {job_id}: status is not an object")
        state = str(info.get("status", "")).lower()
        if state == "completed":
            output = info.get("output_file_id")
            if not output:
                return JobStatus("failed", "completed without an output file")
            return JobStatus("done", output=str(output))
        if state in _FAILED:
            errors = info.get("errors") or {}
            data = errors.get("data") if isinstance(errors, dict) else None
            detail = "; ".join(str(e.get("message", e)) for e in data or [] if e)[:300]
            return JobStatus("failed", f"{state}{': ' + detail if detail else ''}")
        return JobStatus("running", state)

    def collect(self, job_id: str, status: JobStatus) -> dict[str, list[float]]:
        raw = self.t.request("GET", f"{self.base}/files/{status.output}/content", expect="bytes")
        out: dict[str, list[float]] = {}
        for row in parse_jsonl(raw, f"{self.name} batch {job_id}"):
            response = row.get("response") or {}
            if not isinstance(response, dict) or row.get("error"):
                continue
            if response.get("status_code", 200) != 200:
                continue
            body = response.get("body", response)
            data = body.get("data") if isinstance(body, dict) else None
            if isinstance(data, list) and data and isinstance(data[0], dict):
                vec = _vector(data[0].get("embedding"))
                if vec is not None:
                    out[str(row.get("custom_id"))] = vec
        return out

    def cancel(self, job_id: str) -> None:
        self.t.request("POST", f"{self.base}/batches/{job_id}/cancel", json_body={})


def split_gemini_base(base_url: str) -> tuple[str, str]:
    """``https://host/v1beta`` → (``https://host``, ``v1beta``) for upload/download URLs."""
    m = re.match(r"^(.*?)/(v\d+(?:alpha|beta)?\d*)$", base_url)
    return (m.group(1), m.group(2)) if m else (base_url, "v1beta")


class GeminiBatch:
    """Gemini's asynchronous batch embedding API, fed by an uploaded JSONL file."""

    name = "gemini"
    max_items = 10_000

    def __init__(
        self, transport: HttpTransport, base_url: str, model_path: str, extra: dict[str, Any]
    ):
        self.t = transport
        self.base = base_url
        self.root, self.version = split_gemini_base(base_url)
        self.model_path = model_path
        self.extra = extra  # outputDimensionality for embedding-2

    def submit(self, items: Sequence[tuple[str, str]]) -> str:
        lines = [
            {
                "key": key,
                "request": {
                    "model": self.model_path,
                    "content": {"parts": [{"text": text}]},
                    "taskType": "RETRIEVAL_DOCUMENT",
                    **self.extra,
                },
            }
            for key, text in items
        ]
        boundary = f"memdeck-{uuid.uuid4().hex}"
        meta = json.dumps({"file": {"displayName": "memdeck-batch.jsonl"}}).encode()
        body = b"".join(
            [
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
                meta,
                f"\r\n--{boundary}\r\nContent-Type: application/jsonl\r\n\r\n".encode(),
                to_jsonl(lines),
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        uploaded = self.t.request(
            "POST",
            f"{self.root}/upload/{self.version}/files?uploadType=multipart",
            content=body,
            headers={
                "Content-Type": f"multipart/related; boundary={boundary}",
                "X-Goog-Upload-Protocol": "multipart",
            },
        )
        file_info = uploaded.get("file", uploaded) if isinstance(uploaded, dict) else {}
        file_name = file_info.get("name") if isinstance(file_info, dict) else None
        if not file_name:
            raise ProviderError("gemini batch: upload answered without a file name")
        created = self.t.request(
            "POST",
            f"{self.base}/{self.model_path}:asyncBatchEmbedContent",
            json_body={
                "batch": {
                    "displayName": "memdeck",
                    "model": self.model_path,
                    "inputConfig": {"fileName": file_name},
                }
            },
        )
        name = created.get("name") if isinstance(created, dict) else None
        if not name:
            raise ProviderError("gemini batch: create answered without a batch name")
        return str(name)

    def poll(self, job_id: str) -> JobStatus:
        info = self.t.request("GET", f"{self.base}/{job_id}")
        if not isinstance(info, dict):
            raise ProviderError(f"gemini batch {job_id}: status is not an object")
        raw_meta = info.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        state = str(meta.get("state") or info.get("state") or "").upper()
        if info.get("error"):
            return JobStatus("failed", str(info["error"].get("message", info["error"]))[:300])
        if state.endswith(("FAILED", "CANCELLED", "EXPIRED")):
            return JobStatus("failed", state.lower())
        if state.endswith("SUCCEEDED") or (info.get("done") and not state):
            output = _gemini_output(info)
            if not output:
                return JobStatus("failed", "succeeded without a responses file")
            return JobStatus("done", output=output)
        return JobStatus("running", state.lower())

    def collect(self, job_id: str, status: JobStatus) -> dict[str, list[float]]:
        raw = self.t.request(
            "GET",
            f"{self.root}/download/{self.version}/{status.output}:download?alt=media",
            expect="bytes",
        )
        out: dict[str, list[float]] = {}
        for row in parse_jsonl(raw, f"gemini batch {job_id}"):
            response = row.get("response")
            if not isinstance(response, dict) or row.get("error"):
                continue
            emb = response.get("embedding") or {}
            vec = _vector(emb.get("values") if isinstance(emb, dict) else None)
            if vec is not None:
                out[str(row.get("key"))] = vec
        return out

    def cancel(self, job_id: str) -> None:
        self.t.request("POST", f"{self.base}/{job_id}:cancel", json_body={})


def _gemini_output(info: dict[str, Any]) -> str | None:
    for holder in (
        info.get("response"),
        (info.get("metadata") or {}).get("output"),
        info.get("output"),
    ):
        if isinstance(holder, dict) and holder.get("responsesFile"):
            return str(holder["responsesFile"])
    return None
