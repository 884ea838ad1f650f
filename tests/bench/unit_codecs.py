"""What storing unit vectors in fewer bits would save, and what it would cost the ranking.

The default index holds one vector per unit (line) of every chunk as 8-bit codes
with a scale (``engine.index.line_codec``). They are the largest table of a chat
log's index, so a smaller code is the first way to a smaller file. This benchmark
measures two 4-bit codes against the stored 8-bit one, both ways, without
shipping either:

* **bytes**: LoCoMo conversation 5's cached default index (the quality
  benchmarks' cache, the workspace ``make bench-cost`` indexes) is copied, each
  unit matrix written again in the variant's layout (key, float32 step, 4-bit
  codes packed two to a byte), the copy vacuumed; its size ÷ the Markdown's;
* **ranking**: every LoCoMo question's kept retrieval (``tests.bench.calibrate``)
  is ranked by the default configuration with its candidates' unit vectors
  passed through the variant's code and back (rows re-normalised), the first
  pass's best units chosen again from them: hit@6 and MRR@6 at the default
  minScore on 0–4 (tuning) and 5–9 (held out), and the off-topic and nonsense
  queries that return anything.

The variants: ``int8`` (the index as stored: the reference), ``int4-peak`` (15
levels, step = the row's largest magnitude ÷ 7) and ``int4-rms`` (16 levels
between the steps, step = 0.35 × the row's RMS: the large components are clipped,
the many small ones kept finer).

Run: ``make bench-unit-codecs`` (``.venv/bin/python -m tests.bench.unit_codecs``).
Results go to ``tests/bench/results/unit_codecs.json``. ``--size-of INDEX`` gives
only the bytes of another index file under each code (the 100k stand-in of
``tests.bench.growth``, say), into ``unit_codecs_size.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.index import line_codec
from engine.index.db import Database
from engine.index.line_vectors import ChunkUnits
from engine.search.rank import rank
from tests.bench import calibrate, common, locomo

#: conversation whose index is measured (the cost benchmark's)
SIZE_CONVERSATION = 5
#: int4-rms: the step as a share of the row's RMS (the smallest mean cosine error
#: over conversation 5's units against perturbed queries among 0.28–0.40)
RMS_STEP = 0.35

Codec = Callable[[np.ndarray], tuple[np.ndarray, bytes]]


def _packed(codes: np.ndarray) -> bytes:
    """Codes 0..15 (units × dims, dims even) two to a byte."""
    c = codes.astype(np.uint8)
    return (c[:, 0::2] | (c[:, 1::2] << 4)).astype(np.uint8).tobytes()


def int4_peak(mat: np.ndarray) -> tuple[np.ndarray, bytes]:
    peak = np.abs(mat).max(axis=1, keepdims=True)
    step = np.where(peak > 0, peak / 7.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(mat / step), -7, 7)
    return (codes * step).astype(np.float32), step.tobytes() + _packed(codes + 8)


def int4_rms(mat: np.ndarray) -> tuple[np.ndarray, bytes]:
    rms = np.sqrt((mat**2).mean(axis=1, keepdims=True))
    step = np.where(rms > 0, RMS_STEP * rms, 1.0).astype(np.float32)
    codes = np.clip(np.floor(mat / step), -8, 7)
    return ((codes + 0.5) * step).astype(np.float32), step.tobytes() + _packed(codes + 8)


def _packed_bits(codes: np.ndarray, bits: int) -> bytes:
    """Unsigned codes (units × dims) of ``bits`` bits each, packed end to end per row."""
    c = codes.astype(np.uint8)
    rows = np.unpackbits(c[..., None], axis=-1, bitorder="little")[..., :bits]
    return np.packbits(rows.reshape(c.shape[0], -1), axis=1, bitorder="little").tobytes()


def peak_code(bits: int) -> Codec:
    """``bits``-bit codes, 2^(bits-1) − 1 levels each side, step = the row's largest
    magnitude ÷ that (the stored int8 code's rule with fewer levels)."""
    top = 2 ** (bits - 1) - 1

    def code(mat: np.ndarray) -> tuple[np.ndarray, bytes]:
        peak = np.abs(mat).max(axis=1, keepdims=True)
        step = np.where(peak > 0, peak / top, 1.0).astype(np.float32)
        codes = np.clip(np.rint(mat / step), -top, top)
        return (codes * step).astype(np.float32), step.tobytes() + _packed_bits(codes + top, bits)

    return code


CODECS: dict[str, Codec | None] = {
    "int8": None,
    "int6-peak": peak_code(6),
    "int5-peak": peak_code(5),
    "int4-peak": int4_peak,
    "int4-rms": int4_rms,
}


def _normalised(mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return (mat / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def index_bytes(source: Path, codec: Codec | None, markdown_bytes: int) -> dict[str, Any]:
    """The index at ``source`` with its unit matrices in ``codec``'s layout: bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "index.sqlite"
        shutil.copyfile(source, copy)
        db = Database(copy)
        if codec is not None:
            rows = list(db.execute("select rowid, lines, dims, vectors from line_vectors"))
            with db.transaction():
                for rowid, lines, dims, blob in rows:
                    mat, keys = line_codec.decode(blob, int(lines), int(dims))
                    _, body = codec(mat)
                    key_bytes = (
                        np.asarray(keys, dtype=np.uint64).tobytes() if keys is not None else b""
                    )
                    db.execute(
                        "update line_vectors set vectors = ? where rowid = ?",
                        (key_bytes + body, rowid),
                    )
        db.execute("vacuum")
        db.execute("pragma wal_checkpoint(truncate)")
        pages = int(db.scalar("pragma page_count") or 0) * int(db.scalar("pragma page_size") or 0)
        units = int(db.scalar("select coalesce(sum(length(vectors)), 0) from line_vectors") or 0)
        db.close()
    return {
        "index_bytes": pages,
        "ratio": round(pages / markdown_bytes, 2),
        "unit_blob_bytes": units,
    }


def ranking(convs: list[int], codec: Codec | None) -> dict[str, float]:
    """LoCoMo hit@6 / MRR@6 (default minScore) and off-topic shares over ``convs``
    with each candidate's unit vectors through ``codec``."""
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    provider = common.local_provider()
    opts = common.default_options()
    n = hits = 0
    rr = 0.0
    off = {"cranfield": [0, 0], "nonsense": [0, 0]}
    for ci in convs:
        samples, today = calibrate.collect(ci, data, provider, "unicode61")
        for s in samples:
            r = calibrate.shaped(s, calibrate.Variant())
            if codec is not None and r.query_vector is not None:
                units = {
                    cid: ChunkUnits(_normalised(codec(u.matrix)[0]), u.first_lines, u.last_lines)
                    for cid, u in r.units.items()
                }
                r = dataclasses.replace(
                    r,
                    units=units,
                    line_hits={cid: u.best(r.query_vector) for cid, u in units.items()},
                )
            out = rank(r, opts, today)
            if s.kind != "question":
                off[s.kind][0] += bool(out.results)
                off[s.kind][1] += 1
                continue
            n += 1
            first = locomo.first_hit(out.results, s.evidence)
            if first is not None and first <= locomo.K:
                hits += 1
                rr += 1 / first
    return {
        "hit@6": round(hits / n, 4),
        "MRR@6": round(rr / n, 4),
        "off-topic": round(off["cranfield"][0] / max(1, off["cranfield"][1]), 4),
        "nonsense": round(off["nonsense"][0] / max(1, off["nonsense"][1]), 4),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-of", type=Path, help="only the bytes of this index file")
    args = parser.parse_args(argv)
    if args.size_of is not None:
        sizes = {name: index_bytes(args.size_of, codec, 1) for name, codec in CODECS.items()}
        common.table(
            ["unit code", "index bytes", "MiB"],
            [
                [n, f"{v['index_bytes']:,}", f"{v['index_bytes'] / 2**20:.1f}"]
                for n, v in sizes.items()
            ],
            title=f"Unit vectors in fewer bits: {args.size_of}",
        )
        common.write_results(
            "unit_codecs_size",
            {"index": str(args.size_of), "sizes": {n: v["index_bytes"] for n, v in sizes.items()}},
        )
        return
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    conv = locomo.build_conversation(SIZE_CONVERSATION, data[SIZE_CONVERSATION])
    markdown = sum(len(text.encode("utf-8")) for text in conv.files.values())
    source = (
        common.CACHE_DIR / "locomo" / f"conv-{SIZE_CONVERSATION}" / "state" / "index.memdeck.sqlite"
    )
    if not source.exists():
        raise common.Skip(
            f"{source} is absent: run `make bench-quality` first (it builds the cache)"
        )
    variants: dict[str, dict[str, Any]] = {}
    for name, codec in CODECS.items():
        common.log(f"{name}: size, then ranking")
        variants[name] = {
            "size": index_bytes(source, codec, markdown),
            "0-4": ranking([0, 1, 2, 3, 4], codec),
            "5-9": ranking([5, 6, 7, 8, 9], codec),
        }
    rows = []
    for name, v in variants.items():
        rows.append(
            [
                name,
                f"{v['size']['index_bytes']:,}",
                f"{v['size']['ratio']}×",
                *(f"{v[h]['hit@6']:.4f} / {v[h]['MRR@6']:.4f}" for h in ("0-4", "5-9")),
                f"{100 * v['5-9']['off-topic']:.1f} % / {100 * v['5-9']['nonsense']:.0f} %",
            ]
        )
    common.table(
        [
            "unit code",
            "conv-5 index bytes",
            "÷ Markdown",
            "0–4 hit@6 / MRR@6",
            "5–9 hit@6 / MRR@6",
            "5–9 off-topic / nonsense",
        ],
        rows,
        title=f"Unit vectors in fewer bits (LoCoMo conv-5: {markdown:,} bytes of Markdown)",
    )
    common.write_results(
        "unit_codecs", {"markdown_bytes": markdown, "rms_step": RMS_STEP, "variants": variants}
    )


if __name__ == "__main__":
    main()
