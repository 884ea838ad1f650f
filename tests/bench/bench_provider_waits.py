"""index/search/status against a trickling and a hanging loopback provider (README
"Robustness"). Usage: python -m tests.bench.bench_provider_waits
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.provider_servers import TEST_KEY, ProviderServer, Reply, write_notes

root = Path(tempfile.mkdtemp(prefix="memdeck-waits-"))
(root / "ws").mkdir(parents=True)
(root / "state").mkdir()
write_notes(root / "ws")
base = {
    "OPENCLAW_STATE_DIR": str(root / "state"),
    "HOME": str(root / "state"),
    "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    "PATH": "/usr/bin:/bin",
    "MEMDECK_REMOTE_TIMEOUT_S": "5",
}


def run(*a):
    t = time.time()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            *a,
            "--config",
            str(root / "state/openclaw.json"),
            "-w",
            str(root / "ws"),
        ],
        capture_output=True,
        text=True,
        env=base,
        timeout=600,
    )
    return p.returncode, round(time.time() - t, 1)


for mode in ("trickle", "hang"):
    shutil.rmtree(root / "state" / "memory", ignore_errors=True)
    with ProviderServer(api_key=TEST_KEY) as server:
        (root / "state/openclaw.json").write_text(
            json.dumps(
                {
                    "agents": {
                        "defaults": {
                            "memorySearch": {
                                "provider": "openai",
                                "remote": {"baseUrl": server.url + "/v1", "apiKey": TEST_KEY},
                            }
                        }
                    }
                }
            )
        )
        server.faults = (
            (lambda i, r: dataclasses.replace(server._route(r), trickle_s=2.0))
            if mode == "trickle"
            else (lambda i, r: Reply(hang=True))
        )
        res = {c: run(*c.split()) for c in ("index", "search flat", "status")}
        server.faults = None
        shutil.rmtree(root / "state" / "memory", ignore_errors=True)
        run("index")
        server.faults = (
            (lambda i, r: dataclasses.replace(server._route(r), trickle_s=2.0))
            if mode == "trickle"
            else (lambda i, r: Reply(hang=True))
        )
        res["search after a good index"] = run("search", "flat white")
        print(mode, res, flush=True)
