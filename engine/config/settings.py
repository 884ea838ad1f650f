"""Typed, resolved memory settings.

These dataclasses are the single in-memory shape of OpenClaw's ``memorySearch``
block (and the few neighbouring keys memdeck honours). ``engine.config.loader`` builds
them from ``openclaw.json``; every other module reads only these objects, so a
default lives in exactly one place: the field default below.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from engine.openclaw.config import ExtraPathPattern

DEFAULT_LOCAL_MODEL = (
    "hf:ggml-org/embeddinggemma-300m-qat-q8_0-GGUF/embeddinggemma-300m-qat-Q8_0.gguf"
)

PROVIDER_DEFAULT_MODELS: dict[str, str] = {
    "openai": "text-embedding-3-small",
    "gemini": "gemini-embedding-001",
    "voyage": "voyage-4-large",
    "mistral": "mistral-embed",
    "ollama": "nomic-embed-text",
}

PROVIDERS = ("auto", "openai", "gemini", "voyage", "mistral", "ollama", "local", "none")

#: How a search combines its sides: both (hybrid), keywords only, vectors only.
SearchMode = Literal["hybrid", "fts", "vector"]
#: How the text and vector scores of a hybrid search become one score.
Fusion = Literal["weighted", "normalized", "rrf", "geometric", "calibrated"]
#: How ``fusion = "normalized"`` rescales each side before the weighted sum.
Normalization = Literal["minmax", "zscore"]
#: What MMR measures redundancy with.
MMRSimilarity = Literal["jaccard", "cosine"]
#: FTS5 tokenizer of the keyword index: OpenClaw's two, and ``porter`` (memdeck
#: extension: FTS5's ``porter unicode61``, English stemming, so "visited" matches
#: "visit"; OpenClaw 2026.9 refuses the value in its own config).
FtsTokenizer = Literal["unicode61", "trigram", "porter"]

SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)
NORMALIZATIONS: tuple[Normalization, ...] = get_args(Normalization)
MMR_SIMILARITIES: tuple[MMRSimilarity, ...] = get_args(MMRSimilarity)
FTS_TOKENIZERS: tuple[FtsTokenizer, ...] = get_args(FtsTokenizer)


@dataclass(frozen=True)
class BatchSettings:
    enabled: bool = False
    wait: bool = True
    concurrency: int = 2
    poll_interval_ms: int = 2000
    timeout_minutes: float = 60


@dataclass(frozen=True)
class RemoteSettings:
    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    batch: BatchSettings = field(default_factory=BatchSettings)


@dataclass(frozen=True)
class LocalSettings:
    model_path: str = DEFAULT_LOCAL_MODEL
    model_cache_dir: Path | None = None
    # True when modelPath came from the user's config rather than the default.
    explicit: bool = False


@dataclass(frozen=True)
class ChunkingSettings:
    tokens: int = 400
    overlap: int = 80


@dataclass(frozen=True)
class MMRSettings:
    enabled: bool = False
    lambda_: float = 0.7
    # "jaccard" (OpenClaw's) or "cosine" (embedding similarity, memdeck extra).
    similarity: MMRSimilarity = "jaccard"


@dataclass(frozen=True)
class DecaySettings:
    enabled: bool = False
    half_life_days: float = 30.0


@dataclass(frozen=True)
class HybridSettings:
    enabled: bool = True
    vector_weight: float = 0.7
    text_weight: float = 0.3
    candidate_multiplier: int = 4
    # "weighted" is OpenClaw's raw sum; "geometric" won on LoCoMo (README "Benchmarks").
    fusion: Fusion = "calibrated"
    normalization: Normalization = "minmax"  # or "zscore", for fusion="normalized"
    rrf_k: int = 60
    mmr: MMRSettings = field(default_factory=MMRSettings)
    temporal_decay: DecaySettings = field(default_factory=DecaySettings)


def normalize_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    """Weights clamped to [0, 1] and rescaled to sum to 1, as OpenClaw does.

    The one weight normalisation: the config loader applies it to
    ``vectorWeight``/``textWeight``, the ranking to its options and the TUI to
    its weight toggles (``engine.search.scoring`` re-exports it beside the other
    formulas). Summing to 1 keeps the merged score in 0..1 so minScore means
    the same thing whatever the user typed; all-zero weights fall back to the
    defaults rather than making every score 0. The pair is rounded to the 3
    decimals a score breakdown prints (the text weight is 1 − the rounded vector
    weight), so a printed formula uses the very weights that ranked.
    """
    vw = _unit_clamp(vector_weight)
    tw = _unit_clamp(text_weight)
    total = vw + tw
    if total <= 0.0:
        return HybridSettings.vector_weight, HybridSettings.text_weight
    vw = round(vw / total, WEIGHT_DIGITS)
    return vw, round(1.0 - vw, WEIGHT_DIGITS)


#: decimals of the weights in a printed score breakdown (``normalize_weights``)
WEIGHT_DIGITS = 3


def _unit_clamp(value: float) -> float:
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))


@dataclass(frozen=True)
class QuerySettings:
    max_results: int = 6
    min_score: float = 0.35
    hybrid: HybridSettings = field(default_factory=HybridSettings)


@dataclass(frozen=True)
class CacheSettings:
    enabled: bool = True
    max_entries: int = 50000


@dataclass(frozen=True)
class StoreSettings:
    path: Path | None = None  # resolved, {agentId} already substituted
    vector_enabled: bool = True
    extension_path: str | None = None
    #: a change rebuilds the index (it is part of the index fingerprint)
    fts_tokenizer: FtsTokenizer = "unicode61"
    #: memdeck extension ``store.vector.lines``: also embed every line of each chunk
    #: (``engine.index.line_vectors``), read by the ``calibrated`` fusion. None
    #: (unset) = ``engine.index.line_vectors.lines_setting``
    line_vectors: bool | None = None


@dataclass(frozen=True)
class SessionSyncSettings:
    delta_bytes: int = 100_000
    delta_messages: int = 50


@dataclass(frozen=True)
class SyncSettings:
    watch: bool = True
    on_session_start: bool = True
    on_search: bool = True
    interval_minutes: float = 0
    sessions: SessionSyncSettings = field(default_factory=SessionSyncSettings)


@dataclass(frozen=True)
class MultimodalSettings:
    enabled: bool = False
    modalities: tuple[str, ...] = ("image", "audio")
    max_file_bytes: int = 10_000_000


@dataclass(frozen=True)
class MemorySearchSettings:
    enabled: bool = True
    provider: str = "auto"
    model: str | None = None  # None = provider default
    fallback: str = "none"
    remote: RemoteSettings = field(default_factory=RemoteSettings)
    output_dimensionality: int = 3072
    local: LocalSettings = field(default_factory=LocalSettings)
    extra_paths: tuple[str, ...] = ()
    #: 2026.9's ``{path, pattern}`` extraPaths: only matching files under ``path``
    extra_path_patterns: tuple[ExtraPathPattern, ...] = ()
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    query: QuerySettings = field(default_factory=QuerySettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    session_memory: bool = False
    sources: tuple[str, ...] = ("memory",)
    multimodal: MultimodalSettings = field(default_factory=MultimodalSettings)


@dataclass(frozen=True)
class Settings:
    """Everything the engine needs, resolved for one agent and one workspace."""

    agent_id: str = "main"
    workspace: Path = field(default_factory=lambda: Path.home() / ".openclaw" / "workspace")
    state_dir: Path = field(default_factory=lambda: Path.home() / ".openclaw")
    #: the agent's workspace per openclaw.json; ``workspace`` differs when a folder
    #: was given on the command line (``memdeck PATH``)
    agent_workspace: Path | None = None
    config_path: Path | None = None  # the file actually read, if any
    memory_search: MemorySearchSettings = field(default_factory=MemorySearchSettings)
    backend: str = "builtin"  # memory.backend
    citations: str = "auto"  # memory.citations: auto | on | off
    tools_enabled: bool = True  # false when plugins.slots.memory == "none"
    provider_api_keys: dict[str, str] = field(default_factory=dict)  # models.providers.<p>.apiKey
    provider_base_urls: dict[str, str] = field(default_factory=dict)
    provider_headers: dict[str, dict[str, str]] = field(default_factory=dict)
    # the parsed file, for the sections other modules own (qmd, compaction, dreaming)
    raw: dict[str, Any] = field(default_factory=dict)
    #: ranking profile: memdeck's own or OpenClaw 2026.9.6's (engine.config.profile)
    profile: str = "memdeck"
    profile_source: str = "default"
    #: which memory-search layout was read (seed memorySearch, 2026.9 memory.search, both)
    config_layout: str = "no memory search block; seed defaults"
    #: where the defaults' memory-search block is written: "memory.search" in the
    #: 2026.9 layout (what a message naming a key, such as ``remote.apiKey``, cites)
    memory_search_path: str = "agents.defaults.memorySearch"
    #: what OpenClaw 2026.9.6 would refuse in the file (memdeck still opens it);
    #: kept apart from ``warnings``, which are about memdeck's own reading
    openclaw_rejections: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def folder_tag(self) -> str | None:
        """None for the agent's own workspace; for another folder (the demo, any notes
        folder) ten hex digits of the SHA-256 of its path, which its index file and
        its qmd home are named with, so opening it never rewrites the agent's index
        or qmd collections with unrelated files."""
        if self.agent_workspace is None or self.workspace == self.agent_workspace:
            return None
        return hashlib.sha256(str(self.workspace).encode()).hexdigest()[:10]

    @property
    def index_path(self) -> Path:
        if self.memory_search.store.path is not None:
            return self.memory_search.store.path
        tag = self.folder_tag
        name = (
            f"{self.agent_id}.memdeck.sqlite"
            if tag is None
            else f"{self.agent_id}.{tag}.memdeck.sqlite"
        )
        return self.state_dir / "memory" / name
