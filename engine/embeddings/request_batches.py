"""Grouping document texts into requests by estimated size (≤ 8000 bytes each).

Providers cap a request by tokens, not by item count; UTF-8 bytes are a cheap,
conservative stand-in (a token is rarely less than one byte). A text that is
larger than the budget on its own still goes out, alone in its request.
"""

from __future__ import annotations

from collections.abc import Sequence

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
