"""Stdio: every request read before the client closed stdin gets its answer.

A client may send its requests and close its end of the pipe at once, as a shell
does with ``printf '…' | memdeck mcp``. The SDK ends the session when its read
stream ends and answers the calls still running with "Connection closed", so a
search sent last was lost. These two wrappers sit between the SDK's stdio
transport and the server: the read side notes each request's id and, at the end
of stdin, waits until every noted request has been answered (or cancelled by the
client, or ``EOF_ANSWER_S`` passed) before it lets the end through; the write side
crosses off each id as its response goes out.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

#: how long the end of stdin waits for the requests read before it
EOF_ANSWER_S = 30.0
#: how often the waiting end looks again
_POLL_S = 0.005

RequestId = int | str


class Unanswered:
    """Ids of the requests read and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[RequestId] = set()

    def read(self, item: SessionMessage | Exception) -> None:
        if not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self.ids.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):
            # a cancelled request gets no answer (the protocol's rule): stop waiting for it
            self.ids.discard((message.params or {}).get("requestId"))

    def sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.ids.discard(message.id)

    async def answered(self, within_s: float) -> None:
        with anyio.move_on_after(within_s):
            while self.ids:
                await anyio.sleep(_POLL_S)


class _Wrapper:
    """Forwards what it does not define to the SDK's stream (``last_context``…)."""

    def __init__(self, inner: Any, unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class ReadUntilAnswered(_Wrapper):
    """The server's read side: stdin's messages; its end once the requests read are
    answered. A line that is not JSON-RPC is answered with JSON-RPC's parse error
    (``id: null``), as the specification asks, instead of being dropped."""

    def __init__(self, inner: Any, unanswered: Unanswered, write: Any) -> None:
        super().__init__(inner, unanswered)
        self._write = write

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item: SessionMessage | Exception = await self._inner.receive()
            except anyio.EndOfStream:
                await self._unanswered.answered(EOF_ANSWER_S)
                raise
            if isinstance(item, Exception):
                await self._write.send(parse_error(item))
                continue
            self._unanswered.read(item)
            return item

    def __aiter__(self) -> ReadUntilAnswered:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class WriteNotingAnswers(_Wrapper):
    """The server's write side: each answer crosses its request off."""

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        self._unanswered.sent(item)


def parse_error(exc: Exception) -> SessionMessage:
    """JSON-RPC's answer to a line it cannot read (the reason cut to 200 characters:
    the line itself may be huge and is never echoed)."""
    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return SessionMessage(
        types.JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {why[:200]}"),
        )
    )


def answer_before_eof(read_stream: Any, write_stream: Any) -> tuple[Any, Any]:
    """The SDK's stdio streams, wrapped so that stdin's end waits for the answers."""
    unanswered = Unanswered()
    write = WriteNotingAnswers(write_stream, unanswered)
    return ReadUntilAnswered(read_stream, unanswered, write), write
