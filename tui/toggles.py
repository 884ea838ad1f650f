"""The search pane's ranking toggles, as pure functions on ``SearchOptions``.

Every toggle returns new options; the pane re-ranks its cached ``Retrieval``
with ``engine.search.rank.rank`` so a toggle never re-queries the index. Kept apart
from the widget so the arithmetic (weight steps, cycling order) is tested alone.
"""

from __future__ import annotations

from engine.config.settings import FUSIONS, SEARCH_MODES
from engine.search import scoring
from engine.search.model import SearchOptions

MODES = SEARCH_MODES  # hybrid → FTS-only → vector-only
WEIGHT_STEP = 0.1


def _next(values: tuple[str, ...], current: str) -> str:
    try:
        return values[(values.index(current) + 1) % len(values)]
    except ValueError:
        return values[0]


def cycle_mode(options: SearchOptions) -> SearchOptions:
    """hybrid → FTS-only → vector-only → hybrid."""
    return options.with_(mode=_next(MODES, options.mode))


def cycle_fusion(options: SearchOptions) -> SearchOptions:
    """Through every fusion the engine offers, in ``engine.config.settings.FUSIONS`` order."""
    return options.with_(fusion=_next(FUSIONS, options.fusion))


def toggle_mmr(options: SearchOptions) -> SearchOptions:
    return options.with_(mmr_enabled=not options.mmr_enabled)


def toggle_decay(options: SearchOptions) -> SearchOptions:
    return options.with_(decay_enabled=not options.decay_enabled)


def shift_weights(options: SearchOptions, delta: float) -> SearchOptions:
    """Move ``delta`` of weight from text to vector (negative: the other way).

    The pair is first normalised to sum 1 (as the pipeline does), then stepped
    and rounded to the step so repeated presses land on 0.0, 0.1 … 1.0 exactly.
    """
    vw, _ = scoring.normalize_weights(options.vector_weight, options.text_weight)
    vw = round(min(1.0, max(0.0, vw + delta)) / WEIGHT_STEP) * WEIGHT_STEP
    vw = round(vw, 2)
    return options.with_(vector_weight=vw, text_weight=round(1.0 - vw, 2))


def describe(options: SearchOptions) -> dict[str, str]:
    """Short labels for the toggle bar."""
    fusion: str = options.fusion
    if fusion == "normalized":
        fusion = f"normalized·{options.normalization}"
    elif fusion == "rrf":
        fusion = f"rrf (k={options.rrf_k})"
    return {
        "mode": {"hybrid": "hybrid", "fts": "FTS-only", "vector": "vector-only"}.get(
            options.mode, options.mode
        ),
        "fusion": fusion,
        "weights": f"{options.vector_weight:.2f}/{options.text_weight:.2f}",
        "mmr": f"on λ={options.mmr_lambda:.2f}" if options.mmr_enabled else "off",
        "decay": f"on {options.half_life_days:g} d" if options.decay_enabled else "off",
    }
