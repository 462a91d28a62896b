#!/usr/bin/env python3
"""Search quality, side by side, in one run on the same tools and queries.

For each labelled queries file (tests/search/*.json) and its catalog:
  - ours: search mode's `find_tools` (the Rust example `search_rank`, through the protocol);
  - FastMCP 4's `BM25SearchTransform`: a FastMCP server in this process serving the catalog's
    tools (their name, description and inputSchema), asked through an in-process FastMCP
    `Client` with its `search_tools` tool (max_results 10);
  - plain BM25 (Okapi, k1 1.2, b 0.75) over each tool's name (split on _ - . and camelCase)
    and description.
Prints top-1, top-5 and MRR (over the top 10) per ranker, per catalog and part (`tune`,
`heldOut`), and the parts pooled over catalogs; `--json FILE` also writes them.

Run from the repository root: scripts/search-quality.sh (builds the example first).
"""

import argparse
import asyncio
import json
import math
import re
import subprocess
import sys
from collections import defaultdict

FILES = [
    "tests/search/public-servers.json",
    "tests/search/saas-servers.json",
]
EARLIER = "tests/search/queries.json"  # an earlier round's set, over catalog/public-servers.json
DEPTH = 10


def labelled(path):
    """(query, expect, kind, part) of a queries file; the earlier format's sets become parts."""
    doc = json.load(open(path))
    if path == EARLIER:
        out = []
        for key, part in (("queries", "earlier-tuned"), ("heldOut", "earlier-heldOut")):
            out += [(q["query"], q["expect"], "?", part) for q in doc[key]]
        return "catalog/public-servers.json", out
    return doc["catalog"], [(q["query"], q["expect"], q["kind"], q["part"]) for q in doc["queries"]]


def ours(catalog, path, binary):
    out = subprocess.run([binary, catalog, path, str(DEPTH)], check=True, capture_output=True, text=True).stdout
    return {r["query"]: r["ranked"] for r in map(json.loads, out.splitlines())}


async def fastmcp_rank(tools, queries):
    from fastmcp import Client, FastMCP
    from fastmcp.server.transforms.search import BM25SearchTransform
    from fastmcp.tools.base import Tool, ToolResult

    class Listed(Tool):
        """A tool as a catalog lists it (searching never runs it)."""

        async def run(self, arguments):
            return ToolResult(content=[])

    server = FastMCP("catalog")
    for t in tools:
        server.add_tool(Listed(name=t["name"], description=t.get("description"), parameters=t.get("inputSchema") or {"type": "object"}))
    server.add_transform(BM25SearchTransform(max_results=DEPTH))
    answers = {}
    async with Client(server) as client:
        listed = [t.name for t in await client.list_tools()]
        assert "search_tools" in listed, listed
        for q in queries:
            r = await client.call_tool("search_tools", {"query": q})
            data = r.structured_content
            if isinstance(data, dict) and "result" in data:
                data = data["result"]
            if isinstance(data, str):
                data = json.loads(data)
            answers[q] = [t["name"] for t in data or []]
    return answers


def words(text):
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def plain_bm25(tools, queries, k1=1.2, b=0.75):
    docs = [words(t["name"]) + words(t.get("description") or "") for t in tools]
    tfs = [defaultdict(int) for _ in docs]
    df = defaultdict(int)
    for tf, d in zip(tfs, docs):
        for w in d:
            tf[w] += 1
        for w in set(d):
            df[w] += 1
    n, avg = len(docs), sum(map(len, docs)) / len(docs)
    answers = {}
    for q in queries:
        scores = [0.0] * n
        for w in words(q):
            if w not in df:
                continue
            idf = math.log((n - df[w] + 0.5) / (df[w] + 0.5) + 1)
            for i, tf in enumerate(tfs):
                f = tf.get(w, 0)
                if f:
                    scores[i] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(docs[i]) / avg))
        order = sorted((i for i in range(n) if scores[i] > 0), key=lambda i: (-scores[i], i))
        answers[q] = [tools[i]["name"] for i in order[:DEPTH]]
    return answers


def score(rows):
    """top-1, top-5, MRR@10 and the count of `rows` = [(ranked, expect)]."""
    ranks = []
    for ranked, expect in rows:
        r = next((i + 1 for i, name in enumerate(ranked[:DEPTH]) if name in expect), None)
        ranks.append(r)
    n = len(rows)
    return {
        "n": n,
        "top1": sum(r == 1 for r in ranks) / n,
        "top5": sum(r is not None and r <= 5 for r in ranks) / n,
        "mrr": sum(1 / r for r in ranks if r) / n,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", default="target/debug/examples/search_rank")
    ap.add_argument("--json")
    ap.add_argument("--misses", action="store_true", help="print our misses (tuning part only)")
    args = ap.parse_args()
    results = {}
    pooled = defaultdict(list)
    for path in FILES + [EARLIER]:
        catalog, qs = labelled(path)
        tools = json.load(open(catalog))["tools"]
        queries = [q for q, *_ in qs]
        rankers = {
            "ours": ours(catalog, path, args.ours),
            "fastmcp-bm25": asyncio.run(fastmcp_rank(tools, queries)),
            "plain-bm25": plain_bm25(tools, queries),
        }
        parts = sorted({p for *_, p in qs})
        for part in parts:
            for kind in ("all", "paraphrase"):
                sel = [x for x in qs if x[3] == part and (kind == "all" or x[2] == kind)]
                if not sel:
                    continue
                for name, ans in rankers.items():
                    rows = [(ans[q], e) for q, e, *_ in sel]
                    results[f"{path}|{part}|{kind}|{name}"] = score(rows)
                    if path != EARLIER:
                        pooled[(part, kind, name)] += rows
        if args.misses:
            for q, e, k, p in qs:
                if p in ("tune", "earlier-tuned") and rankers["ours"][q][:1] != [] and rankers["ours"][q][0] not in e:
                    print(f"  miss [{k}] {q!r}: {rankers['ours'][q][:5]} expected {e}", file=sys.stderr)
    for (part, kind, name), rows in pooled.items():
        results[f"both catalogs|{part}|{kind}|{name}"] = score(rows)
    print(f"{'set':<36} {'part':<16} {'kind':<10} {'ranker':<13} {'n':>4} {'top-1':>6} {'top-5':>6} {'MRR':>6}")
    for key in sorted(results, key=lambda k: (k.split("|")[0] != "both catalogs", k)):
        s = results[key]
        path, part, kind, name = key.split("|")
        print(f"{path:<36} {part:<16} {kind:<10} {name:<13} {s['n']:>4} {s['top1']:>6.3f} {s['top5']:>6.3f} {s['mrr']:>6.3f}")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
