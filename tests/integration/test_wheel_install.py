"""memdeck as ``pip install <checkout>`` installs it: the real wheel in a fresh venv.

The wheel is built from a copy of the sources (no stale ``build/`` folder can leak
into it) with this environment's setuptools, offline, then installed without its
dependencies into a new venv whose only link to this environment is a ``.pth`` line
naming this environment's site-packages: the dependencies resolve from there, while
``engine`` and ``tui`` must come from the wheel (a ``.pth`` line adds a folder to
``sys.path`` without running the ``.pth`` files inside it, so the development
install's editable finder stays out). Everything then runs from a folder that is
not the checkout, as a user's shell would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.cli_process import REPO, cli_env

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

#: Starts the app the way the ``memdeck`` console script does (the launcher, the
#: CLI's ``tui`` command, the app's own theme loading), without a terminal: the
#: app is built but not run, and reports the theme it chose and those it knows.
APP_PROBE = """
import json, sys
import engine.cli.main as cli
import tui.app

cli.require_terminal = lambda alternative="": None

def report(engine):
    app = tui.app.MemdeckApp(engine)
    print(json.dumps({
        "module": tui.app.__file__,
        "theme": app.theme,
        "themes": sorted(app.available_themes),
        "problems": app.problems,
    }))
    engine.close()
    return 0

tui.app.run_app = report
from tui.launcher import main
raise SystemExit(main(sys.argv[1:]))
"""


def _copy_sources(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("engine", "tui"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    src, dist = base / "src", base / "dist"
    _copy_sources(src)
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--verbose", "--no-deps",
         "--no-build-isolation", "--no-index", "-w", str(dist), str(src)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # setuptools warns of nothing it will stop supporting (a license table would be)
    assert "deprecated" not in out.lower(), out
    (built,) = dist.glob("memdeck-*.whl")
    return built


def test_wheel_carries_the_themes_and_the_stylesheet(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for bundled in (
        "tui/theme_files/memdeck-dark.toml",
        "tui/theme_files/memdeck-light.toml",
        "tui/app.tcss",
    ):
        assert bundled in names
    metadata = (
        zipfile.ZipFile(wheel)
        .read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        .decode()
    )
    assert "License-Expression: MIT" in metadata


def test_installed_wheel_runs_from_another_folder_with_its_themes(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install",
         "--no-deps", "--no-index", "--quiet", str(wheel)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "memdeck-test-deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = cli_env(tmp_path / "state")
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    r = _run(["memdeck", "--help"], elsewhere, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: memdeck")

    demo = elsewhere / "demo"
    r = _run(["memdeck", "demo", str(demo), "--no-tui"], elsewhere, env)
    assert r.returncode == 0, r.stderr
    assert f"demo workspace: {demo} (created)" in r.stderr
    r = _run(["memdeck", "status", "--workspace", str(demo), "--json"], elsewhere, env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"] > 0

    # the library interface from the installed copy: docs/embedding.md's example
    page = (REPO / "docs" / "embedding.md").read_text(encoding="utf-8")
    example = page.split("## A complete example", 1)[1].split("```python\n", 1)[1]
    r = _run([str(python), "-c", example.split("```", 1)[0]], elsewhere, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("indexed 2 files\n") and r.stdout.endswith("SyncDone\n")

    r = _run([str(python), "-c", APP_PROBE, "tui", str(demo)], elsewhere, env)
    assert r.returncode == 0, r.stderr
    app = json.loads(r.stdout.strip().splitlines()[-1])
    assert Path(app["module"]).is_relative_to(env_dir), app["module"]
    assert app["theme"] == "memdeck-dark", app
    assert {"memdeck-dark", "memdeck-light"} <= set(app["themes"])
    assert app["problems"] == []
