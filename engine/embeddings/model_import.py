"""Converting a sentence-transformers BERT model to GGUF, offline.

``memdeck model import DIR`` reads a BERT-family model saved by
sentence-transformers (``config.json``, ``model.safetensors``, ``vocab.txt``,
optionally ``1_Pooling/config.json``) and writes a GGUF file llama.cpp's
``bert`` architecture loads. The container is written by the ``gguf`` package
and the weights are read by ``safetensors`` as numpy arrays, so nothing here
needs PyTorch or a model hub.

The result is checked before it is kept: the same token ids go through
llama.cpp and through :mod:`engine.embeddings.bert_reference` (a numpy forward pass on
the source weights), and every sentence must agree to cosine ≥ 0.999. A
successful import can be registered as memdeck's default local model, which
is what provider auto-detection (``engine.embeddings.factory``) looks for; the
registry itself lives in :mod:`engine.embeddings.registry`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.embeddings.registry import (
    PACKAGED_MODEL_NAME,
    find_packaged_minilm,
    models_dir,
    register_model,
)

MIN_COSINE = 0.999

#: Sentences the import is verified on: plain, punctuation, digits, accents, long.
VERIFY_SENTENCES = (
    "The cat needs her thyroid tablet every morning with food.",
    "Migrated the billing database from Postgres 13 to 16 on 2026-03-03!",
    "Inês prefers café au lait; Zoë takes the 08:04 train to Porto (seat 42).",
    "memdeck explains hybrid BM25 + vector ranking, with MMR and temporal decay. " * 6,
)

# HF BERT parameter names (after the optional "bert." prefix) → GGUF tensor names.
_GLOBAL_TENSORS = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
_LAYER_TENSORS = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
_SKIPPED_PREFIXES = ("embeddings.position_ids", "pooler.", "cls.")
# Kept in F32 whatever the requested dtype: llama.cpp adds this table to F32 activations.
_ALWAYS_F32 = {"token_types.weight"}


class ModelImportError(RuntimeError):
    """The folder is not a convertible model, or the converted model failed verification."""


@dataclass(frozen=True)
class BertModelFiles:
    """What was read from a sentence-transformers folder."""

    root: Path
    config: dict[str, Any]
    vocab: list[str]
    tensors: dict[str, np.ndarray]  # HF names without "bert.", float32
    do_lower_case: bool
    strip_accents: bool
    pooling: str  # "mean" or "cls"

    @property
    def dims(self) -> int:
        return int(self.config["hidden_size"])


@dataclass(frozen=True)
class ImportResult:
    out_path: Path
    name: str
    dims: int
    dtype: str
    size_bytes: int
    seconds: float
    cosine_min: float
    registered: bool


# -- reading -------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ModelImportError(f"{path.parent}: missing {path.name}") from exc
    except (OSError, ValueError) as exc:
        raise ModelImportError(f"{path}: unreadable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ModelImportError(f"{path}: expected a JSON object")
    return data


def read_bert_model(root: Path) -> BertModelFiles:
    """Read and validate a sentence-transformers BERT folder."""
    from safetensors.numpy import load_file

    root = Path(root)
    if not root.is_dir():
        raise ModelImportError(f"{root}: not a directory")
    config = _read_json(root / "config.json")
    if config.get("model_type") != "bert":
        raise ModelImportError(
            f"{root / 'config.json'}: model_type is {config.get('model_type')!r}; "
            "only BERT-family models (model_type 'bert') can be imported"
        )
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        if not isinstance(config.get(key), int) or config[key] <= 0:
            raise ModelImportError(f"{root / 'config.json'}: {key} must be a positive integer")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ModelImportError(f"{root / 'config.json'}: hidden_act must be 'gelu'")
    weights = root / "model.safetensors"
    if not weights.is_file():
        raise ModelImportError(f"{root}: missing model.safetensors (only safetensors is read)")
    try:
        raw = load_file(str(weights))
    except Exception as exc:  # safetensors raises its own error types
        raise ModelImportError(f"{weights}: unreadable safetensors ({exc})") from exc
    tensors = {
        (name[5:] if name.startswith("bert.") else name): np.asarray(arr, dtype=np.float32)
        for name, arr in raw.items()
    }
    try:
        vocab = (root / "vocab.txt").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise ModelImportError(f"{root}: missing vocab.txt (WordPiece vocabulary)") from exc
    embd = tensors.get("embeddings.word_embeddings.weight")
    if embd is None:
        raise ModelImportError(f"{weights}: no embeddings.word_embeddings.weight tensor")
    if len(vocab) != embd.shape[0]:
        raise ModelImportError(
            f"{root / 'vocab.txt'}: {len(vocab)} tokens but the embedding table has "
            f"{embd.shape[0]} rows"
        )
    tok_cfg = {}
    with contextlib.suppress(ModelImportError):
        tok_cfg = _read_json(root / "tokenizer_config.json")
    lower = bool(tok_cfg.get("do_lower_case", True))
    strip = tok_cfg.get("strip_accents")
    pooling = "mean"
    pool_cfg_path = root / "1_Pooling" / "config.json"
    if pool_cfg_path.is_file():
        pool_cfg = _read_json(pool_cfg_path)
        if pool_cfg.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif not pool_cfg.get("pooling_mode_mean_tokens", True):
            raise ModelImportError(f"{pool_cfg_path}: only mean or CLS pooling is supported")
    return BertModelFiles(
        root=root,
        config=config,
        vocab=vocab,
        tensors=tensors,
        do_lower_case=lower,
        strip_accents=lower if strip is None else bool(strip),
        pooling=pooling,
    )


def gguf_tensor_name(hf_name: str) -> str | None:
    """The llama.cpp name of a BERT parameter; None for tensors the GGUF leaves out."""
    if hf_name.startswith(_SKIPPED_PREFIXES):
        return None
    if hf_name in _GLOBAL_TENSORS:
        return _GLOBAL_TENSORS[hf_name]
    parts = hf_name.split(".")
    if len(parts) >= 5 and parts[0] == "encoder" and parts[1] == "layer":
        block, rest = parts[2], ".".join(parts[3:-1])
        if rest in _LAYER_TENSORS:
            return f"blk.{block}.{_LAYER_TENSORS[rest]}.{parts[-1]}"
    raise ModelImportError(f"unexpected tensor {hf_name!r}: not part of a BERT encoder")


def phantom_space_vocab(vocab: list[str]) -> list[str]:
    """WordPiece entries as llama.cpp's "bert" tokenizer matches them.

    llama.cpp prefixes every word with U+2581 and looks tokens up by text, so a
    word-initial piece ``cat`` is stored as ``▁cat``, a continuation ``##s`` as
    ``s``, and bracketed specials (``[CLS]``, ``[unused3]``) unchanged.
    """
    out = []
    for tok in vocab:
        if tok.startswith("[") and tok.endswith("]"):
            out.append(tok)
        elif tok.startswith("##"):
            out.append(tok[2:])
        else:
            out.append("\u2581" + tok)
    return out


# -- writing -------------------------------------------------------------------


def write_gguf(model: BertModelFiles, out: Path, name: str, dtype: str = "f16") -> None:
    """Write the model as a llama.cpp ``bert`` GGUF file at ``out``."""
    import gguf

    if dtype not in ("f16", "f32"):
        raise ModelImportError(f"dtype must be f16 or f32, not {dtype!r}")
    cfg = model.config
    vocab = model.vocab
    index = {tok: i for i, tok in enumerate(vocab)}
    specials = {
        "cls": index.get("[CLS]"),
        "sep": index.get("[SEP]"),
        "pad": index.get("[PAD]"),
        "unk": index.get("[UNK]"),
        "mask": index.get("[MASK]"),
    }
    missing = [k for k, v in specials.items() if v is None and k != "mask"]
    if missing:
        raise ModelImportError(f"vocab.txt lacks the special tokens {missing}")
    cls_id, sep_id, pad_id, unk_id = (index[t] for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]"))

    writer = gguf.GGUFWriter(str(out), "bert")
    writer.add_name(name)
    writer.add_context_length(int(cfg.get("max_position_embeddings", 512)))
    writer.add_embedding_length(int(cfg["hidden_size"]))
    writer.add_feed_forward_length(int(cfg["intermediate_size"]))
    writer.add_block_count(int(cfg["num_hidden_layers"]))
    writer.add_head_count(int(cfg["num_attention_heads"]))
    writer.add_layer_norm_eps(float(cfg.get("layer_norm_eps", 1e-12)))
    writer.add_causal_attention(False)
    writer.add_pooling_type(
        gguf.PoolingType.CLS if model.pooling == "cls" else gguf.PoolingType.MEAN
    )
    writer.add_file_type(1 if dtype == "f16" else 0)  # MOSTLY_F16 / ALL_F32

    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(phantom_space_vocab(vocab))
    control = {v for v in specials.values() if v is not None}
    writer.add_token_types(
        [
            gguf.TokenType.UNKNOWN
            if i == specials["unk"]
            else gguf.TokenType.CONTROL
            if i in control
            else gguf.TokenType.NORMAL
            for i in range(len(vocab))
        ]
    )
    writer.add_token_type_count(int(cfg.get("type_vocab_size", 2)))
    writer.add_bos_token_id(cls_id)  # llama.cpp prepends BOS = [CLS]
    writer.add_sep_token_id(sep_id)
    writer.add_pad_token_id(pad_id)
    writer.add_unk_token_id(unk_id)
    if specials["mask"] is not None:
        writer.add_mask_token_id(specials["mask"])
    writer.add_bool("tokenizer.ggml.normalizer.lowercase", model.do_lower_case)
    writer.add_bool("tokenizer.ggml.normalizer.strip_accents", model.strip_accents)

    for hf_name, arr in model.tensors.items():
        target = gguf_tensor_name(hf_name)
        if target is None:
            continue
        keep_f32 = dtype == "f32" or arr.ndim == 1 or target in _ALWAYS_F32
        writer.add_tensor(target, arr if keep_f32 else arr.astype(np.float16))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# -- verifying -----------------------------------------------------------------


def verify_gguf(
    model: BertModelFiles, gguf_path: Path, sentences: tuple[str, ...] = VERIFY_SENTENCES
) -> float:
    """Smallest cosine between llama.cpp's and the numpy reference's embeddings."""
    from engine.embeddings.bert_reference import BertReference
    from engine.embeddings.local import LocalProvider

    reference = BertReference(model.config, model.tensors, pooling=model.pooling)
    provider = LocalProvider(gguf_path)
    try:
        worst = 1.0
        for text in sentences:
            ids = provider.token_ids(text)
            ref = reference.embed(ids)
            got = provider.embed_query(text)
            worst = min(worst, float(np.dot(ref, got)))
        return worst
    finally:
        provider.close()


# -- the whole import ----------------------------------------------------------


def import_model(
    src: Path,
    out: Path | None = None,
    *,
    name: str | None = None,
    dtype: str = "f16",
    register: bool = True,
    progress: Callable[[str], None] | None = None,
    env: Mapping[str, str] = os.environ,
) -> ImportResult:
    """Convert, verify against the numpy reference, then move into place and register.

    The GGUF is written to a temporary name first, so a failed or interrupted
    import never leaves a half-written file where the provider would load it.
    """
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    src = Path(src)
    if name is None:
        name = PACKAGED_MODEL_NAME if src == find_packaged_minilm() else src.resolve().name
    say(f"reading {src}")
    model = read_bert_model(src)
    out = Path(out) if out else models_dir(env) / f"{name}.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        say(f"writing {out.name} ({dtype})")
        write_gguf(model, tmp, name, dtype)
        say("verifying against the numpy reference forward pass")
        cosine = verify_gguf(model, tmp)
        if cosine < MIN_COSINE:
            raise ModelImportError(
                f"verification failed: llama.cpp and the numpy reference agree only to "
                f"cosine {cosine:.5f} (< {MIN_COSINE}); the GGUF was not kept"
            )
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    if register:
        register_model(out, name, model.dims, src, env)
    return ImportResult(
        out_path=out,
        name=name,
        dims=model.dims,
        dtype=dtype,
        size_bytes=out.stat().st_size,
        seconds=time.perf_counter() - t0,
        cosine_min=cosine,
        registered=register,
    )
