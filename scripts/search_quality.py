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

Speed (`--speed`; scripts/search-quality.sh --speed first runs ours, `cargo bench --bench search`'s
p50 lines): the public catalog's tools repeated with numbered names to each size (`--sizes`,
default 5000,50000, as benches/search.rs), the bench's three queries (3, 4 and 21 words). Per
size each peer is built once: FastMCP's server gets every tool registered (its O(n) per-tool
version check skipped, see fastmcp_speed) and one untimed call that builds its index; plain BM25
builds its index. Then each query is called at most `--runs` times (21) and no more once `--budget`
seconds (40) have passed for that query and peer, so a size costs each peer at most about
3 x budget plus its setup (50,000 tools: 2–3 minutes for both peers on a loaded 2-core VM).
Prints p50 of wall and of process CPU time per call, the number of calls they are over, setup times, and the load average before and after.
"""

import argparse
import asyncio
import json
import math
import re
import os
import subprocess
import sys
import time
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


def ours(catalog, path, binary, queries=None, env=None):
    if queries is not None:  # only these queries (a file of them, so no other query runs)
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"queries": [{"query": q} for q in queries]}, f)
        path = f.name
    out = subprocess.run([binary, catalog, path, str(DEPTH)], check=True, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}).stdout
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


class PlainBM25:
    """Okapi BM25 over each tool's name and description, index built once."""

    def __init__(self, tools, k1=1.2, b=0.75):
        self.tools, self.k1, self.b = tools, k1, b
        self.docs = [words(t["name"]) + words(t.get("description") or "") for t in tools]
        self.tfs = [defaultdict(int) for _ in self.docs]
        self.df = defaultdict(int)
        self.post = defaultdict(list)
        for i, (tf, d) in enumerate(zip(self.tfs, self.docs)):
            for w in d:
                tf[w] += 1
            for w in set(d):
                self.df[w] += 1
                self.post[w].append(i)
        self.n, self.avg = len(self.docs), sum(map(len, self.docs)) / len(self.docs)

    def query(self, q):
        scores = defaultdict(float)
        for w in words(q):
            if w not in self.df:
                continue
            idf = math.log((self.n - self.df[w] + 0.5) / (self.df[w] + 0.5) + 1)
            for i in self.post[w]:
                f = self.tfs[i][w]
                scores[i] += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * len(self.docs[i]) / self.avg))
        order = sorted(scores, key=lambda i: (-scores[i], i))
        return [self.tools[i]["name"] for i in order[:DEPTH]]


def plain_bm25(tools, queries):
    index = PlainBM25(tools)
    return {q: index.query(q) for q in queries}


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


SPEED_QUERIES = ["create a branch", "delete the synthetic item",
                 "show me the logs of the failed CI job on the main branch so I can see why the build broke"]


def public_times(n):
    """The public catalog's tools repeated with numbered names up to n (as benches/search.rs)."""
    base = json.load(open("catalog/public-servers.json"))["tools"]
    out = []
    for i in range(n):
        t = dict(base[i % len(base)])
        if i >= len(base):
            t["name"] = f"{t['name']}_{i // len(base)}"
        out.append(t)
    return out


def p50(times):
    """The median of call times in ms (the upper one of an even count)."""
    return sorted(times)[len(times) // 2] * 1e3


def p50s(calls):
    """`p50 W ms (CPU C ms) over N calls` of [(wall s, process CPU s)]."""
    return f"p50 {p50([w for w, _ in calls]):.1f} ms (CPU {p50([c for _, c in calls]):.1f} ms) over {len(calls)} calls"


async def timed(call, runs, budget):
    """(wall, process CPU) seconds of up to `runs` awaited calls of `call()`, stopping after the call
    that passes `budget` wall seconds (so at least one call, and at most one beyond the budget).
    CPU time is the whole process's (the in-process FastMCP client and server share it), which the
    VM's other work inflates less than wall time."""
    times, begun = [], time.perf_counter()
    while len(times) < runs and (not times or time.perf_counter() - begun < budget):
        s, c = time.perf_counter(), time.process_time()
        await call()
        times.append((time.perf_counter() - s, time.process_time() - c))
    return times


async def fastmcp_speed(tools, runs, budget):
    """FastMCP's search_tools through an in-process client: registration and first call (which
    builds its index) in s, then {query: call times} (capped by `runs` and `budget`)."""
    from fastmcp import Client, FastMCP
    from fastmcp.server.transforms.search import BM25SearchTransform
    from fastmcp.tools.base import Tool, ToolResult

    class Listed(Tool):
        async def run(self, arguments):
            return ToolResult(content=[])

    server = FastMCP("catalog")
    # FastMCP 4.1.6's add_tool scans every registered component for a versioned/unversioned name
    # clash (LocalProvider._check_version_mixing), O(n) per tool, so registering 50,000 tools takes
    # tens of minutes. No tool here has a version or a repeated name, so that check cannot fail;
    # it is skipped while registering (everything else in add_tool runs) and restored after.
    assert all("version" not in t for t in tools) and len({t["name"] for t in tools}) == len(tools)
    provider = server._local_provider
    began = time.perf_counter()
    provider._check_version_mixing = lambda component: None
    try:
        for t in tools:
            server.add_tool(Listed(name=t["name"], description=t.get("description"), parameters=t.get("inputSchema") or {"type": "object"}))
    finally:
        del provider._check_version_mixing
    setup = {"register": time.perf_counter() - began}
    server.add_transform(BM25SearchTransform(max_results=5))
    out = {}
    async with Client(server) as client:
        began = time.perf_counter()
        await client.call_tool("search_tools", {"query": "warm up"})
        setup["first call"] = time.perf_counter() - began
        for q in SPEED_QUERIES:
            out[q] = await timed(lambda: client.call_tool("search_tools", {"query": q}), runs, budget)
    return setup, out


def speed(sizes, runs, budget):
    """Per size: build each peer once, then time each query's calls (at most `runs`, stopping once
    `budget` s have passed for that query and peer) and print p50 with the number of calls."""
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at start", flush=True)
    for n in sizes:
        tools = public_times(n)
        setup, f = asyncio.run(fastmcp_speed(tools, runs, budget))
        began = time.perf_counter()
        index = PlainBM25(tools)
        built = time.perf_counter() - began
        print(f"public x{n}: fastmcp-bm25 register {setup['register']:.1f} s, first call (builds its index) {setup['first call']:.1f} s; plain-bm25 index {built:.1f} s", flush=True)

        async def plain(q):
            index.query(q)

        for q in SPEED_QUERIES:
            p = asyncio.run(timed(lambda: plain(q), runs, budget))
            print(f"public x{n}: {len(q.split())}-word query: fastmcp-bm25 search_tools {p50s(f[q])}; "
                  f"plain-bm25 (Python, index built once) {p50s(p)}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at end", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", action="store_true", help="time FastMCP's search_tools and plain BM25 at 5,000 and 50,000 tools instead")
    ap.add_argument("--runs", type=int, default=21, help="--speed: at most this many calls per query, peer and size")
    ap.add_argument("--budget", type=float, default=40, help="--speed: stop a query's calls after this many seconds (per peer and size)")
    ap.add_argument("--sizes", default="5000,50000", help="--speed: catalog sizes, comma-separated")
    ap.add_argument("--ours", default="target/debug/examples/search_rank")
    ap.add_argument("--meaning", metavar="DIR", help="also rank with sentence vectors (issue 40): DIR holds "
                    "search_encode's <catalog file name>.vectors.json; adds ours+meaning (the built-in weight), "
                    "encoder alone (weight 1) and RRF k=60")
    ap.add_argument("--weights", help="with --meaning: also ours+meaning at each of these cosine weights (comma-separated)")
    ap.add_argument("--json")
    ap.add_argument("--misses", action="store_true", help="print our misses (tuning part only)")
    ap.add_argument("--tune-only", action="store_true", help="run the tuning parts only (held-out queries are not run at all)")
    ap.add_argument("--ours-only", action="store_true", help="run our ranker only (no FastMCP, no plain BM25)")
    args = ap.parse_args()
    if args.speed:
        speed([int(n) for n in args.sizes.split(",")], args.runs, args.budget)
        return
    results = {}
    pooled = defaultdict(list)
    for path in FILES + [EARLIER]:
        catalog, qs = labelled(path)
        if args.tune_only:
            qs = [x for x in qs if x[3] in ("tune", "earlier-tuned")]
        tools = json.load(open(catalog))["tools"]
        queries = [q for q, *_ in qs]
        rankers = {"ours": ours(catalog, path, args.ours, queries if args.tune_only else None)}
        if args.meaning:
            vec = {"SEARCH_VECTORS": os.path.join(args.meaning, os.path.basename(catalog) + ".vectors.json")}
            only = queries if args.tune_only else None
            rankers["ours+meaning"] = ours(catalog, path, args.ours, only, vec)
            rankers["encoder-alone"] = ours(catalog, path, args.ours, only, {**vec, "SEARCH_WEIGHT": "1"})
            rankers["rrf-k60"] = ours(catalog, path, args.ours, only, {**vec, "SEARCH_FUSION": "rrf:60"})
            for w in (args.weights.split(",") if args.weights else []):
                rankers[f"meaning-w{w}"] = ours(catalog, path, args.ours, only, {**vec, "SEARCH_WEIGHT": w})
        if not args.ours_only:
            rankers["fastmcp-bm25"] = asyncio.run(fastmcp_rank(tools, queries))
            rankers["plain-bm25"] = plain_bm25(tools, queries)
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
    print(f"{'set':<36} {'part':<16} {'kind':<10} {'ranker':<16} {'n':>4} {'top-1':>6} {'top-5':>6} {'MRR':>6}")
    for key in sorted(results, key=lambda k: (k.split("|")[0] != "both catalogs", k)):
        s = results[key]
        path, part, kind, name = key.split("|")
        print(f"{path:<36} {part:<16} {kind:<10} {name:<16} {s['n']:>4} {s['top1']:>6.3f} {s['top5']:>6.3f} {s['mrr']:>6.3f}")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
