"""A remote provider's unit vectors: what they cost in requests and tokens, and what
they give the ranking (LoCoMo hit@6 / MRR@6), chunk-only against with unit vectors.

The provider is memdeck's OpenAI-compatible client talking to a loopback server
(``tests.provider_servers.ProviderServer``) that answers with the real
all-MiniLM-L6-v2 vectors, so the ranking is the one a remote MiniLM would give.
The server counts the requests, the inputs and their tokens (MiniLM's WordPiece
tokens, [CLS] and [SEP] left out, as an API bills the text). Vectors it has
answered once, or finds in the LoCoMo bench's cached indexes (chunks, and the
units' own vectors of the default index), come from a table: the wall times below
are memdeck's client, HTTP and index work, with the model's seconds beside them.

Run: ``.venv/bin/python -m tests.bench.remote_units [--convs 0-9]``; results go to
tests/bench/results/remote_units.json.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common, locomo, offtopic
from tests.provider_servers import ProviderServer, Recorded, Reply

KEY = "sk-bench"
MODEL = "all-MiniLM-L6-v2"


class MiniLMServer(ProviderServer):
    """The loopback OpenAI-compatible endpoint, answering with MiniLM's vectors."""

    def __init__(self, known: dict[str, np.ndarray]):
        super().__init__(dims=384, api_key=KEY)
        self.local = common.local_provider()
        self.known = known
        self.embed_lock = threading.Lock()
        self.inputs = 0
        self.tokens = 0
        self.model_s = 0.0

    def reset_counts(self) -> None:
        with self.embed_lock:
            self.requests.clear()
            self.inputs = self.tokens = 0
            self.model_s = 0.0

    def _openai_like(self, rec: Recorded) -> Reply:
        denied = self._auth(rec, "openai")
        if denied:
            return denied
        body = rec.json
        inputs = body["input"]
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        with self.embed_lock:
            self.inputs += len(inputs)
            self.tokens += sum(max(0, len(self.local.token_ids(t)) - 2) for t in inputs)
            missing = list(dict.fromkeys(t for t in inputs if t not in self.known))
            if missing:
                t0 = time.perf_counter()
                got = self.local.embed_documents(missing)
                self.model_s += time.perf_counter() - t0
                self.known.update(zip(missing, got, strict=True))
            rows = [self.known[t] for t in inputs]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in row]}
            for i, row in enumerate(rows)
        ]
        return Reply(200, {"object": "list", "data": data, "model": body["model"]})


def seed_vectors(convs: list[int]) -> dict[str, np.ndarray]:
    """Text → MiniLM vector from the LoCoMo bench's cached indexes (their chunks, and
    their units' own vectors where the index has them)."""
    from engine.index.db import Database
    from engine.index.line_codec import decode
    from engine.index.line_vectors import unit_spans

    out: dict[str, np.ndarray] = {}
    for ci in convs:
        index = common.CACHE_DIR / "locomo" / f"conv-{ci}" / "state" / "index.memdeck.sqlite"
        if not index.exists():
            continue
        db = Database(index)
        try:
            texts = {}
            for h, text, blob in db.execute("select hash, text, embedding from chunks"):
                texts[str(h)] = str(text)
                # only the model's own vectors: a pooled chunk vector (8 bits, 388 bytes
                # at 384 dims) is memdeck's, not MiniLM's answer for the chunk's text
                if blob and len(blob) == 4 * 384:
                    out[str(text)] = np.frombuffer(blob, dtype=np.float32).copy()
            for h, model, n, dims, blob in db.execute(
                "select chunk_hash, model, lines, dims, vectors from line_vectors"
            ):
                if "late" in str(model) or str(h) not in texts:
                    continue  # pooled from the chunk's run: not a unit's own vector
                if len(blob) not in (int(n) * int(dims) * 4, int(n) * (2 * int(dims) + 8)):
                    continue  # 5- or 8-bit codes: near MiniLM's answer, not its answer
                units = [u for _, _, u in unit_spans(texts[str(h)])]
                mat = decode(blob, int(n), int(dims))[0]
                if len(units) == mat.shape[0]:
                    out.update(zip(units, mat, strict=True))
        finally:
            db.close()
    return out


def engine_for(ws: Path, state: Path, url: str, lines: bool | None) -> Any:
    """An engine on ``ws`` through the loopback server; ``lines`` None leaves
    ``store.vector.lines`` unset (the default: units in their chunks' requests)."""
    from engine.config.loader import load_settings
    from engine.core import Engine
    from engine.embeddings.remote import create_remote_provider

    state.mkdir(parents=True, exist_ok=True)
    config = {
        "agents": {
            "defaults": {
                "memorySearch": {
                    "provider": "openai",
                    "model": MODEL,
                    "remote": {"baseUrl": f"{url}/v1", "apiKey": KEY},
                    "store": {
                        "path": str(state / "index.memdeck.sqlite"),
                        **({} if lines is None else {"vector": {"lines": lines}}),
                    },
                }
            }
        }
    }
    (state / "openclaw.json").write_text(json.dumps(config))
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(state)}
    settings = load_settings(workspace=ws, env=env)
    provider = create_remote_provider("openai", settings, env)
    return Engine(settings, provider=provider)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--convs", default="0-9", help="LoCoMo conversations, e.g. 0-9 or 5")
    args = parser.parse_args(argv)
    convs = locomo.parse_convs(args.convs)
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    server = MiniLMServer(seed_vectors(convs)).start()
    common.log(f"{len(server.known)} vectors known before the first request")
    base = common.default_options()
    results: dict[str, dict[int, Any]] = {"chunks": {}, "lines": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="memdeck-remote-units-") as tmp:
            for ci in convs:
                conv = locomo.build_conversation(ci, data[ci])
                ws = Path(tmp) / f"ws-{ci}"
                for rel, text in conv.files.items():
                    common.write_if_changed(ws / rel, text)
                for variant in ("chunks", "lines"):
                    state = Path(tmp) / f"state-{ci}-{variant}"
                    engine = engine_for(
                        ws, state, server.url, None if variant == "lines" else False
                    )
                    server.reset_counts()
                    load, t0 = os.getloadavg()[0], time.perf_counter()
                    done = engine.sync(reason="bench")
                    seconds = time.perf_counter() - t0
                    m: dict[str, Any] = {
                        "requests": len(server.embed_requests()),
                        "inputs": server.inputs,
                        "tokens": server.tokens,
                        "sync_s": round(seconds, 2),
                        "model_s": round(server.model_s, 2),
                        "load": round(load, 2),
                        "chunks": done.chunks_embedded,
                        "unit_matrices": engine.store.db.scalar(
                            "select count(*) from line_vectors"
                        ),
                        "errors": list(done.errors),
                        "hits": 0,
                        "rr": 0.0,
                        "n": 0,
                        "offtopic": 0,
                        "offtopic_n": 0,
                        "nonsense": 0,
                        "nonsense_n": 0,
                    }
                    for q in conv.questions:
                        retrieval = retrieve(engine.store, engine.provider, q.text, base)
                        outcome = rank(retrieval, base, conv.today)
                        first = locomo.first_hit(outcome.results, q.evidence)
                        m["n"] += 1
                        if first is not None and first <= locomo.K:
                            m["hits"] += 1
                            m["rr"] += 1.0 / first
                    for kind, text in offtopic.queries():  # answered at the default minScore
                        retrieval = retrieve(engine.store, engine.provider, text, base)
                        key = "offtopic" if kind == "cranfield" else "nonsense"
                        m[f"{key}_n"] += 1
                        m[key] += bool(rank(retrieval, base, conv.today).results)
                    engine.close()
                    results[variant][ci] = m
                    common.log(
                        f"conv {ci} {variant}: {m['requests']} requests, {m['tokens']} tokens,"
                        f" {m['sync_s']} s (model {m['model_s']} s), hit@6 {m['hits']}/{m['n']}"
                    )
    finally:
        server.stop()

    def total(variant: str, key: str, members: list[int]) -> float:
        return sum(results[variant][c][key] for c in members)

    halves = {"0-4": [c for c in convs if c < 5], "5-9": [c for c in convs if c >= 5]}
    summary: dict[str, Any] = {}
    for half, members in halves.items():
        if not members:
            continue
        summary[half] = {
            v: {
                "hit@6": round(total(v, "hits", members) / total(v, "n", members), 3),
                "MRR@6": round(total(v, "rr", members) / total(v, "n", members), 3),
                "off-topic answered": round(
                    total(v, "offtopic", members) / total(v, "offtopic_n", members), 3
                ),
                "nonsense answered": round(
                    total(v, "nonsense", members) / total(v, "nonsense_n", members), 3
                ),
            }
            for v in results
        }
    cost = {
        key: {
            "chunks": total("chunks", key, convs),
            "lines": total("lines", key, convs),
            "ratio": round(total("lines", key, convs) / max(1, total("chunks", key, convs)), 2),
        }
        for key in ("requests", "inputs", "tokens", "sync_s", "model_s")
    }
    payload = {
        "machine": common.machine_info(),
        "convs": convs,
        "cost": cost,
        "ranking": summary,
        "per_conv": results,
    }
    path = common.write_results("remote_units", payload)
    print(json.dumps({"cost": cost, "ranking": summary}, indent=1))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
