"""Credentials in configured URLs and headers never reach a user's screen or the
index, even when a server echoes them back.

The loopback server answers every embedding request with an error whose body
repeats the request's headers and URL, as misconfigured proxies do. The base URL
carries ``user:password@``; the headers have names no built-in pattern knows.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer, Recorded, Reply, write_notes

URL_PASSWORD = "pa55-w0rd-in-url"
HEADER_SECRETS = {"X-Auth-Key": "xauth-secret-9731", "Ocp-Apim-Subscription-Key": "ocp-sub-4471"}


def echo(_i: int, rec: Recorded) -> Reply | None:
    """Fail (echoing headers) the requests that embed the changed note; others pass,
    so the dims probe at start succeeds and the failure lands in ``files.error``."""
    if "tea" not in json.dumps(rec.json):
        return None
    seen = dict(rec.headers)
    return Reply(400, {"error": {"message": f"rejected request {rec.path} with headers {seen}"}})


def test_url_credentials_and_header_values_are_masked_everywhere(
    state_dir: Path, workspace_dir: Path
) -> None:
    write_notes(workspace_dir)
    with ProviderServer(api_key=None) as server:
        host = server.url.removeprefix("http://")
        cfg = state_dir / "openclaw.json"
        remote = {
            "baseUrl": f"http://alice:{URL_PASSWORD}@{host}/v1",
            "apiKey": TEST_KEY,
            "headers": HEADER_SECRETS,
        }
        cfg.write_text(
            json.dumps(
                {
                    "agents": {
                        "defaults": {
                            "memorySearch": {
                                "provider": "openai",
                                "remote": remote,
                            }
                        }
                    }
                }
            )
        )
        env = cli_env(state_dir, FAST_ENV)
        args = ("--config", str(cfg), "-w", str(workspace_dir))
        first = run_cli("index", *args, env=env)  # a good answer: dims become known
        assert first.returncode == 0, first.stderr
        (workspace_dir / "MEMORY.md").write_text("# Memory\n\nDana now drinks tea.\n")
        server.faults = echo  # from now on the server echoes headers in its errors
        outputs = [
            run_cli("index", *args, env=env),
            run_cli("status", *args, env=env),
            run_cli("status", "--json", *args, env=env),
            run_cli("search", "flat white", "--json", *args, env=env),
        ]
        # the server really saw (and echoed) the secrets: the test can fail
        assert any(
            HEADER_SECRETS["X-Auth-Key"] == r.headers.get("x-auth-key") for r in server.requests
        )
    shown = "\n".join(r.stdout + r.stderr for r in outputs)
    assert "rejected request" in shown  # the echoed error is what the user sees ...
    for secret in (URL_PASSWORD, TEST_KEY, *HEADER_SECRETS.values()):
        assert secret not in shown, secret  # ... without any secret in it
    assert f"http://alice:***@{host}/v1" in shown
    index = next((state_dir / "memory").glob("*.sqlite"))
    with sqlite3.connect(index) as db:
        errors = " ".join(str(e) for (e,) in db.execute("select error from files"))
    assert "rejected request" in errors, (errors, shown)
    for secret in (URL_PASSWORD, TEST_KEY, *HEADER_SECRETS.values()):
        assert secret not in errors, secret
