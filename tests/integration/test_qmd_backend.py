"""The QMD backend against the real qmd 2.8.3 that scripts/install_qmd.sh installs.

Every test here runs the real ``qmd`` binary (Node 22 + @tobilu/qmd) in the
agent's own qmd home under a temporary state dir: collections, ``update``,
``search --json``, and — with memdeck's local MiniLM GGUF — ``embed`` and
vector search, all offline. They skip only when that install is absent.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config.loader import load_settings
from engine.core import Engine
from engine.qmd.collections import parse_collection_list
from engine.qmd.runner import PROJECT_LAUNCHER
from engine.tools import memory_get, memory_search

QMD_BIN = Path(os.environ.get("MEMDECK_QMD") or PROJECT_LAUNCHER)
requires_qmd = pytest.mark.skipif(
    not os.access(QMD_BIN, os.X_OK),
    reason=f"qmd is not installed at {QMD_BIN}: run scripts/install_qmd.sh "
    "(scripts/setup.sh runs it)",
)
pytestmark = requires_qmd

FILES = {
    "MEMORY.md": (
        "# Long-term memory\n"
        "\n"
        "## Infrastructure\n"
        "The production cluster runs Kubernetes on Hetzner.\n"
        "Postgres listens on port 5433 behind pgbouncer.\n"
        "\n"
        "## Preferences\n"
        "Ana prefers espresso and short stand-ups.\n"
    ),
    "memory/2026-03-14.md": (
        "# 2026-03-14\n\n- Budget review with Alice: the quarterly budget is 40k EUR.\n"
    ),
    "memory/projects/zebra.md": (
        "# Zebra migration\n\nStep one: freeze writes.\nStep two: copy the zebra tables.\n"
    ),
    **{
        f"memory/garden/bed-{i}.md": f"# Bed {i}\n\nTomatoes and basil grow in bed {i}.\n"
        for i in range(8)
    },
}
NOTES = {
    "Quokka Expedition.md": "# Expedition\n\nPack sunscreen for the quokka expedition.\n",
    "sub/ferry.md": "# Ferry\n\nThe ferry to Rottnest leaves at nine.\n",
}


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


class World:
    """A workspace, notes outside it, a state dir, and engines configured for qmd."""

    def __init__(self, root: Path):
        self.root = root
        self.state = root / "state"
        self.ws = root / "ws"
        self.notes = root / "notes"
        self.config = self.state / "openclaw.json"
        self.engines: list[Engine] = []
        self.state.mkdir(parents=True, exist_ok=True)
        write_tree(self.ws, FILES)
        write_tree(self.notes, NOTES)

    @property
    def env(self) -> dict[str, str]:
        return {
            "OPENCLAW_STATE_DIR": str(self.state),
            "HOME": str(self.root / "home"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }

    def engine(self, qmd: dict[str, Any] | None = None, *, sync: bool = True) -> Engine:
        """An FTS-only engine with ``memory.backend = "qmd"`` (boot refresh off by default).

        ``sync`` builds the builtin index first, so a fallback answer is instant.
        """
        # a generous search budget: a loaded CI machine must not turn a search into the
        # builtin fallback these tests do not ask about (4 s is the default)
        base = {
            "command": str(QMD_BIN),
            "update": {"onBoot": False},
            "limits": {"timeoutMs": 30000},
        }
        block = merge(base, qmd or {})
        # ws is the agent's workspace: its qmd home is the agent's own (another folder
        # gets one of its own, Settings.folder_tag)
        doc = {
            "agents": {"defaults": {"workspace": str(self.ws)}},
            "memory": {"backend": "qmd", "qmd": block},
        }
        self.config.write_text(json.dumps(doc), encoding="utf-8")
        settings = load_settings(config_path=self.config, workspace=self.ws, env=self.env)
        engine = Engine(settings, provider=None, env=self.env)
        self.engines.append(engine)
        if sync:
            engine.sync()
        return engine

    def close(self) -> None:
        while self.engines:
            self.engines.pop().close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("qmd"))
    yield w
    w.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()


def qmd_collections(engine: Engine) -> list[str]:
    assert engine.qmd is not None
    run = engine.qmd.runner.run(["collection", "list"], timeout_s=30)
    return sorted(item.name for item in parse_collection_list(run.stdout))


def test_search_results_in_the_memory_search_shape(world: World) -> None:
    engine = world.engine()
    out = memory_search(engine, "Postgres port pgbouncer")
    assert out["backend"] == "qmd" and out["provider"] == "qmd" and out["mode"] == "search"
    assert "backendFallback" not in out
    top = out["results"][0]
    assert top["path"] == "MEMORY.md" and top["collection"] == "memory-root"
    assert top["source"] == "memory"
    assert 0 < top["score"] <= 1
    # the range comes from qmd's @@ header and is exactly the text shown
    got = memory_get(engine, top["path"], top["startLine"], top["endLine"] - top["startLine"] + 1)
    assert "Postgres listens on port 5433" in got["text"]
    body, footer = top["snippet"].split("\n\nSource: ")
    assert body == got["text"].split("\n\n[More of this file follows")[0]  # minus the notice
    assert footer == top["citation"] == f"MEMORY.md#L{top['startLine']}-L{top['endLine']}"
    # daily logs keep their workspace path too
    out = memory_search(engine, "quarterly budget Alice")
    assert out["results"][0]["path"] == "memory/2026-03-14.md"
    assert out["results"][0]["collection"] == "memory-dir"
    assert memory_search(engine, "   ")["results"] == []
    assert memory_search(engine, "xylophonequartz")["results"] == []


def test_outside_paths_are_qmd_collection_paths_and_memory_get_reads_them(world: World) -> None:
    engine = world.engine({"paths": [{"name": "trips", "path": str(world.notes)}]})
    out = memory_search(engine, "quokka sunscreen")
    top = out["results"][0]
    assert top["path"] == "qmd/trips/Quokka Expedition.md"
    got = memory_get(engine, top["path"])
    assert got["path"] == "qmd/trips/Quokka Expedition.md"
    assert got["text"] == NOTES["Quokka Expedition.md"].removesuffix("\n")  # no phantom line
    assert memory_get(engine, "qmd/trips/sub/ferry.md", 3, 1)["text"] == (
        "The ferry to Rottnest leaves at nine."
    )
    (world.root / "secret.md").write_text("top secret\n", encoding="utf-8")
    (world.notes / "escape.md").symlink_to(world.root / "secret.md")
    for bad, why in [
        ("qmd/trips/../secret.md", "'..'"),
        ("qmd/nope/x.md", "no qmd collection 'nope'"),
        ("qmd/trips/notes.txt", ".md"),
        ("qmd/trips/escape.md", "symlink"),
        ("qmd/trips", "qmd/<collection>/<path>"),
    ]:
        refused = memory_get(engine, bad)
        assert refused["text"] == "" and why in refused["error"], bad
    missing = memory_get(engine, "qmd/trips/never.md")
    assert "no such memory file" in missing["error"]


def test_collections_are_reconciled_with_the_config(fresh: World) -> None:
    other = fresh.root / "other"
    write_tree(other, {"a.md": "# A\n\nalpha notes\n"})
    first = fresh.engine({"paths": [{"name": "trips", "path": str(fresh.notes)}]})
    assert memory_search(first, "ferry Rottnest")["results"]
    assert qmd_collections(first) == ["memory-alt", "memory-dir", "memory-root", "trips"]
    # a stray collection someone added by hand
    first.qmd.runner.run(  # type: ignore[union-attr]
        ["collection", "add", str(other), "--name", "stray", "--mask", "**/*.md"], timeout_s=30
    )
    first.close()

    changed = {
        "includeDefaultMemory": False,
        "paths": [
            {"name": "trips", "path": str(fresh.notes), "pattern": "sub/*.md"},
            {"name": "other", "path": str(other)},
        ],
    }
    second = fresh.engine(changed)
    second.qmd.ensure_collections()  # type: ignore[union-attr]
    report = second.qmd.reconcile_report  # type: ignore[union-attr]
    assert report is not None
    assert sorted(report.removed) == ["memory-alt", "memory-dir", "memory-root", "stray", "trips"]
    assert sorted(report.added) == ["other", "trips"]
    assert qmd_collections(second) == ["other", "trips"]
    # the changed pattern took effect: only sub/*.md is in "trips" now
    assert memory_search(second, "quokka sunscreen")["results"] == []
    assert memory_search(second, "ferry Rottnest")["results"][0]["path"] == "qmd/trips/sub/ferry.md"
    second.close()

    third = fresh.engine(changed)  # same config again: nothing to do
    third.qmd.ensure_collections()  # type: ignore[union-attr]
    report = third.qmd.reconcile_report  # type: ignore[union-attr]
    assert report is not None and (report.added, report.removed) == ([], [])
    assert sorted(report.kept) == ["other", "trips"]


def test_scope_denies_groups_and_allows_direct_chats(world: World) -> None:
    engine = world.engine()
    direct = memory_search(engine, "espresso stand-ups", session_key="agent:main:main")
    assert direct["results"][0]["path"] == "MEMORY.md" and "denied" not in direct
    group = memory_search(engine, "espresso stand-ups", session_key="agent:main:telegram:group:42")
    assert group["results"] == [] and group["denied"] is True
    assert "chatType group" in group["scope"] and group["backend"] == "qmd"
    engine.close()

    engine = world.engine(
        {
            "scope": {
                "default": "deny",
                "rules": [
                    {"action": "allow", "match": {"keyPrefix": "telegram:group:42"}},
                    {"action": "deny", "match": {"chatType": "direct"}},
                ],
            }
        }
    )
    allowed = memory_search(engine, "espresso", session_key="agent:main:telegram:group:42")
    assert allowed["results"][0]["path"] == "MEMORY.md"
    assert memory_search(engine, "espresso", session_key="agent:main:main")["denied"] is True
    other_group = memory_search(engine, "espresso", session_key="agent:main:telegram:group:7")
    assert other_group["results"] == [] and "default deny" in other_group["scope"]


def test_limits(world: World) -> None:
    engine = world.engine(
        {"limits": {"maxResults": 3, "maxSnippetChars": 12, "maxInjectedChars": 30}}
    )
    out = memory_search(engine, "tomatoes basil bed", max_results=10)
    assert len(out["results"]) == 3  # capped by limits.maxResults, not by the caller's 10
    bodies = [r["snippet"].split("\n\nSource: ")[0] for r in out["results"]]
    assert [len(b) for b in bodies] == [12, 12, 6]  # 12 + 12 + what is left of 30
    assert all(r["path"].startswith("memory/garden/bed-") for r in out["results"])
    assert len(memory_search(engine, "tomatoes basil bed", max_results=2)["results"]) == 2
    assert memory_search(engine, "tomatoes basil bed", min_score=1.01)["results"] == []


def test_changes_are_indexed_after_the_debounce_and_on_the_interval(fresh: World) -> None:
    engine = fresh.engine({"update": {"debounceMs": 300, "interval": "2s"}})
    assert memory_search(engine, "narwhal")["results"] == []
    (fresh.ws / "memory" / "sea.md").write_text("# Sea\n\nA narwhal was spotted.\n", "utf-8")
    engine.mark_dirty()  # what the sync service's watcher does on a file event
    assert _eventually(lambda: memory_search(engine, "narwhal")["results"])
    # qmd's index answers as soon as ``qmd update`` has written it, a moment before the
    # maintenance thread records the step: wait for the record, then read it
    qmd = engine.qmd
    assert qmd is not None
    assert _eventually(lambda: qmd.last_update is not None, timeout=5.0)
    assert qmd.last_update is not None and qmd.last_update.ok, qmd.last_update
    # nothing tells the backend about this one: the 2 s interval update finds it
    (fresh.ws / "MEMORY.md").write_text(FILES["MEMORY.md"] + "The walrus is grumpy.\n", "utf-8")
    assert _eventually(lambda: memory_search(engine, "walrus grumpy")["results"])


def test_boot_refresh_waits_when_asked(fresh: World) -> None:
    engine = fresh.engine({"update": {"onBoot": True, "waitForBootSync": True}}, sync=False)
    engine.sync()  # starts qmd: the boot refresh runs before sync returns
    st = engine.status().qmd
    assert st.started and st.reconciled
    assert st.last_update.ok is True and st.last_update.detail == "boot"
    assert st.last_embed is None  # no local model in this state dir: nothing to embed with


def test_sessions_are_exported_and_searchable(fresh: World) -> None:
    transcripts = fresh.state / "agents" / "main" / "sessions"
    transcripts.mkdir(parents=True)
    key = "sk-" + "live" * 6
    lines = [
        {"type": "message", "message": {"role": "user", "content": f"use key {key} please"}},
        {"type": "message", "message": {"role": "assistant", "content": "Booked the gondola."}},
    ]
    (transcripts / "chat-1.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines), encoding="utf-8"
    )
    engine = fresh.engine({"sessions": {"enabled": True, "retentionDays": 30}})
    out = memory_search(engine, "gondola booked")
    top = out["results"][0]
    assert top["path"] == "qmd/sessions/chat-1.md" and top["source"] == "sessions"
    text = memory_get(engine, top["path"])["text"]
    assert "Assistant: Booked the gondola." in text
    assert key not in text and "[REDACTED]" in text
    assert memory_search(engine, key)["results"] == []
    st = engine.status().qmd
    assert st.sessions_export.written == 1
    exported = fresh.state / "agents" / "main" / "qmd" / "sessions" / "chat-1.md"
    assert exported.is_file()


def test_status_reports_backend_and_collections(world: World) -> None:
    engine = world.engine()
    memory_search(engine, "Hetzner")
    st = engine.status()
    assert st.backend == "qmd" and st.fallback is None and st.fallback_reason is None
    q = st.qmd
    assert q.healthy is True and q.resolved_command == str(QMD_BIN)
    assert [c.name for c in q.collections] == ["memory-root", "memory-alt", "memory-dir"]
    assert q.searches == 1 and q.fallbacks == 0


def test_cli_backend_flags_and_side_by_side_comparison(world: World, monkeypatch, capsys) -> None:
    from engine.cli.main import main

    world.engine()  # writes the qmd config
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    common = ["--config", str(world.config), "--workspace", str(world.ws), "--json"]

    assert main(["search", "Zebra tables", "--backend", "qmd", *common]) == 0
    qmd = json.loads(capsys.readouterr().out)
    assert qmd["backend"] == "qmd"
    assert qmd["results"][0]["path"] == "memory/projects/zebra.md"

    assert main(["search", "Zebra tables", "--backend", "builtin", *common]) == 0
    builtin = json.loads(capsys.readouterr().out)
    assert builtin["backend"] == "builtin" and "backendFallback" not in builtin
    assert builtin["provider"] == "none"
    assert builtin["results"][0]["path"] == "memory/projects/zebra.md"

    assert main(["search", "--compare", "Zebra tables", *common]) == 0
    both = json.loads(capsys.readouterr().out)
    assert both["qmd"]["mode"] == "search" and both["builtin"]["mode"] == "fts"
    assert both["qmd"]["results"][0]["path"] == both["builtin"]["results"][0]["path"]

    assert main(["search", "--compare", "Zebra tables", *common[:-1]]) == 0
    text = capsys.readouterr().out
    header = text.splitlines()[1]
    assert "qmd search" in header and "builtin fts" in header
    assert text.splitlines()[2].count("memory/projects/zebra.md") == 2


def test_cli_index_refreshes_qmd_and_status_names_it(fresh: World, monkeypatch, capsys) -> None:
    from engine.cli.main import main

    fresh.engine().close()  # writes the qmd config and the builtin index
    for key, value in fresh.env.items():
        monkeypatch.setenv(key, value)
    common = ["--config", str(fresh.config), "--workspace", str(fresh.ws)]
    (fresh.ws / "memory" / "owl.md").write_text("# Owl\n\nThe snowy owl hunts at dusk.\n")
    assert main(["index", *common]) == 0
    assert "1 files indexed" in capsys.readouterr().out
    # qmd's own index has the new file although nothing searched through memdeck yet
    probe = fresh.engine(sync=False)
    run = probe.qmd.runner.run(["search", "--json", "--", "snowy owl"], timeout_s=30)  # type: ignore[union-attr]
    assert '"qmd://memory-dir/memory/owl.md"' in run.stdout
    assert main(["status", *common]) == 0
    text = capsys.readouterr().out
    assert f"backend     qmd ({QMD_BIN}, search)" in text
    assert "qmd colls   memory-root, memory-alt, memory-dir" in text


@pytest.mark.slow
@pytest.mark.model
def test_vector_search_offline_with_memdecks_local_model(fresh: World, minilm_gguf: Path) -> None:
    engine = fresh.engine(
        {
            "searchMode": "vsearch",
            "update": {"onBoot": True, "waitForBootSync": True},
            "limits": {"timeoutMs": 60000},
        },
        sync=False,
    )
    assert engine.qmd is not None
    engine.qmd.embed_model = minilm_gguf  # what a machine after scripts/setup.sh finds itself
    engine.sync()
    st = engine.status().qmd
    assert st.last_embed.ok is True, st.last_embed
    yml = (fresh.state / "agents/main/qmd/xdg-config/qmd/index.yml").read_text("utf-8")
    assert f"embed: {minilm_gguf.resolve()}" in yml
    # no word of the query occurs in the file it should find
    out = memory_search(engine, "which database server and which TCP socket")
    assert out["backend"] == "qmd" and out["mode"] == "vsearch"
    assert out["results"][0]["path"] == "MEMORY.md"


def _eventually(check, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.3)
    return False


def test_the_sync_services_watcher_and_schedule_keep_qmd_current(fresh: World) -> None:
    """One watcher for both indexes: a note added to a qmd collection folder outside
    the workspace reaches qmd through the sync service's watch plan, the engine's
    ``mark_dirty`` and qmd's debounce, with no watcher thread of qmd's own."""
    from engine.index.sync_service import SyncService

    engine = fresh.engine(
        {
            "paths": [{"name": "trips", "path": str(fresh.notes)}],
            "update": {"debounceMs": 300, "interval": "1h"},
            "limits": {"timeoutMs": 30000},  # a loaded machine must not turn this into a fallback
        }
    )
    assert engine.qmd is not None
    assert memory_search(engine, "platypus")["results"] == []
    service = SyncService(engine)
    service.start()
    try:
        assert service.wait_watching(10)
        plan = service._plan()
        assert fresh.notes in plan.dirs and fresh.notes / "sub" in plan.dirs
        assert fresh.notes in plan.trees
        assert service.wait_idle(60)  # the start-up sync is done and changed nothing
        assert engine.qmd.last_update is None  # nothing has refreshed qmd yet
        (fresh.notes / "sub" / "platypus.md").write_text(
            "# Creek\n\nA platypus surfaced at dawn.\n", encoding="utf-8"
        )
        qmd = engine.qmd

        def updated_for_the_change() -> bool:
            step = qmd.last_update
            return step is not None and step.ok and step.detail == "change"

        # the interval is an hour and boot refresh is off: only the watcher's change can
        # have caused this update
        assert _eventually(updated_for_the_change, timeout=90)
        hit = memory_search(engine, "platypus dawn")
        assert hit["backend"] == "qmd"
        assert hit["results"][0]["path"] == "qmd/trips/sub/platypus.md"
        assert engine.qmd.last_update is not None and engine.qmd.last_update.detail == "change"
        names = {t.name for t in threading.enumerate()}
        assert "qmd-scheduler" in names and not any("qmd-watch" in n for n in names)
    finally:
        service.stop()
