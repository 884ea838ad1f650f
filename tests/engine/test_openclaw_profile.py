"""The ``openclaw`` profile's pieces without OpenClaw installed: profile
resolution, chunking facts, keyword expansion, decay rules and memory_search
under the profile. (tests/openclaw/ proves them against the real package.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.config.loader import ConfigError, load_settings
from engine.config.profile import resolve_profile
from engine.core import Engine
from engine.openclaw.chunking import chunk_memory_file, chunk_openclaw, estimate_chars
from engine.openclaw.keywords import extract_keywords
from engine.openclaw.profile import (
    OpenClawIndex,
    date_of,
    is_evergreen,
    search_openclaw,
)
from engine.tools import memory_search

NOW = 1_795_000_000_000.0  # 2026-11-18


def test_profile_resolution_order(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "MEMDECK_HOME": str(tmp_path / "md")}
    assert resolve_profile(None, env) == ("memdeck", "default")
    (tmp_path / "md").mkdir()
    (tmp_path / "md" / "settings.json").write_text('{profile: "openclaw"}')
    assert resolve_profile(None, env)[0] == "openclaw"
    assert resolve_profile(None, {**env, "MEMDECK_PROFILE": "memdeck"}) == (
        "memdeck",
        "$MEMDECK_PROFILE",
    )
    assert resolve_profile("memdeck", {**env, "MEMDECK_PROFILE": "openclaw"})[0] == "memdeck"
    with pytest.raises(ConfigError, match='unknown profile "fancy"'):
        load_settings(env={**env, "MEMDECK_PROFILE": "fancy"})
    for written in ("3", '["openclaw"]'):  # not a name at all: said, never ignored
        (tmp_path / "md" / "settings.json").write_text(f"{{profile: {written}}}")
        with pytest.raises(ConfigError, match=r"settings\.json: profile: expected memdeck or"):
            load_settings(env=env)
    assert resolve_profile("openclaw", env)[0] == "openclaw"  # --profile wins over the file


def test_chunking_facts() -> None:
    assert estimate_chars("abc") == 3
    assert estimate_chars("😀") == 2  # one emoji = two UTF-16 units
    assert estimate_chars("中") == 4  # common CJK
    assert estimate_chars("𠀀") == 16  # Ext-B ideograph
    chunks = chunk_memory_file("MEMORY.md", "# A\n- one\n- two\nmore\n## B\ntext\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (2, 2), (3, 4), (5, 7)]
    # other files are not split per entry
    assert len(chunk_memory_file("memory/x.md", "# A\n- one\n- two\n")) == 1
    # a cut line's pieces are separate entries joined with "\n"
    long = chunk_openclaw("a" * 2000, tokens=400, overlap=0)
    assert [len(c.text) for c in long] == [1600, 400]
    assert "<!--" not in chunk_memory_file("MEMORY.md", "- x <!-- importance: 3 -->\n")[0].text


def test_keywords_and_dates() -> None:
    assert extract_keywords("What did Caroline do in 2023 at the LGBTQ group?") == [
        "caroline",
        "lgbtq",
        "group",
    ]
    assert str(date_of("memory/2026/2026-01-02-trip.md")) == "2026-01-02"
    assert date_of("notes/2026-01-02.md") is None
    assert is_evergreen("USER.md") and is_evergreen("memory/people.md")
    assert not is_evergreen("memory/2026-01-02.md")


def _index(files: dict[str, str]) -> OpenClawIndex:
    index = OpenClawIndex()
    index.load([(rel, text, NOW - 86_400_000) for rel, text in files.items()])
    return index


def test_search_floor_decay_and_importance() -> None:
    index = _index(
        {
            "MEMORY.md": "- tea with Bob <!-- importance: 10 -->\n- tea alone\n",
            "memory/2020-01-01.md": "tea tea tea in the garden\n",
        }
    )
    out = search_openclaw(index, "tea", now_ms=NOW, min_score=0.35)
    assert [c.path for c in out.results][:2] == ["MEMORY.md", "MEMORY.md"]
    top = out.results[0]
    assert top.importance == 10 and top.importance_multiplier == pytest.approx(1.25)
    old = next(c for c in out.results + out.dropped if c.path.startswith("memory/2020"))
    assert old.decay_multiplier < 1e-10
    assert old.dropped == f"score {old.score:.4f} < minScore 0.35"
    # nothing passes a high minScore: the floor drops to 0 and results still come back
    floor = search_openclaw(index, "garden", now_ms=NOW, min_score=0.99)
    assert floor.floor_dropped and [c.path for c in floor.results] == ["memory/2020-01-01.md"]
    assert "×" in floor.results[0].formula()


def test_memory_search_tool_uses_the_profile(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "USER.md").write_text("- prefers green tea\n")
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps({"memory": {"search": {"provider": "none"}}}))
    env = {"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(tmp_path / "state")}
    settings = load_settings(config_path=config, workspace=ws, env=env, profile="openclaw")
    engine = Engine(settings, provider=None)
    try:
        result = memory_search(engine, "green tea", explain=True)
    finally:
        engine.close()
    assert result["profile"] == "openclaw"
    assert [r["path"] for r in result["results"]] == ["USER.md"]  # USER.md is indexed
    assert result["results"][0]["breakdown"]["profile"] == "openclaw"


def test_the_profile_formula_adds_up_by_hand() -> None:
    """Every step of an openclaw-profile score is printed with its numbers: the keyword
    score (bm25 + the lexical boost, capped at 1), the boost's own sum, decay and
    importance; evaluating the printed numbers gives the printed results."""
    index = _index(
        {
            "MEMORY.md": "- tea with Dana on Fridays <!-- importance: 8 -->\n",
            "memory/2026-01-10.md": "- tea tea at the garden cafe, tea again\n",
        },
    )
    out = search_openclaw(index, "tea", now_ms=NOW, min_score=0.0)
    formulas = [c.formula() for c in out.results]
    assert len(formulas) == 2 and any("(importance 8)" in f for f in formulas), formulas
    assert any("(age " in f for f in formulas), formulas
    for c in out.results:
        steps = c.formula().split("; ")
        keyword = c.keyword_step()
        assert keyword is not None and steps[0] == keyword
        body, boost, kw = (float(x) for x in re.findall(r"\d+\.\d{4}", keyword))
        assert kw == pytest.approx(min(1.0, body + boost), abs=2e-4)
        assert c.boost_arithmetic is not None
        *terms, total = re.findall(
            r"\d+(?:\.\d+)?",
            c.boost_arithmetic.replace("0.45×", "").replace("0.2×", "").replace("0.18×", ""),
        )
        share, density, in_path, length = (float(x) for x in terms)
        assert float(total) == pytest.approx(
            0.45 * share + 0.2 * density + 0.18 * in_path + length, abs=2e-4
        )
        assert float(total) == pytest.approx(boost, abs=1e-4)
        value = kw
        for step in steps[1:]:
            factor = float(re.match(r"×(\d+\.\d+)", step).group(1))  # type: ignore[union-attr]
            value *= factor
        if len(steps) > 1:
            assert c.formula().endswith(f" = {c.score:.4f}")
            assert value == pytest.approx(c.score, abs=1e-3)
        else:
            assert kw == pytest.approx(c.score, abs=1e-4) and c.formula().count(" = ") == 1
