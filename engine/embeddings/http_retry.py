"""One HTTP path for every remote embedding provider: timeouts, retries, redaction.

The policy: retry (3 times by default) on 429, 5xx, transport failures and bodies
that talk about rate limits; back off 500 ms doubling with ±20 % jitter, capped
at 8 s; a server's ``Retry-After`` / ``retry-after-ms`` wins over the schedule.
401/403/404 are configuration problems and fail at once with a clear message.

The API key must never reach a log, an exception or the status screen: every
message built here goes through ``Redactor``, which blanks the key and any
secret header value even when a server echoes them back.
"""

from __future__ import annotations

import base64
import email.utils
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httpx

from engine.embeddings.base import ProviderError

#: Body texts that mean "slow down" even when the status code does not say so.
RATE_LIMIT_TEXT = re.compile(
    r"rate[ _-]?limit|too many requests|resource[ _-]?exhausted|quota[ _-]?exceeded"
    r"|overloaded|throttl",
    re.IGNORECASE,
)
NO_RETRY_STATUS = {401: "unauthorized", 403: "forbidden", 404: "not found"}
SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|cookie", re.IGNORECASE)


MAX_BODY_ENV = "MEMDECK_MAX_RESPONSE_BYTES"


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. Tests shrink the delays through the ``MEMDECK_REMOTE_*`` env vars."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.2
    #: a Retry-After longer than this is not waited for: the call fails instead
    max_retry_after: float = 60.0
    timeout: float = 60.0
    #: an answer larger than this is refused unread (``$MEMDECK_MAX_RESPONSE_BYTES``):
    #: a batch of 100 texts at 3,072 dimensions is ~6 MB of JSON
    max_body: int = 64 * 1024 * 1024

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetryPolicy:
        """The documented defaults (docs/architecture.md "Embedding providers"),
        overridable for operators and fast tests."""
        d = cls()
        return cls(
            max_retries=_env_int(env, "MEMDECK_REMOTE_RETRIES", d.max_retries),
            base_delay=_env_float(env, "MEMDECK_REMOTE_BACKOFF_MS", d.base_delay * 1000) / 1000,
            max_delay=_env_float(env, "MEMDECK_REMOTE_BACKOFF_CAP_MS", d.max_delay * 1000) / 1000,
            jitter=d.jitter,
            max_retry_after=_env_float(env, "MEMDECK_REMOTE_MAX_RETRY_AFTER_S", d.max_retry_after),
            timeout=_env_float(env, "MEMDECK_REMOTE_TIMEOUT_S", d.timeout),
            max_body=_env_int(env, MAX_BODY_ENV, d.max_body),
        )

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``attempt`` (0-based): doubling, jittered, capped."""
        raw = min(self.max_delay, self.base_delay * (2**attempt))
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return float(max(0.0, min(self.max_delay, raw * (1 + spread))))


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    try:
        return max(0, int(env[name]))
    except (KeyError, ValueError):
        return default


def _env_float(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(env[name])
    except (KeyError, ValueError):
        return default
    return value if value >= 0 else default


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms`` (OpenAI), then
    ``Retry-After`` as seconds or an HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


#: ``scheme://user:password@host`` (or ``scheme://token@host``): the user info.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#@]*)@")


_AUTH_VALUE = re.compile(r"(?i)\b((?:basic|bearer|token|digest)\s+)[A-Za-z0-9+/=._~\-]{8,}")


def mask_url_credentials(text: str) -> str:
    """``http://user:pass@host`` → ``http://user:***@host``; a bare user part (often a
    token) becomes ``***``. Applied to every URL memdeck shows: status, errors."""

    def mask(m: re.Match[str]) -> str:
        user, sep, _secret = m.group(2).partition(":")
        return f"{m.group(1)}{user}:***@" if sep else f"{m.group(1)}***@"

    return _URL_USERINFO.sub(mask, text)


def url_secrets(url: str) -> list[str]:
    """The password (or token) inside a URL's user info, to blank wherever echoed."""
    m = _URL_USERINFO.search(url)
    if not m:
        return []
    user, sep, secret = m.group(2).partition(":")
    found = [secret, unquote(secret)] if sep else [user, unquote(user)]
    # httpx sends URL credentials as "Authorization: Basic base64(user:password)"
    basic = f"{unquote(user)}:{unquote(secret)}".encode()
    found.append(base64.b64encode(basic).decode())
    return [s for s in found if s]


class Redactor:
    """Blanks secrets (the key, every configured header's value, a URL's password)
    out of any text: error messages, status, the index's ``files.error`` column."""

    def __init__(self, secrets: Iterable[str | None]):
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        text = mask_url_credentials(text)
        # any credential in an Authorization value a server echoes back
        text = _AUTH_VALUE.sub(r"\1***", text)
        # keys passed in URLs (``?key=...``) by hand-written base URLs
        return re.sub(r"([?&](?:key|api_key|apikey|token)=)[^&\s]+", r"\1***", text)


def secret_header_values(headers: Mapping[str, str]) -> list[str]:
    """The values of every configured header, whatever its name: a server may echo
    any of them back (``X-Auth-Key``, ``Ocp-Apim-Subscription-Key``), and the user
    knows which of their headers are secret better than a name pattern does."""
    out = []
    for value in headers.values():
        out.append(value)
        if " " in value:  # "Bearer sk-..." → also the bare token
            out.append(value.split(" ", 1)[1])
    return out


@dataclass
class CallStats:
    """Counters a provider reports through ``EmbedProgress`` and ``describe()``."""

    requests: int = 0
    retries: int = 0
    last_error: str | None = None


RetryHook = Callable[[int, float, str], None]  # (retry number, delay seconds, why)


class BodyTooLarge(Exception):
    """An answer over the transport's body cap (``size``: bytes read when it stopped)."""

    def __init__(self, size: int):
        super().__init__(f"answer over the size cap ({size:,} bytes read)")
        self.size = size


class HttpTransport:
    """An ``httpx.Client`` plus the retry loop; one per provider, thread-safe."""

    def __init__(
        self,
        *,
        headers: Mapping[str, str],
        policy: RetryPolicy,
        redactor: Redactor,
        label: str,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.policy = policy
        self.redact = redactor
        self.label = label
        self.sleep = sleep
        self.stats = CallStats()
        self.rng = random.Random()
        self._headers = dict(headers)
        self._client_lock = threading.Lock()
        self.client = self._new_client()

    def _new_client(self) -> httpx.Client:
        return httpx.Client(
            headers=self._headers,
            timeout=httpx.Timeout(self.policy.timeout, connect=min(10.0, self.policy.timeout)),
            # never: a redirect to another host would carry a custom key header along
            follow_redirects=False,
        )

    def close(self) -> None:
        self.client.close()

    def _send(self, method: str, url: str, **kwargs: Any) -> tuple[httpx.Response, bytes]:
        """One request with an overall deadline of ``policy.timeout`` seconds.

        httpx's timeouts are per phase and a read timeout restarts with every
        byte, so a server that trickles one byte every 2 s is never timed out by
        them. The request runs in a worker thread; at the deadline its client is
        closed (which closes its sockets, ending the worker's read) and replaced,
        and the caller gets ``httpx.TimeoutException`` at once.
        """
        with self._client_lock:
            client = self.client
        box: dict[str, Any] = {}
        done = threading.Event()

        limit = self.policy.max_body

        def run() -> None:
            try:
                response = client.send(client.build_request(method, url, **kwargs), stream=True)
                try:
                    parts, size = [], 0
                    for part in response.iter_bytes():
                        size += len(part)
                        if size > limit:  # stop reading: a body this size is no answer
                            raise BodyTooLarge(size)
                        parts.append(part)
                finally:
                    response.close()
                box["response"], box["body"] = response, b"".join(parts)
            except BaseException as exc:  # handed to the caller below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="memdeck-http", daemon=True).start()
        if not done.wait(self.policy.timeout):
            with self._client_lock:
                if self.client is client:
                    self.client = self._new_client()
            threading.Thread(target=client.close, daemon=True).start()
            raise httpx.TimeoutException(f"no complete answer within {self.policy.timeout:g} s")
        if "error" in box:
            raise box["error"]
        return box["response"], box["body"]

    # -- the one request path -------------------------------------------------
    def request(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        on_retry: RetryHook | None = None,
        expect: str = "json",
    ) -> Any:
        """Send with retries; returns parsed JSON (``expect="json"``) or raw bytes."""
        attempt = 0
        shown = self.redact(url)
        while True:
            self.stats.requests += 1
            try:
                response, body = self._send(
                    method,
                    url,
                    json=json_body,
                    content=content,
                    files=files,
                    data=data,
                    headers=headers,
                )
            except BodyTooLarge as exc:
                raise self._error(
                    f"{self.label}: {shown} sent more than {self.policy.max_body:,} bytes"
                    f" (stopped at {exc.size:,}); no embedding answer is that large:"
                    " check baseUrl/model"
                    f" (the cap is ${MAX_BODY_ENV})",
                    status=None,
                    retryable=False,
                ) from None
            except httpx.TimeoutException:
                why = f"{self.label}: no answer from {shown} within {self.policy.timeout:g} s"
                attempt = self._retry_or_raise(attempt, why, None, on_retry, status=None)
                continue
            except httpx.TransportError as exc:
                why = f"{self.label}: cannot reach {shown}: {self.redact(str(exc)) or type(exc)}"
                attempt = self._retry_or_raise(attempt, why, None, on_retry, status=None)
                continue
            status = response.status_code
            if status in NO_RETRY_STATUS:
                hint = " (check the API key)" if status in (401, 403) else " (check baseUrl/model)"
                raise self._error(
                    f"{self.label}: HTTP {status} {NO_RETRY_STATUS[status]} from {shown}{hint}: "
                    f"{self._excerpt(body)}",
                    status=status,
                    retryable=False,
                )
            if 300 <= status < 400:
                where = self.redact(response.headers.get("location", "?"))
                raise self._error(
                    f"{self.label}: {shown} redirects (HTTP {status}) to {where}; "
                    "set the base URL to the final address",
                    status=status,
                    retryable=False,
                )
            text = body.decode("utf-8", errors="replace")
            if status == 429 or status >= 500 or (status >= 400 and RATE_LIMIT_TEXT.search(text)):
                why = f"{self.label}: HTTP {status} from {shown}: {self._excerpt(body)}"
                wait = parse_retry_after(response.headers)
                attempt = self._retry_or_raise(attempt, why, wait, on_retry, status=status)
                continue
            if status >= 400:
                raise self._error(
                    f"{self.label}: HTTP {status} from {shown}: {self._excerpt(body)}",
                    status=status,
                    retryable=False,
                )
            if expect == "bytes":
                self.stats.last_error = None
                return body
            try:
                payload = json.loads(text)
            except ValueError:
                raise self._error(
                    f"{self.label}: {shown} answered HTTP {status} with invalid JSON: "
                    f"{self._excerpt(body)}",
                    status=status,
                    retryable=False,
                ) from None
            err = payload.get("error") if isinstance(payload, dict) else None
            if err and RATE_LIMIT_TEXT.search(json.dumps(err)):
                why = f"{self.label}: {shown} reported a rate limit: {self._excerpt(body)}"
                attempt = self._retry_or_raise(attempt, why, None, on_retry, status=status)
                continue
            self.stats.last_error = None
            return payload

    def _retry_or_raise(
        self,
        attempt: int,
        why: str,
        retry_after: float | None,
        on_retry: RetryHook | None,
        *,
        status: int | None,
    ) -> int:
        if attempt >= self.policy.max_retries:
            raise self._error(
                f"{why} (gave up after {attempt + 1} attempts)", status=status, retryable=True
            )
        if retry_after is not None and retry_after > self.policy.max_retry_after:
            raise self._error(
                f"{why} (server asks to wait {retry_after:.0f} s; not waiting longer than "
                f"{self.policy.max_retry_after:.0f} s)",
                status=status,
                retryable=True,
            )
        delay = retry_after if retry_after is not None else self.policy.backoff(attempt, self.rng)
        self.stats.retries += 1
        self.stats.last_error = why
        if on_retry is not None:
            on_retry(attempt + 1, delay, why)
        if delay > 0:
            self.sleep(delay)
        return attempt + 1

    def _excerpt(self, body: bytes, limit: int = 300) -> str:
        text = " ".join(body.decode("utf-8", errors="replace").split())
        text = self.redact(text)
        return text if len(text) <= limit else text[:limit] + "…"

    def _error(self, message: str, *, status: int | None, retryable: bool) -> ProviderError:
        message = self.redact(message)
        self.stats.last_error = message
        return ProviderError(message, retryable=retryable, status=status)
