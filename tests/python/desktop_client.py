"""The official Python SDK's `stdio_client` launching `mcp-sieve stdio --mcp-config FILE` as a
desktop client does (tests/e2e/desktop-internet.test.mjs): once without search mode (list every
tool, call some), once with `--search` (list, `find_tools`, `call_tool`).

Usage: .venv/bin/python tests/python/desktop_client.py SPEC, where SPEC is JSON:
{"command": BIN, "args": [...], "searchArgs": [...], "env": {...}, "calls": [[NAME, ARGS], ...],
 "queries": [TEXT, ...], "searchCall": [NAME, ARGS]}. Prints one JSON line with what it saw.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tool_pages import all_tool_names


def text(result):
    """The first text of a call's result, or its error."""
    first = result.content[0].text if result.content else ""
    return f"error: {first}" if result.is_error else first


async def main(spec):
    seen = {}
    env = spec.get("env")
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=env)
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            seen["listed"] = await all_tool_names(s)
            seen["called"] = [text(await s.call_tool(name, args)) for name, args in spec["calls"]]
    params = StdioServerParameters(command=spec["command"], args=spec["searchArgs"], env=env)
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            seen["searchListed"] = sorted(t.name for t in (await s.list_tools()).tools)
            seen["found"] = []
            for query in spec["queries"]:
                r = await s.call_tool("find_tools", {"query": query, "limit": 10})
                seen["found"].append([t["name"] for t in (r.structured_content or {}).get("tools", [])])
            name, args = spec["searchCall"]
            seen["searchCalled"] = text(await s.call_tool("call_tool", {"name": name, "arguments": args}))
    print(json.dumps(seen))


asyncio.run(main(json.loads(sys.argv[1])))
