"""``memdeck mcp``: serve the memory tools to an agent over MCP.

stdio by default (the client starts ``memdeck mcp`` itself); ``--http
[HOST:]PORT`` serves streamable HTTP on ``http://HOST:PORT/mcp`` (127.0.0.1
unless told otherwise). Diagnostics go to stderr: on stdio, stdout belongs to
the protocol.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

    from engine.mcp.calls import Tools

HELP = "serve memory_search/memory_get/memory_status to an agent over MCP (stdio or --http)"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("mcp", parents=[common], help=HELP, description=HELP)
    p.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(host 127.0.0.1 unless given; a non-loopback host needs a bearer token: "
        "$MEMDECK_MCP_TOKEN or mcp.token in memdeck's settings.json)",
    )
    p.add_argument(
        "--no-sync",
        action="store_true",
        help="do not run the background sync (another memdeck keeps the index fresh)",
    )


def mcp_command(args: argparse.Namespace) -> int:
    stop = _StopSignal()
    code = _serve(args, stop)
    if stop.abandon_threads:
        # stdio stopped by a signal: the SDK's reader thread is still blocked on the
        # client's stdin and would hold the interpreter's exit; everything that needs
        # closing was closed by ``_serve``'s cleanup (engine, sync, WAL, streams).
        sys.stderr.flush()
        os._exit(code)
    return code


def _serve(args: argparse.Namespace, stop: _StopSignal) -> int:
    from engine.cli.common import EXIT_OK, EXIT_RUNTIME, UsageError, open_engine
    from engine.mcp.http import HttpSetupError, parse_bind, require_token
    from engine.mcp.settings import load_mcp_settings

    settings = load_mcp_settings()  # a ConfigError here is a usage error (exit 1)
    bind = token = None
    if args.http is not None:
        try:
            bind = parse_bind(args.http)
            token = require_token(bind, settings)
        except HttpSetupError as exc:
            raise UsageError(str(exc)) from None
    engine = open_engine(args)
    service = None
    sock: socket.socket | None = None
    try:
        from engine.index.sync_service import SyncService
        from engine.index.vector_matrix import split_scans_beside_one_blas_thread
        from engine.mcp.calls import Tools
        from engine.mcp.server import build_server, sync_state_dict

        # no spinning BLAS thread beside the searches, and the vector scan on two cores
        split_scans_beside_one_blas_thread()

        if not args.no_sync:
            service = SyncService(engine)
            service.start()
        tools = Tools(
            engine,
            settings,
            sync_state=(lambda: sync_state_dict(service)) if service else None,
            on_write=(lambda: service.notify_change()) if service else None,
        )
        server = build_server(engine, tools)
        writes = "on" if settings.allow_append else "off"
        where = "stdio"
        if bind is not None:
            from engine.mcp.http import open_socket

            try:  # bound before the banner, so that it names the port really listened on
                sock = open_socket(bind)
            except HttpSetupError as exc:  # the port is taken, the host does not resolve
                raise UsageError(str(exc)) from None
            where = bind.url(sock.getsockname()[1])
        store = engine.store.info()  # the SQLite file, or PostgreSQL's DSN and namespace
        print(
            f"memdeck mcp: {engine.workspace.root} · index {store.location} "
            f"({store.version}) · memory_append {writes} · {where}",
            file=sys.stderr,
            flush=True,
        )
        try:
            if sock is None:
                _serve_stdio(server, tools, stop)
            else:
                _serve_http(server, bind, settings, token, stop, sock)
        except HttpSetupError as exc:  # the port is taken, the host does not resolve
            raise UsageError(str(exc)) from None
        except KeyboardInterrupt:
            stop.received = stop.received or signal.SIGINT
        # stopped by a signal: after the cleanup below, exit 128 + its number (143 for
        # SIGTERM, 130 for SIGINT), as a shell reports a process the signal ended
        return EXIT_OK if stop.received is None else 128 + int(stop.received)
    except UsageError:
        raise
    except Exception as exc:
        print(f"memdeck mcp: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    finally:
        if sock is not None:
            sock.close()  # uvicorn closed it already when it served
        if service is not None:
            service.stop()
        engine.close()
        print("memdeck mcp: stopped", file=sys.stderr, flush=True)


class _StopSignal:
    """The signal (SIGTERM, SIGINT) that stopped the server, if one did.

    A signal must end the serving, never the process: the engine is closed, the
    background sync stopped and the index's WAL checkpointed by ``mcp_command``'s
    cleanup, which a process killed by the signal's default action skips.
    """

    received: signal.Signals | None = None
    #: leave threads that cannot be stopped (stdio's reader) to ``os._exit``
    abandon_threads = False


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _serve_stdio(server: Any, tools: Tools, stop: _StopSignal) -> None:
    """Serve on stdin/stdout until the client closes stdin or a signal stops it.

    The SDK reads stdin in a worker thread that no cancellation can interrupt, so
    the protocol runs on its own thread and the main thread waits for it or for
    SIGTERM/SIGINT; after a signal, calls already running get a moment to finish
    and answer before ``mcp_command``'s cleanup closes the engine under them.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    from engine.mcp.answer_before_eof import answer_before_eof

    async def run() -> None:
        async with stdio_server() as streams:
            # a request read before stdin's end is answered before the session ends
            read_stream, write_stream = answer_before_eof(*streams)
            await server.run(read_stream, write_stream, server.create_initialization_options())

    if threading.current_thread() is not threading.main_thread():
        anyio.run(run)  # no signals to handle off the main thread
        return
    done = threading.Event()
    failed: list[BaseException] = []

    def serve() -> None:
        try:
            anyio.run(run)
        except BaseException as exc:  # re-raised on the main thread
            failed.append(exc)
        finally:
            done.set()

    def note(sig: int, frame: object) -> None:
        stop.received = signal.Signals(sig)
        done.set()

    previous = {sig: signal.signal(sig, note) for sig in STOP_SIGNALS}
    try:
        thread = threading.Thread(target=serve, name="memdeck mcp stdio", daemon=True)
        thread.start()
        while not done.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stop.received is not None:
        stop.abandon_threads = True
        tools.wait_idle(STDIO_GRACE_S)
        return
    if failed:
        raise failed[0]


#: seconds a signalled stdio server lets running tool calls finish
STDIO_GRACE_S = 2.0


def _serve_http(
    server: Any, bind: Any, settings: Any, token: str | None, stop: _StopSignal, sock: Any
) -> None:
    import logging

    import uvicorn

    from engine.mcp.http import BearerTokenGuard, HostHeaderGuard, security_settings

    app: Any = server.streamable_http_app(
        transport_security=security_settings(bind, settings), host=bind.host
    )
    if token:
        app = BearerTokenGuard(app, token)
    app = HostHeaderGuard(app)
    port = sock.getsockname()[1]
    print(f"memdeck mcp: listening on {bind.url(port)}", file=sys.stderr, flush=True)
    logging.getLogger("mcp").setLevel(logging.ERROR)  # refused requests are answered, not logged
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
    )
    http = uvicorn.Server(config)
    if threading.current_thread() is not threading.main_thread():
        http.run(sockets=[sock])
        return

    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then restores the handlers it
    # found and raises the signal again; with the default handlers that second
    # SIGTERM would kill the process before our cleanup. Ours only note it (and
    # stop a server that has not installed uvicorn's handlers yet).
    def note(sig: int, frame: object) -> None:
        stop.received = signal.Signals(sig)
        http.should_exit = True

    previous = {sig: signal.signal(sig, note) for sig in STOP_SIGNALS}
    try:
        http.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
