"""Grouping document texts into requests by estimated size (≤ 8000 bytes each).

Providers cap a request by tokens, not by item count; UTF-8 bytes are a cheap,
conservative stand-in (a token is rarely less than one byte). A text that is
larger than the budget on its own still goes out, alone in its request.

With unit vectors on, a chunk's units go in the chunk's own request
(:func:`pack_units`): the requests are the chunk-only requests, each carrying
about twice the bytes, within what the provider accepts per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

MAX_REQUEST_BYTES = 8000


def estimate_bytes(text: str) -> int:
    return len(text.encode("utf-8", errors="replace"))


def split_by_bytes(
    texts: Sequence[str], max_bytes: int = MAX_REQUEST_BYTES, max_items: int = 128
) -> list[range]:
    """Consecutive index ranges whose summed size stays within ``max_bytes``."""
    groups: list[range] = []
    start, size = 0, 0
    for i, text in enumerate(texts):
        cost = estimate_bytes(text)
        if i > start and (size + cost > max_bytes or i - start >= max_items):
            groups.append(range(start, i))
            start, size = i, 0
        size += cost
    if start < len(texts):
        groups.append(range(start, len(texts)))
    return groups


class RequestLimits(NamedTuple):
    """What one request of a provider may carry: inputs and estimated bytes (a
    conservative stand-in for its tokens, as above)."""

    max_inputs: int
    max_bytes: int


#: one input of a packed request: (group, item within the group)
Slot = tuple[int, int]


def pack_units(
    groups: Sequence[Sequence[str]], limits: RequestLimits, lead_bytes: int = MAX_REQUEST_BYTES
) -> list[list[Slot]]:
    """Requests for ``groups`` of texts, each a chunk followed by its units' texts.

    Consecutive groups share a request while their chunks' bytes stay within
    ``lead_bytes``, the budget of a chunk-only request, so the units ride in the
    requests the chunks would need anyway; a request also stays within the
    provider's ``limits``. A group that cannot fit one request is split over as
    many as it needs, in order.
    """
    requests: list[list[Slot]] = []
    current: list[Slot] = []
    lead = size = 0
    for g, items in enumerate(groups):
        costs = [estimate_bytes(text) for text in items]
        if current and (
            lead + costs[0] > lead_bytes
            or len(current) + len(items) > limits.max_inputs
            or size + sum(costs) > limits.max_bytes
        ):
            requests.append(current)
            current, lead, size = [], 0, 0
        lead += costs[0]
        for k, cost in enumerate(costs):
            if current and (len(current) >= limits.max_inputs or size + cost > limits.max_bytes):
                requests.append(current)
                current, lead, size = [], 0, 0
            current.append((g, k))
            size += cost
    if current:
        requests.append(current)
    return requests
