"""The MCP server: the SDK's low-level ``Server`` over one long-lived engine.

One engine per process (index opened and embedding model loaded once) with the
background ``SyncService`` keeping the index fresh (watcher, schedules) for as
long as the server runs. Tool calls run on worker threads so the event loop
keeps serving other requests (and other HTTP clients) while a search runs; a
call whose client went away is abandoned, never waited for. Every failure
inside a call becomes an MCP tool error (``isError``), so a bad call or a
broken index never takes the server down.

Resources: ``MEMORY.md`` (and ``memory.md``) and each daily log, as
``memory://<workspace-relative path>``, read with the same path rules as
``memory_get``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from engine import __version__
from engine.core import Engine
from engine.mcp.calls import CallContext, ToolFailure, Tools
from engine.tools import open_memory_file
from engine.workspace.files import MAX_INDEX_BYTES
from engine.workspace.get_answer import MemoryGetAnswer
from engine.workspace.safe_open import FileTooLarge

RESOURCE_SCHEME = "memory://"
INSTRUCTIONS = (
    "memdeck serves the user's long-term Markdown memory. Call memory_search before "
    "answering questions about the user, their projects, past decisions or anything "
    "discussed in earlier sessions; then memory_get to read around a hit. Cite the "
    "path and lines you used."
)


def client_name(ctx: ServerRequestContext[Any]) -> str:
    """The calling client's name from its ``clientInfo`` ("unknown" when it sent none)."""
    params = ctx.session.client_params
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return str(name) if name else "unknown"


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def build_server(engine: Engine, tools: Tools) -> Server[Any]:
    """The low-level server with memdeck's handlers (tools and resources)."""

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    input_schema=dict(spec.input_schema),
                    annotations=types.ToolAnnotations(
                        read_only_hint=spec.read_only,
                        destructive_hint=False,
                        idempotent_hint=spec.read_only,
                        open_world_hint=False,
                    ),
                )
                for spec in tools.specs
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        call = CallContext(client=client_name(ctx))
        try:
            result = await anyio.to_thread.run_sync(
                tools.call, params.name, params.arguments, call, abandon_on_cancel=True
            )
        except ToolFailure as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        return types.CallToolResult(
            content=[types.TextContent(text=_json(result))], structured_content=result
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: Any
    ) -> types.ListResourcesResult:
        files = await anyio.to_thread.run_sync(engine.workspace.list_files)
        resources = []
        roots = [f for f in files if f.kind == "memory"]
        daily = sorted((f for f in files if f.kind == "daily"), key=lambda f: f.rel, reverse=True)
        for f in roots + daily:
            what = "Curated long-term memory" if f.kind == "memory" else "Daily log"
            resources.append(
                types.Resource(
                    uri=RESOURCE_SCHEME + f.rel,
                    name=f.rel,
                    title=f.rel,
                    description=f"{what} ({f.rel})",
                    mime_type="text/markdown",
                    size=f.size,
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        ctx: ServerRequestContext[Any], params: Any
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=RESOURCE_SCHEME + "memory/{date}.md",
                    name="daily-log",
                    title="Daily log",
                    description="The daily log of one day; date is YYYY-MM-DD.",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = await anyio.to_thread.run_sync(_read_resource, engine, uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    return Server(
        "memdeck",
        version=__version__,
        title="memdeck memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _read_resource(engine: Engine, uri: str) -> str:
    """The whole text of a memory file, refused as ``memory_get`` refuses it (a path
    outside memory, a hard link, a FIFO, a folder, a binary file) and over the
    indexing size limit: each refusal an MCP error naming the rule, never a crash."""
    from mcp.shared.exceptions import MCPError

    if not uri.startswith(RESOURCE_SCHEME):
        raise MCPError(
            types.INVALID_PARAMS, f"{uri}: memdeck resources are {RESOURCE_SCHEME}<path>"
        )
    rel = uri[len(RESOURCE_SCHEME) :]
    opened = open_memory_file(engine, rel)
    if isinstance(opened, MemoryGetAnswer):
        raise MCPError(types.INVALID_PARAMS, opened.error or f"{rel}: no such memory file")
    _shown, fh = opened
    with fh:
        try:
            data = fh.read_all(MAX_INDEX_BYTES, "a resource (read it in pages with memory_get)")
        except (FileTooLarge, OSError) as exc:
            raise MCPError(types.INVALID_PARAMS, f"{rel}: {exc}") from None
    return data.decode("utf-8", errors="replace")


def sync_state_dict(service: Any) -> dict[str, Any]:
    """The sync service's state, JSON-able, for ``memory_status``."""
    st = dataclasses.asdict(service.state)
    done = st.pop("last_done", None)
    st["last_sync"] = (
        {k: done[k] for k in ("reason", "full", "files_indexed", "duration", "at") if k in done}
        if done
        else None
    )
    return st
