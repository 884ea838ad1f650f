"""Symlink-swap race against sync + memory_get (README "Robustness").

Usage: python -m tests.bench.bench_symlink_race [SECONDS]   (default 60)
"""

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from engine.config.loader import load_settings
from engine.core import Engine
from engine.tools import memory_get

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
root = Path(tempfile.mkdtemp(prefix="memdeck-race-"))
ws = root / "ws"
(ws / "memory").mkdir(parents=True)
(root / "state").mkdir()
SECRET = b"OUTSIDEZEBRA private text that must never be indexed"
out = root / "secret.md"
out.write_bytes(SECRET)
target = ws / "memory" / "race-x.md"
target.write_bytes((b"insidealpha note" + b" " * 100)[: len(SECRET)])
mt = target.stat().st_mtime
env = {"OPENCLAW_STATE_DIR": str(root / "state"), "HOME": str(root / "state")}
e = Engine(load_settings(workspace=ws, env=env), provider=None, env=env)
e.sync()
stop = threading.Event()
swaps = [0]


def swap():
    while not stop.is_set():
        link = target.with_name(".l")
        f = target.with_name(".f")
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(out, link)
        os.replace(link, target)
        f.write_bytes((b"insidealpha note" + b" " * 100)[: len(SECRET)])
        os.utime(f, (mt, mt))
        os.replace(f, target)
        swaps[0] += 1


t = threading.Thread(target=swap, daemon=True)
t.start()
syncs = gets = leaks = 0
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    e.sync()
    syncs += 1
    if any("OUTSIDEZEBRA" in str(r[0]) for r in e.store.db.execute("select text from chunks")):
        leaks += 1
    a = memory_get(e, "memory/race-x.md")
    gets += 1
    if "OUTSIDEZEBRA" in a.get("text", ""):
        leaks += 1
stop.set()
t.join()
e.sync()
final = any("OUTSIDEZEBRA" in str(r[0]) for r in e.store.db.execute("select text from chunks"))
print(
    json.dumps(
        {
            "seconds": SECONDS,
            "swaps": swaps[0],
            "syncs": syncs,
            "gets": gets,
            "leaks": leaks,
            "leak_after": final,
        }
    )
)
e.close()
shutil.rmtree(root, ignore_errors=True)
