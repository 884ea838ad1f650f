"""Dreaming: promoting short-term memory (daily logs, recalled notes) into MEMORY.md.

Three phases, each a pure module with numbers documented in its docstring —
``light`` (stage and dedupe recent candidates), ``deep`` (score, gate, propose)
and ``rem`` (themes from tag co-occurrence) — plus ``promotion`` (the reviewed
write into MEMORY.md), ``reports`` (DREAMS.md), ``schedule`` (cron) and
``service.Dreamer``, which gathers the material from a workspace and runs them.
"""

from engine.memory.dreaming.config import DreamingSettings, load_dreaming_settings
from engine.memory.dreaming.service import Dreamer, RunReport, proposal_dict

__all__ = ["Dreamer", "DreamingSettings", "RunReport", "load_dreaming_settings", "proposal_dict"]
