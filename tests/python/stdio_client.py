"""`mcp-sieve stdio` launched by the official Python SDK's `stdio_client` (as a desktop client
launches a server): initialize, list, call, call a tool outside the view, then search.

Usage: .venv/bin/python tests/python/stdio_client.py SPEC, where SPEC is JSON:
{"command": BIN, "args": [...], "env": {...}, "call": [NAME, ARGS], "outside": NAME,
 "searchArgs": [...], "query": TEXT}. Prints one JSON line with what it saw; the tests in
tests/e2e/stdio*.test.mjs check it.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from tool_pages import all_tool_names


async def main(spec):
    seen = {}
    # The SDK starts the server with a small default environment: variables it needs come in "env".
    env = spec.get("env")
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=env)
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            init = await s.initialize()
            seen["protocolVersion"] = init.protocol_version
            seen["listed"] = await all_tool_names(s)
            name, args = spec["call"]
            r = await s.call_tool(name, args)
            seen["called"] = r.content[0].text
            try:
                await s.call_tool(spec["outside"], {})
                seen["outside"] = "answered"
            except MCPError as e:
                seen["outside"] = str(e)
    params = StdioServerParameters(command=spec["command"], args=spec["searchArgs"], env=env)
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            seen["searchListed"] = sorted(t.name for t in (await s.list_tools()).tools)
            r = await s.call_tool("find_tools", {"query": spec["query"], "limit": 5})
            seen["found"] = [t["name"] for t in (r.structured_content or {}).get("tools", [])]
    print(json.dumps(seen))


asyncio.run(main(json.loads(sys.argv[1])))
