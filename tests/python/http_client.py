"""The official Python SDK's client (`mcp` on PyPI: `mcp.Client` over `streamable_http_client`)
through an mcp-sieve gateway over Streamable HTTP: list everything, call a tool; list a view (a
filter in the URL) and call a tool outside it; in a search-mode view find a tool with
`find_tools` and call it with `call_tool`; in a code-mode view run a program with `run_code`.

Usage: .venv/bin/python tests/python/http_client.py SPEC, where SPEC is JSON:
{"modes": ["legacy", "auto"], "url": ENDPOINT, "view": VIEW_URL, "search": SEARCH_VIEW_URL,
 "token": BEARER, "call": [NAME, ARGS], "outside": NAME, "query": TEXT,
 "searchCall": [NAME, ARGS], "code": CODE_VIEW_URL, "program": SOURCE} ("code" optional).
Each mode (the client's `mode`: "legacy" is the 2025-11-25 initialize handshake, "auto" probes
`server/discover` and speaks 2026-07-28 when offered) runs it all once. Prints one JSON line,
{MODE: what it saw}; tests/e2e/upstreams.test.mjs checks it.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def names(client):
    out, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor)
        out += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return sorted(out)


async def session(url, spec, mode, work):
    headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            await work(client)


async def run(spec, mode):
    seen = {}

    async def everything(c):
        seen["protocolVersion"] = c.protocol_version
        seen["listed"] = await names(c)
        name, args = spec["call"]
        r = await c.call_tool(name, args)
        seen["called"] = text_of(r)
        seen["calledError"] = bool(r.is_error)

    async def view(c):
        seen["viewListed"] = await names(c)
        try:
            r = await c.call_tool(spec["outside"], {})
            seen["outside"] = "answered: " + text_of(r)
        except MCPError as e:
            seen["outside"] = str(e)

    async def search(c):
        seen["searchListed"] = await names(c)
        r = await c.call_tool("find_tools", {"query": spec["query"], "limit": 5})
        seen["found"] = [t["name"] for t in (r.structured_content or {}).get("tools", [])]
        name, args = spec["searchCall"]
        r = await c.call_tool("call_tool", {"name": name, "arguments": args})
        seen["searchCalled"] = text_of(r)
        seen["searchCalledError"] = bool(r.is_error)

    async def code(c):
        seen["codeListed"] = await names(c)
        r = await c.call_tool("run_code", {"code": spec["program"]})
        seen["ran"] = {"isError": bool(r.is_error), "structured": r.structured_content, "meta": r.meta}

    await session(spec["url"], spec, mode, everything)
    await session(spec["view"], spec, mode, view)
    await session(spec["search"], spec, mode, search)
    if spec.get("code"):
        await session(spec["code"], spec, mode, code)
    return seen


async def main(spec):
    print(json.dumps({mode: await run(spec, mode) for mode in spec["modes"]}))


asyncio.run(main(json.loads(sys.argv[1])))
