"""A small MCP server built with the official SDK, for the MCP adapter tests.

Run over stdio with ``python notes_server.py NOTES_FILE``; the tests also serve
:func:`build` over streamable HTTP in-process. Notes live in a JSON file so that the test can
count what really happened, whichever transport or process ran the tool.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel


class Confirmation(BaseModel):
    confirm: bool
    reason: str = ""


def build(notes_file: str) -> MCPServer:
    path = Path(notes_file)
    server = MCPServer("notes")

    def load() -> list[str]:
        return json.loads(path.read_text()) if path.exists() else []

    def save(notes: list[str]) -> None:
        path.write_text(json.dumps(notes))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def list_notes() -> str:
        """List every note."""
        return "\n".join(load()) or "(no notes)"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def look_up(url: str) -> str:
        """Read a web page (read-only, but the URL reaches the outside world)."""
        return f"nothing at {url}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def add_note(text: str) -> str:
        """Add a note."""
        save([*load(), text])
        return f"added note {len(load())}"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
    def delete_all() -> str:
        """Delete every note."""
        n = len(load())
        save([])
        return f"deleted {n} notes"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def clear_notes(ctx: Context) -> str:
        """Delete every note after asking the user to confirm."""
        n = len(load())
        answer = await ctx.elicit(f"Really delete {n} notes?", schema=Confirmation)
        if answer.action == "accept" and answer.data.confirm:
            save([])
            return f"deleted {n} notes ({answer.data.reason})"
        return f"kept {n} notes ({answer.action})"

    @server.tool()
    def archive(label: str) -> str:
        """Archive the notes under a label (no annotations: treated as destructive)."""
        if not label.strip():
            raise ValueError("label must not be blank")
        return f"archived as {label}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def crash(text: str) -> str:
        """Add a note, then the server process dies before answering."""
        save([*load(), text])
        sys.stdout.flush()
        os._exit(3)

    return server


if __name__ == "__main__":
    build(sys.argv[1]).run("stdio")
