"""A small FastMCP 4 server with tagged tools, the kind a user writes in Python: a notebook of
notes served over Streamable HTTP at http://127.0.0.1:PORT/mcp. The upstream tests
(tests/e2e/upstreams.test.mjs) start it beside the other servers behind one mcp-sieve endpoint;
its tags reach mcp-sieve as `_meta.fastmcp.tags`.

Usage: .venv/bin/python tests/python/fastmcp_server.py PORT
"""

import sys

from fastmcp import FastMCP

mcp = FastMCP("notes")
NOTES = {"welcome": "Notes kept by a FastMCP server."}


@mcp.tool(tags={"read"})
def list_notes() -> list[str]:
    """List the titles of all notes."""
    return sorted(NOTES)


@mcp.tool(tags={"read"})
def read_note(title: str) -> str:
    """Read the text of one note by its title."""
    return NOTES.get(title, f"no note titled {title!r}")


@mcp.tool(tags={"read", "search"})
def search_notes(query: str) -> list[str]:
    """Search notes for a word and answer the titles of those that contain it."""
    return sorted(t for t, body in NOTES.items() if query.lower() in (t + " " + body).lower())


@mcp.tool(tags={"write"})
def add_note(title: str, text: str) -> str:
    """Add a note (or replace the note with that title)."""
    NOTES[title] = text
    return f"saved {title!r} ({len(NOTES)} notes)"


@mcp.tool(tags={"write", "destructive"})
def delete_note(title: str) -> str:
    """Delete a note by its title."""
    return f"deleted {title!r}" if NOTES.pop(title, None) is not None else f"no note titled {title!r}"


@mcp.tool
def word_count(text: str) -> int:
    """Count the words of a text (a tool without tags)."""
    return len(text.split())


@mcp.prompt(tags={"read"})
def summarize_notes() -> str:
    """Ask for a summary of every note."""
    return "Summarize these notes:\n" + "\n".join(f"- {t}: {b}" for t, b in sorted(NOTES.items()))


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False, log_level="warning")
