"""Deterministic synthetic workspaces of realistic daily-log text, and a cheap embedder.

The speed benchmarks need workspaces of exactly 1k, 10k and 100k chunks that are
the same on every machine and every run, so the numbers can be compared over
time. The text imitates an agent's daily logs (timestamped entries about people,
projects, places, decisions and numbers) so that FTS5 sees a realistic mix of
rare and common terms; a bag of random words would make every query either trivial
or empty.

``HashEmbedder`` gives 384-dim vectors (MiniLM's size) by feature hashing of the
words: cheap enough to "embed" 100k chunks in seconds, deterministic, and with
enough structure that nearest neighbours share words. Vector search cost does not
depend on what the numbers are, so it stands in for MiniLM in the 10k/100k
latency runs (the benchmark output says so).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import random
import shutil
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import regex

from engine.embeddings.base import ProgressCallback, normalize_rows
from engine.index.chunking import chunk_markdown

GENERATOR_VERSION = 2
DEFAULT_SEED = 20240611
#: files are about this many chunks long (a busy day's log at 400-token chunks)
CHUNKS_PER_FILE = 5

PEOPLE = [
    "Priya",
    "Tomás",
    "Ines",
    "Kwame",
    "Yuki",
    "Lars",
    "Amara",
    "Dmitri",
    "Sofia",
    "Ravi",
    "Chen",
    "Fatima",
    "Oskar",
    "Leila",
    "Mateo",
    "Hana",
    "Jonas",
    "Nadia",
    "Emeka",
    "Greta",
]
PROJECTS = [
    "billing migration",
    "search revamp",
    "mobile onboarding",
    "data warehouse",
    "incident tooling",
    "pricing page",
    "auth service",
    "release train",
    "design system",
    "support bot",
    "invoice exporter",
    "metrics pipeline",
    "offline sync",
    "partner API",
]
SYSTEMS = [
    "Postgres",
    "Redis",
    "Kafka",
    "nginx",
    "Terraform",
    "Kubernetes",
    "SQLite",
    "S3",
    "Grafana",
    "Sentry",
    "GitHub Actions",
    "Cloudflare",
    "Stripe",
    "Elasticsearch",
]
PLACES = [
    "Lisbon",
    "Porto",
    "Berlin",
    "Nairobi",
    "Osaka",
    "Toronto",
    "Oslo",
    "Madrid",
    "Bangalore",
    "Lagos",
    "Prague",
    "Seoul",
    "Lima",
    "Dublin",
]
TOPICS = [
    "latency budget",
    "error rate",
    "on-call rotation",
    "quarterly planning",
    "hiring loop",
    "vendor contract",
    "security review",
    "customer escalation",
    "roadmap",
    "offsite",
    "budget review",
    "accessibility audit",
    "load test",
    "data retention policy",
]
FOODS = ["ramen", "falafel", "pastéis de nata", "dumplings", "tacos", "injera", "sushi"]
TEMPLATES = [
    "Met {p} about the {proj}; we agreed to move the {sys} cut-over to {day}.",
    "{p} reported a spike in the {topic} after the {sys} upgrade, about {n}% above baseline.",
    "Decision: the {proj} ships behind a feature flag first; {p} owns the rollout.",
    "Reminder for {p}: renew the {sys} certificate before {date}.",
    "Call with {p} from {place}: they want the {proj} demo on {day} at {hh}:{mm}.",
    "Wrote notes on the {topic}; open question is whether {sys} can handle {n}k requests/s.",
    "{p} and {p2} paired on the {proj}; fixed the flaky test in the {sys} adapter.",
    "Booked travel to {place} for the {topic}, flight at {hh}:{mm}, hotel near the station.",
    "Lunch with {p}: {food}. Talked about the {topic} and the {proj} backlog.",
    "Incident #{n4}: {sys} ran out of connections for {n} minutes; postmortem owner {p}.",
    "Idea: cache the {proj} results in {sys} and expire them after {n} minutes.",
    "{p} prefers async updates over meetings; send the {topic} summary by email instead.",
    "Budget for the {proj}: {n}k EUR approved by {p2}, review again in {month}.",
    "Read the {sys} changelog; version {n}.{n2} fixes the bug {p} hit in the {proj}.",
    "Todo: ask {p} for the {topic} numbers, update the {proj} plan, ping {p2} in {place}.",
    "The {proj} retro: too many handoffs, unclear owner for {sys}, {p} will draft a RACI.",
    "Customer from {place} asked about the {topic}; {p} answered within {n} minutes.",
    "Migrated {n} tables from {sys} to {sys2} for the {proj}; no data loss, {n2} s downtime.",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
_WORD = regex.compile(r"[\p{L}\p{N}_]+")
SYLLABLES = [
    "ka",
    "ri",
    "mo",
    "ne",
    "ta",
    "lu",
    "si",
    "vo",
    "da",
    "mi",
    "ro",
    "be",
    "na",
    "to",
    "ze",
    "la",
    "ko",
    "pe",
    "yu",
    "sa",
    "fi",
    "go",
    "ha",
    "ju",
]
MODIFIERS = [
    "billing",
    "search",
    "mobile",
    "data",
    "incident",
    "pricing",
    "auth",
    "release",
    "design",
    "support",
    "invoice",
    "metrics",
    "offline",
    "partner",
    "payroll",
    "onboarding",
    "export",
    "audit",
    "forecast",
    "routing",
    "notification",
    "ledger",
    "catalog",
    "checkout",
    "loyalty",
    "shipping",
    "inventory",
    "analytics",
    "identity",
    "archive",
]
NOUNS = [
    "migration",
    "revamp",
    "pipeline",
    "service",
    "page",
    "train",
    "system",
    "bot",
    "API",
    "dashboard",
    "cleanup",
    "rewrite",
    "pilot",
    "backfill",
    "sync",
    "portal",
    "gateway",
    "scheduler",
    "report",
    "integration",
]
TOPIC_NOUNS = [
    "budget",
    "review",
    "rotation",
    "planning",
    "loop",
    "contract",
    "audit",
    "escalation",
    "roadmap",
    "offsite",
    "test",
    "policy",
    "retro",
    "handover",
    "forecast",
]
SYSTEM_KINDS = ["db", "queue", "cache", "api", "worker", "cluster", "proxy", "bucket"]
#: Zipf exponent of entity popularity: a few names everywhere, a long tail of rare ones
ZIPF_S = 1.07


class Vocabulary:
    """Entity pools with Zipf-distributed popularity, built deterministically.

    Real logs mention a few people and systems constantly and hundreds rarely.
    With small uniform pools every entity would occur in nearly every 400-token
    chunk, which makes keyword search look far slower (and vector search far
    less discriminating) than on real notes.
    """

    def __init__(self, seed: int):
        rng = random.Random(seed * 7 + 3)

        def coined(count: int, head: list[str], make) -> list[str]:
            out = list(head)
            seen = set(out)
            while len(out) < count:
                word = make()
                if word not in seen:
                    seen.add(word)
                    out.append(word)
            return out

        def name() -> str:
            return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()

        combos = [f"{m} {n}" for m in MODIFIERS for n in NOUNS]
        rng.shuffle(combos)
        topics = [f"{m} {n}" for m in MODIFIERS for n in TOPIC_NOUNS]
        rng.shuffle(topics)
        self.pools = {
            "people": coined(600, PEOPLE, name),
            "projects": PROJECTS + [c for c in combos if c not in PROJECTS],
            "systems": coined(200, SYSTEMS, lambda: f"{name()} {rng.choice(SYSTEM_KINDS)}"),
            "places": coined(200, PLACES, name),
            "topics": TOPICS + [t for t in topics if t not in TOPICS][:300],
        }
        self.cum = {
            key: list(itertools.accumulate(1.0 / (r + 1) ** ZIPF_S for r in range(len(pool))))
            for key, pool in self.pools.items()
        }

    def pick(self, rng: random.Random, key: str) -> str:
        return rng.choices(self.pools[key], cum_weights=self.cum[key])[0]

    def pick2(self, rng: random.Random, key: str) -> tuple[str, str]:
        a = self.pick(rng, key)
        b = self.pick(rng, key)
        while b == a:
            b = self.pick(rng, key)
        return a, b


@functools.cache
def vocabulary(seed: int) -> Vocabulary:
    return Vocabulary(seed)


def _sentence(rng: random.Random, day: dt.date, vocab: Vocabulary) -> str:
    p, p2 = vocab.pick2(rng, "people")
    s1, s2 = vocab.pick2(rng, "systems")
    return rng.choice(TEMPLATES).format(
        p=p,
        p2=p2,
        proj=vocab.pick(rng, "projects"),
        sys=s1,
        sys2=s2,
        topic=vocab.pick(rng, "topics"),
        place=vocab.pick(rng, "places"),
        food=rng.choice(FOODS),
        day=rng.choice(DAYS),
        month=rng.choice(MONTHS),
        date=(day + dt.timedelta(days=rng.randint(3, 60))).isoformat(),
        hh=f"{rng.randint(7, 19):02d}",
        mm=f"{rng.choice([0, 15, 30, 45]):02d}",
        n=rng.randint(2, 95),
        n2=rng.randint(0, 40),
        n4=rng.randint(1000, 9999),
    )


def daily_log(rng: random.Random, day: dt.date, target_chars: int, seed: int = DEFAULT_SEED) -> str:
    """One day's log: a title, then timestamped sections of bullet entries."""
    vocab = vocabulary(seed)
    lines = [f"# {day.isoformat()}", ""]
    size = 0
    minute = 8 * 60 + rng.randint(0, 50)
    while size < target_chars:
        minute += rng.randint(5, 40)
        head = f"## {minute // 60 % 24:02d}:{minute % 60:02d} — {vocab.pick(rng, 'topics')}"
        lines.append(head)
        for _ in range(rng.randint(2, 6)):
            entry = "- " + " ".join(_sentence(rng, day, vocab) for _ in range(rng.randint(1, 2)))
            lines.append(entry)
            size += len(entry) + 1
        lines.append("")
        size += len(head) + 2
    return "\n".join(lines)


def _layout(index: int, streams: int, start: dt.date) -> tuple[str, dt.date]:
    """File i → (relative path, date): several log streams so dates stay plausible."""
    day = start + dt.timedelta(days=index // streams)
    stream = index % streams
    rel = (
        f"memory/{day.isoformat()}.md"
        if stream == 0
        else (f"memory/stream-{stream:02d}/{day.isoformat()}.md")
    )
    return rel, day


def generate(
    root: Path, n_chunks: int, seed: int = DEFAULT_SEED, *, tokens: int = 400, overlap: int = 80
) -> dict[str, object]:
    """Write a workspace with exactly ``n_chunks`` chunks (under the given chunking).

    Reuses an existing workspace when its manifest matches (generation of the
    100k workspace writes ~130 MB of text, worth caching). Returns the manifest.
    """
    manifest_path = root / "manifest.json"
    wanted = {
        "version": GENERATOR_VERSION,
        "chunks": n_chunks,
        "seed": seed,
        "tokens": tokens,
        "overlap": overlap,
    }
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if all(manifest.get(k) == v for k, v in wanted.items()):
            return manifest
    ws = root / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    (ws / "memory").mkdir(parents=True)
    rng = random.Random(seed)
    max_chars = max(32, tokens * 4)
    n_files_est = max(1, n_chunks // CHUNKS_PER_FILE)
    streams = max(1, n_files_est // 1000 + 1)
    start = dt.date(2021, 1, 4)
    (ws / "MEMORY.md").write_text(
        "# Memory\n\n- The team ships on Thursdays; freeze starts Wednesday 18:00.\n"
        "- Priya leads billing, Kwame leads search, Yuki owns on-call tooling.\n",
        encoding="utf-8",
    )
    total = len(chunk_markdown((ws / "MEMORY.md").read_text(), tokens, overlap))
    files = 1
    index = 0
    while total < n_chunks:
        rel, day = _layout(index, streams, start)
        index += 1
        size = int(max_chars * (CHUNKS_PER_FILE - 1) * rng.uniform(0.6, 1.4))
        text = daily_log(rng, day, size, seed)
        count = len(chunk_markdown(text, tokens, overlap))
        if total + count > n_chunks:
            text = _trim_to(text, n_chunks - total, tokens, overlap)
            count = len(chunk_markdown(text, tokens, overlap))
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
        total += count
        files += 1
    manifest = {**wanted, "files": files, "bytes": sum(p.stat().st_size for p in ws.rglob("*.md"))}
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


def _trim_to(text: str, chunks: int, tokens: int, overlap: int) -> str:
    """The longest line prefix of ``text`` that chunks into exactly ``chunks`` chunks."""
    lines = text.split("\n")
    lo, hi = 1, len(lines)
    while lo < hi:  # largest prefix with count <= chunks
        mid = (lo + hi + 1) // 2
        if len(chunk_markdown("\n".join(lines[:mid]), tokens, overlap)) <= chunks:
            lo = mid
        else:
            hi = mid - 1
    return "\n".join(lines[:lo])


def queries(n: int, seed: int = DEFAULT_SEED) -> list[str]:
    """Search queries in the style of an agent recalling something from its logs."""
    rng = random.Random(seed + 1)
    vocab = vocabulary(seed)
    forms = [
        "when is the {sys} cut-over for the {proj}",
        "what did {p} say about the {topic}",
        "{p} {place} trip",
        "incident {sys} connections",
        "who owns the {proj} rollout",
        "budget approved for the {proj}",
        "lunch with {p}",
        "{sys} certificate renewal",
        "flaky test {sys} adapter",
        "customer escalation from {place}",
    ]
    out = []
    for _ in range(n):
        out.append(
            rng.choice(forms).format(
                sys=vocab.pick(rng, "systems"),
                proj=vocab.pick(rng, "projects"),
                p=vocab.pick(rng, "people"),
                topic=vocab.pick(rng, "topics"),
                place=vocab.pick(rng, "places"),
            )
        )
    return out


class HashEmbedder:
    """Deterministic 384-dim feature-hashing embedder (a stand-in, not a model).

    Each word adds ±1 to one of ``dims`` axes chosen by crc32; rows are
    L2-normalised like every real provider's. Implements the provider protocol
    so the real indexer, store and search run unchanged.
    """

    id = "hash"
    model = "feature-hash-384"

    def __init__(self, dims: int = 384):
        self._dims = dims
        self._memo: dict[str, tuple[int, float]] = {}

    @property
    def dims(self) -> int:
        return self._dims

    def fingerprint(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "provider_key": "bench"}

    def describe(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "dims": self._dims}

    def _row(self, text: str) -> np.ndarray:
        memo = self._memo
        idx: list[int] = []
        sgn: list[float] = []
        for word in _WORD.findall(text.lower()):
            hit = memo.get(word)
            if hit is None:
                h = zlib.crc32(word.encode("utf-8"))
                hit = memo[word] = (h % self._dims, 1.0 if (h >> 16) & 1 else -1.0)
            idx.append(hit[0])
            sgn.append(hit[1])
        if not idx:
            return np.zeros(self._dims, dtype=np.float32)
        return np.bincount(idx, weights=sgn, minlength=self._dims).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._row(text))

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        return normalize_rows(np.stack([self._row(t) for t in texts]))

    def close(self) -> None:
        self._memo.clear()


def distinct_queries(n: int, seed: int = DEFAULT_SEED) -> list[str]:
    """``n`` different queries (the first ``n`` distinct ones :func:`queries` draws), so a
    benchmark never times a query whose vector an earlier call left in a cache."""
    drawn = n
    while True:
        unique = list(dict.fromkeys(queries(drawn, seed)))
        if len(unique) >= n:
            return unique[:n]
        if drawn > 50 * n:
            raise ValueError(f"the synthetic vocabulary gives fewer than {n} distinct queries")
        drawn *= 2


class TimedStandIn:
    """A stand-in that costs what the default costs: every text is embedded by the
    real model (``model``, MiniLM: its time is the default's), but the vectors
    returned, and the space key, are ``HashEmbedder``'s, the stand-in an index was
    built with, so a search of that index scores its stored unit vectors as the
    default does, and an edit embeds its chunk and units at the model's speed."""

    def __init__(self, model: Any, stand_in: HashEmbedder):
        self.model = model
        self.stand_in = stand_in
        self.id = stand_in.id

    @property
    def dims(self) -> int:
        return self.stand_in.dims

    def fingerprint(self) -> dict[str, object]:
        return self.stand_in.fingerprint()

    def describe(self) -> dict[str, object]:
        return self.stand_in.describe()

    def embed_query(self, text: str) -> Any:
        self.model.embed_query(text)
        return self.stand_in.embed_query(text)

    def stage_query(self, text: str) -> Any:
        """Staged as the model stages its queries (a search prepares a local model's
        query on its own thread and runs only the model on the query lane), so the
        stand-in's query costs what the default's does."""
        stage = getattr(self.model, "stage_query", None)
        vector = self.stand_in.embed_query(text)
        if stage is None:
            return lambda: (self.model.embed_query(text), vector)[1]
        rest = stage(text)
        return lambda: (rest(), vector)[1]

    def embed_documents(self, texts: Any, progress: Any = None) -> Any:
        self.model.embed_documents(texts)
        return self.stand_in.embed_documents(texts, progress)

    def forget_queries(self) -> None:
        forget = getattr(self.model, "forget_queries", None)
        if forget is not None:
            forget()

    def close(self) -> None:
        self.model.close()
