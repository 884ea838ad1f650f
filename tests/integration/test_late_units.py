"""Unit vectors pooled from the chunk's own run of the real MiniLM
(``engine.embeddings.late_units``, ``LocalProvider.embed_with_units``) and the
indexer storing them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.core import Engine
from engine.embeddings.base import UnitSpan
from engine.embeddings.late_units import line_token_starts, pool_units
from engine.index.line_vectors import space_key, unit_spans
from tests.engine_fixtures import write

pytestmark = pytest.mark.model

CHAT = (
    "# 2026-03-02\n"
    "Caroline: I went to the LGBTQ support group yesterday!\n"
    "Melanie: That's wonderful — how did it feel? Naïve café résumé, 東京.\n"
    "\n"
    "  - a list item with trailing spaces   \n"
    "\n"
    "The committee reviewed the boundary-layer measurements taken over the\n"
    "swept wing and found that transition moved forward as the Reynolds\n"
    "number increased beyond the design point.\n"
)


@pytest.fixture(scope="module")
def provider(minilm_gguf: Path):  # type: ignore[no-untyped-def]
    from engine.embeddings.local import LocalProvider

    p = LocalProvider(minilm_gguf, n_threads=1, late_units=True)
    yield p
    p.close()


@pytest.fixture(scope="module")
def token_model(minilm_gguf: Path):  # type: ignore[no-untyped-def]
    """llama-cpp-python's own per-token embedding of the model (no pooling): the
    reference the provider's pooling is checked against (with the provider's own
    attention kernel: the fused one differs in the last float32 digits)."""
    import llama_cpp

    from engine.embeddings.local import FLASH_ATTENTION

    llm = llama_cpp.Llama(
        model_path=str(minilm_gguf),
        embedding=True,
        n_ctx=512,
        n_batch=512,
        n_ubatch=512,
        n_threads=1,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE,
        flash_attn=FLASH_ATTENTION,
        verbose=False,
    )
    yield llm
    llm.close()


def _tokenize(llm):  # type: ignore[no-untyped-def]
    def tokenize(text: str, special: bool) -> list[int]:
        return list(llm.tokenize(text.encode("utf-8"), add_bos=special, special=False))

    return tokenize


def test_a_chunks_tokens_are_its_lines_tokens_end_to_end(token_model) -> None:  # type: ignore[no-untyped-def]
    tokenize = _tokenize(token_model)
    full = tokenize(CHAT, True)
    cls, sep = full[0], full[-1]
    assert (cls, sep) == (101, 102)  # [CLS], [SEP] of the WordPiece vocabulary
    starts = line_token_starts(tokenize, CHAT, full)
    assert starts is not None
    lines = CHAT.split("\n")
    assert len(starts) == len(lines) + 1 and starts[0] == 1 and starts[-1] == len(full) - 1
    for i, line in enumerate(lines):  # each line's span is that line's own tokens
        assert full[starts[i] : starts[i + 1]] == tokenize(line, False)
    assert starts[3] == starts[4]  # the empty line has no token
    # a tokenization that is not the lines' end to end is refused
    assert line_token_starts(tokenize, CHAT, [cls, *full[2:]]) is None
    assert line_token_starts(tokenize, CHAT, full[:-1]) is None


def test_units_are_the_means_of_their_token_rows(provider, token_model) -> None:  # type: ignore[no-untyped-def]
    spans = unit_spans(CHAT)
    assert [(a, b) for a, b, _ in spans] == [(1, 1), (2, 2), (4, 4), (6, 8)]
    _, units = provider.embed_with_units([CHAT], [spans])
    rows = np.asarray(token_model.embed(CHAT, normalize=False), dtype=np.float32)
    starts = line_token_starts(_tokenize(token_model), CHAT, _tokenize(token_model)(CHAT, True))
    assert starts is not None and rows.shape[0] == starts[-1] + 1
    mat = units[0]
    assert mat is not None and mat.shape == (4, 384)
    for row, (first, last, _) in zip(mat, spans, strict=True):
        want = rows[starts[first] : starts[last + 1]].mean(axis=0)
        want /= np.linalg.norm(want)
        assert np.abs(row - want).max() < 1e-5
        assert abs(float(np.linalg.norm(row)) - 1) < 1e-5
    # the wrapped paragraph (lines 6-8) is one unit: not any single line's vector
    line6 = rows[starts[6] : starts[7]].mean(axis=0)
    assert float(mat[3] @ (line6 / np.linalg.norm(line6))) < 0.999


def test_the_chunks_vector_is_todays_pooled_embedding(provider) -> None:  # type: ignore[no-untyped-def]
    texts = [CHAT, "one line only", "word " * 700]  # the last is longer than the context
    spans = [unit_spans(t) for t in texts]
    vectors, units = provider.embed_with_units(texts, spans)
    today = provider.embed_documents(texts)
    assert vectors.shape == today.shape == (3, 384)
    assert np.abs(vectors - today).max() < 1e-6  # float32 rounding of the mean, no more
    assert units[1] is not None and units[1].shape == (1, 384)
    assert units[2] is None  # longer than the model's context: units on their own


def test_pool_units_refuses_a_unit_without_tokens() -> None:
    rows = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    assert pool_units(rows, [1, 2, 2, 3], [UnitSpan(0, 0, "a"), UnitSpan(1, 1, "")]) is None
    got = pool_units(rows, [1, 2, 2, 3], [UnitSpan(0, 1, "a b"), UnitSpan(2, 2, "c")])
    assert got is not None
    want = rows[1] / np.linalg.norm(rows[1])
    assert np.allclose(got[0], want) and np.allclose(got[1], rows[2] / np.linalg.norm(rows[2]))


def test_the_indexer_stores_units_from_the_chunks_run(
    minilm_gguf: Path, make_settings, workspace_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    from engine.embeddings.local import LocalProvider

    long_note = "\n".join(f"Item {i}: " + ",".join("abcdefghijklmnopqrst") for i in range(20))
    write(workspace_dir, "memory/2026-03-02.md", CHAT)
    write(workspace_dir, "memory/2026-03-03.md", long_note + "\n")
    late = LocalProvider(minilm_gguf, n_threads=1, late_units=True)
    separate = LocalProvider(minilm_gguf, n_threads=1, late_units=False)
    assert space_key(late) != space_key(separate)
    engine = Engine(make_settings(), provider=late)
    try:
        engine.sync()
        with engine.pinned_store() as store:
            assert store.chunks_without_line_vectors(space_key(late)) == []
            # no chunk has units of the other kind: the two are never mixed
            chunks = dict(store.chunks_without_line_vectors(space_key(separate)))
            mats = store.line_vectors(list(chunks), space_key(late))
    finally:
        engine.close()
    assert len(chunks) >= 2 and set(mats) == set(chunks)
    texts = list(chunks.values())
    spans = [unit_spans(t) for t in texts]
    by_text = dict(zip(texts, late.embed_with_units(texts, spans)[1], strict=True))
    assert any(m is None for m in by_text.values())  # one chunk is past the context
    for h, text in chunks.items():
        assert mats[h].shape == (len(unit_spans(text)), 384)
        pooled = by_text[text]
        if pooled is not None:  # stored as 5-bit codes: within half a step of each row's
            assert _within_half_a_step(mats[h], pooled)
        else:  # too long for one run: the units' own vectors
            own = separate.embed_documents([u for _, _, u in unit_spans(text)])
            assert _within_half_a_step(mats[h], own)
    late.close()
    separate.close()


def _within_half_a_step(stored: np.ndarray, exact: np.ndarray) -> bool:
    """``stored`` is ``exact`` coded in 5 bits (each number to the nearest step, the
    row's largest magnitude ÷ 15, ``engine.index.line_codec``) and read back at
    length 1."""
    step = np.abs(exact).max(axis=1, keepdims=True) / 15
    coded = np.clip(np.rint(exact / step), -15, 15) * step
    expected = coded / np.linalg.norm(coded, axis=1, keepdims=True)
    return bool(np.allclose(stored, expected, atol=1e-5))
