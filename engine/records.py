"""The base of memdeck's typed result records: frozen dataclasses that print as JSON.

The engine hands its clients (CLI, TUI, agent tools) frozen dataclasses, so a
renamed field is an ``AttributeError`` at the reader instead of a silently
missing key. Each record still has to print as the JSON the CLI's ``--json``
and the agent tools have always produced; ``JsonRecord.to_json`` does that from
the fields themselves, so there is no second, hand-written list of keys to
drift:

* fields in declaration order (so the JSON keys keep their order);
* ``JSON_NAMES`` renames a field for the wire (``start_line`` → ``startLine``);
* ``OMIT_WHEN_NONE`` lists fields whose key is absent, not ``null``, when unset
  (the ``qmd`` block of a builtin engine's status, a result's ``citation``);
* ``JSON_HIDDEN`` lists fields that are never printed (state a record keeps for
  its own methods);
* nested records, tuples and mappings are converted recursively.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar


class JsonRecord:
    """Mixin for frozen dataclasses whose ``to_json()`` is derived from their fields."""

    JSON_NAMES: ClassVar[Mapping[str, str]] = {}
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()
    JSON_HIDDEN: ClassVar[frozenset[str]] = frozenset()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name in self.JSON_HIDDEN:
                continue
            value = getattr(self, f.name)
            if value is None and f.name in self.OMIT_WHEN_NONE:
                continue
            out[self.JSON_NAMES.get(f.name, f.name)] = jsonable(value)
        return out


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: records via ``to_json``, tuples as lists."""
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
