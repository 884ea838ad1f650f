"""Light, deep (with recovery) and REM on a synthetic month, numbers worked out by hand.

The month is described in ``dreaming_month.py``; each expected number below is
derived in a comment from that description and the formulas in the phase
modules' docstrings, then asserted against the engine's output.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from engine.memory.dreaming.config import DeepSettings, DreamingSettings, LightSettings, RemSettings
from engine.memory.dreaming.deep import WEIGHTS
from engine.memory.dreaming.service import Dreamer
from tests.engine import dreaming_month as m

LN11 = math.log(11)


@pytest.fixture
def dreamer(make_engine, workspace_dir):
    engine = m.month_engine(make_engine, workspace_dir)
    return Dreamer(engine, config=DreamingSettings(timezone="UTC"))


def by_text(candidates, text):
    found = [c for c in candidates if c.text == text]
    assert len(found) == 1, [c.text for c in candidates]
    return found[0]


# --------------------------------------------------------------------------- light


def test_light_stages_recent_and_recalled_entries_with_dedupe(dreamer):
    result = dreamer.light(m.NOW)
    # Window: notes 0..2 days old (03-29, 03-30, 03-31) plus entries recalled at
    # most 2 days ago (at >= 03-29 12:00): A (e5), F (e6), C (3 hits), D (03-29
    # 12:00, exactly 2.0 days), E (3 hits), R on 03-31 (00:00).
    # Entries admitted: A F C D E R30 R31 TLS TLS2 PG29 PG30 = 11.
    assert result.considered == 11
    # Folds: F<-A (9/10 = 0.9), R31<-R30 (identical, 1.0), TLS2<-TLS (9/10 = 0.9).
    merges = {(mg.kept, mg.dropped, round(mg.similarity, 6)) for mg in result.merges}
    assert merges == {
        ("memory/2026-03-27.md#L5", "memory/2026-03-20.md#L5", 0.9),
        ("memory/2026-03-31.md#L3", "memory/2026-03-30.md#L3", 1.0),
        ("memory/2026-03-31.md#L4", "memory/2026-03-30.md#L4", 0.9),
    }
    # Order: hits inside the window desc, then newest note first.
    # C 3 (03-29,30,31), E 3 (older note, so after C), F/A 2 (e5, e6),
    # R 1 (note 03-31), D 1 (note 03-26), then 0 hits: TLS2 (03-31), PG30, PG29.
    order = [c.text for c in result.staged]
    assert order == [m.C, m.E, m.F, m.R, m.D, m.TLS2, m.PG30, m.PG29]
    assert [c.recall_count for c in result.staged] == [3, 3, 2, 1, 1, 0, 0, 0]
    fa = by_text(result.staged, m.F)
    assert fa.sources == ["memory/2026-03-27.md#L5", "memory/2026-03-20.md#L5"]
    assert result.over_limit == 0


def test_light_limit_and_lookback(dreamer):
    dreamer.config = dataclasses.replace(
        dreamer.config, light=LightSettings(limit=3, lookback_days=0)
    )
    result = dreamer.light(m.NOW)
    # lookback 0: notes of 03-31 (R31, TLS2) and hits at >= 03-31 12:00:
    # C, E (12:00 exactly). F's e6 at 06:00 is 0.25 days old: out.
    assert result.considered == 4
    assert [c.text for c in result.staged] == [m.C, m.E, m.R]
    assert result.over_limit == 1  # TLS2 cut by limit 3


def test_light_sources_without_recall_ignore_hits(dreamer):
    dreamer.config = dataclasses.replace(dreamer.config, light=LightSettings(sources=("daily",)))
    result = dreamer.light(m.NOW)
    # Only notes 03-29..03-31: R30 R31 TLS TLS2 PG29 PG30 = 6 entries, 4 candidates.
    assert result.considered == 6
    assert {c.text for c in result.staged} == {m.R, m.TLS2, m.PG29, m.PG30}


# --------------------------------------------------------------------------- deep


def test_deep_scores_candidate_fa_by_hand(dreamer):
    result = dreamer.deep(m.NOW)
    assert [p.candidate.text for p in result.proposed] == [m.F]
    p = result.proposed[0]
    parts = p.parts
    # relevance = mean(.90 .80 .85 .95 .70 .80) = 5.00 / 6 = 0.833333
    assert parts.relevance == pytest.approx(0.833333, abs=1e-6)
    # frequency = ln(1+6)/ln(11) = 1.945910/2.397895 = 0.811508
    assert parts.frequency == pytest.approx(0.811508, abs=1e-6)
    # diversity: keys {postgres port, staging database, which port does postgres use,
    # db cluster, staging db port} ("Postgres  Port" = "postgres port") = 5 -> 5/5 = 1
    assert parts.unique_queries == 5
    assert parts.diversity == 1.0
    # recency: last hit 03-31 06:00, 0.25 days -> 0.5^(0.25/14) = exp(-0.012378) = 0.987699
    assert parts.recency == pytest.approx(0.987699, abs=1e-6)
    # consolidation: days {20,27 notes} ∪ {20,22,25,28,30,31 hits} = 7 days, span 11
    # -> 0.55*min(1, ln7/ln5) + 0.45*min(1, 11/7) = 0.55 + 0.45 = 1
    assert parts.days == 7
    assert parts.consolidation == pytest.approx(1.0)
    # conceptual: tags {infra, postgres, 5433} -> 3/6 = 0.5
    assert p.candidate.tags == ("infra", "postgres", "5433")
    assert parts.conceptual == 0.5
    # total = .30*.833333 + .24*.811508 + .15*1 + .15*.987699 + .10*1 + .06*.5
    #       = .250000 + .194762 + .150000 + .148155 + .100000 + .030000 = 0.872917
    assert p.score == pytest.approx(0.872917, abs=1e-6)
    assert p.parts.weighted()["frequency"] == pytest.approx(0.24 * 0.811508, abs=1e-6)
    assert p.age_days == 4  # newest note 03-27
    assert p.failed == []
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)


def test_deep_gates_with_hand_numbers(dreamer):
    result = dreamer.deep(m.NOW)
    rejected = {p.candidate.text: p for p in result.rejected}

    b = rejected[m.B]
    # relevance (.8+.7+.6)/3 = .7; frequency ln4/ln11 = 1.386294/2.397895 = 0.578130;
    # diversity 3/5 = .6;
    # recency: last hit 03-17 12:00, 14 days -> 0.5; consolidation: days {10,11,14,17}:
    # 0.55*ln4/ln5 + 0.45*min(1, 7/7) = 0.55*0.861353 + 0.45 = 0.923744; no tags -> 0
    # total = .21 + .138751 + .09 + .075 + .092374 = 0.606125
    assert b.parts.relevance == pytest.approx(0.7)
    assert b.parts.frequency == pytest.approx(0.578130, abs=1e-6)
    assert b.parts.recency == pytest.approx(0.5)
    assert b.parts.consolidation == pytest.approx(0.923744, abs=1e-6)
    assert b.score == pytest.approx(0.606125, abs=1e-6)
    assert b.failed == ["score 0.606 < minScore 0.8"]

    c = rejected[m.C]
    # relevance .8; frequency ln11/ln11 = 1; diversity 1/5 = .2; recency 1 (hit at now);
    # consolidation: 11 days (03-21..31), span 10 -> 1; six tags -> 1
    # total = .24 + .24 + .03 + .15 + .10 + .06 = 0.82 -> passes the score, not the queries
    assert c.score == pytest.approx(0.82)
    assert c.failed == ["queries 1 < minUniqueQueries 3"]

    d = rejected[m.D]
    # relevance .9; frequency ln3/ln11 = 0.458157; diversity .4; recency 0.5^(2/14)
    # = 0.905724; consolidation days {26,27,29}: 0.55*ln3/ln5 + 0.45*3/7
    # = 0.55*0.682606 + 0.192857 = 0.568290; tags {ops/vpn.md} -> 1/6
    # total = .27 + .109958 + .06 + .135859 + .056829 + .01 = 0.642646
    assert d.score == pytest.approx(0.642646, abs=1e-6)
    assert d.failed == [
        "score 0.643 < minScore 0.8",
        "recalls 2 < minRecallCount 3",
        "queries 2 < minUniqueQueries 3",
    ]

    e = rejected[m.E]
    # everything strong, but the note is 39 days old (02-20 -> 03-31)
    # total = .285 + .194762 + .15 + .15 + .10 + .01 = 0.889762
    assert e.score == pytest.approx(0.889762, abs=1e-6)
    assert e.age_days == 39
    assert e.failed == ["note age 39 d > maxAgeDays 30"]


def test_deep_recovery_when_health_is_low(dreamer):
    result = dreamer.deep(m.NOW)
    # health: MEMORY.md has 2 entries -> 0.5*min(1, 2/20) = 0.05; 30 hits in the last
    # 30 days (A6 B3 C10 D2 E6 R1 M2), 2 of them in MEMORY.md -> 0.5*2/30 = 0.033333
    assert result.health == pytest.approx(0.083333, abs=1e-6)
    assert result.recovery_triggered  # 0.083 < triggerBelowHealth 0.35
    assert [p.candidate.text for p in result.recovered] == [m.R]
    r = result.recovered[0]
    # R written on 5 days {24,26,28,30,31}: 5 grounded signals (relevance 1, own query)
    # + 1 recall (.9). signals 6: relevance (0.9 + 5)/6 = 0.983333; frequency
    # ln7/ln11 = 0.811508; queries 6 -> 1; recency: the 03-31 note is 0 days old -> 1;
    # consolidation: 5 days, span 7 -> 0.55*ln5/ln5 + 0.45*7/7 = 1; tags {standup, 9:15}
    # -> 2/6. total = .295 + .194762 + .15 + .15 + .10 + .02 = 0.909762 >= 0.9
    assert r.parts.relevance == pytest.approx(0.983333, abs=1e-6)
    assert r.confidence == pytest.approx(0.909762, abs=1e-6)
    assert r.recovered and r.failed == []
    # Without recovery R scores .27 + .24*ln2/ln11 (.069376) + .03 + .15*0.5^(0.5/14)
    # (.146332) + .10 + .02 = 0.635708 and is rejected.
    dreamer.config = dataclasses.replace(
        dreamer.config,
        deep=DeepSettings(recovery=dataclasses.replace(DeepSettings().recovery, enabled=False)),
    )
    plain = dreamer.deep(m.NOW)
    assert plain.recovered == [] and not plain.recovery_triggered
    r_plain = {p.candidate.text: p for p in plain.rejected}[m.R]
    assert r_plain.score == pytest.approx(0.635708, abs=1e-6)
    # C with recovery: (8+1)/11 relevance -> .245455 + .24 + .06 + .15 + .10 + .06
    # = 0.855455 < 0.9: not recovered (checked by the recovered list above).


def test_deep_limit_and_thresholds(dreamer):
    dreamer.config = dataclasses.replace(dreamer.config, deep=DeepSettings(limit=0))
    result = dreamer.deep(m.NOW)
    assert result.proposed == [] and result.over_limit == 1
    # minUniqueQueries 1 lets C (0.82) through; D still fails minRecallCount.
    dreamer.config = dataclasses.replace(dreamer.config, deep=DeepSettings(min_unique_queries=1))
    texts = [p.candidate.text for p in dreamer.deep(m.NOW).proposed]
    assert texts == [m.F, m.C]  # 0.872917 > 0.82


# --------------------------------------------------------------------------- REM


def test_rem_themes_from_tag_cooccurrence(dreamer):
    result = dreamer.rem(m.NOW)
    # Material: MEMORY.md (2), daily notes 03-24..31 and the deep queue (F, R), identical
    # texts once: python, Biscuit, R, PG25, D, REL26, REL28, F, PG29, PG30, TLS, TLS2 = 12.
    assert result.entries == 12
    # (release, v2.4): both in REL26 and REL28 -> 2 / 2 = 1.0
    # (infra, postgres): both in F, PG29, PG30 (3); postgres also in PG25 -> 3/4 = 0.75
    # other pairs appear together once (< 2 entries).
    got = [(t.tags, round(t.strength, 6), t.support) for t in result.themes]
    assert got == [(("release", "v2.4"), 1.0, 2), (("infra", "postgres"), 0.75, 3)]
    dreamer.config = dataclasses.replace(dreamer.config, rem=RemSettings(min_pattern_strength=0.8))
    assert [t.tags for t in dreamer.rem(m.NOW).themes] == [("release", "v2.4")]
