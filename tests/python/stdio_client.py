"""`mcp-sieve stdio` launched by the official Python SDK's `stdio_client` (as a desktop client
launches a server): initialize, list through a view given as flags, search, call.

Usage: .venv/bin/python tests/python/stdio_client.py BIN CATALOG. Prints one JSON line with what
it saw; tests/e2e/stdio-python.test.mjs checks it.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

async def main(bin_path, catalog):
    seen = {}
    params = StdioServerParameters(command=bin_path, args=["stdio", "--catalog", catalog, "--groups", "utilities"])
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            init = await s.initialize()
            seen["protocolVersion"] = init.protocol_version
            seen["listed"] = sorted(t.name for t in (await s.list_tools()).tools)
            r = await s.call_tool("add", {"a": 2, "b": 40})
            seen["add"] = r.content[0].text
            try:
                await s.call_tool("list_events", {})
                seen["outside"] = "answered"
            except MCPError as e:
                seen["outside"] = str(e)
    params = StdioServerParameters(command=bin_path, args=["stdio", "--catalog", catalog, "--search"])
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            seen["searchListed"] = sorted(t.name for t in (await s.list_tools()).tools)
            r = await s.call_tool("find_tools", {"query": "send an email", "limit": 3})
            seen["found"] = [t["name"] for t in (r.structured_content or {}).get("tools", [])]
    print(json.dumps(seen))

asyncio.run(main(sys.argv[1], sys.argv[2]))
