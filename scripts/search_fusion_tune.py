#!/usr/bin/env python3
"""How find_tools' lexical scores and the sentence vectors are fused (issue 40): fusion forms and
weights measured on the TUNING part only, from the real pipeline's numbers, in plain Python.

Inputs, both from the real pipeline: the lexical index's best 50 per query with scores
(examples/search_rank with SEARCH_RANK_DIRECT=1) and the tools' and queries' sentence vectors of
native/examples/search_encode (the files scripts/search-quality.sh --meaning writes into
target/search-vectors, or --vectors DIR). Only `part: "tune"` queries of tests/search/*-servers.json
and the earlier set's `queries` are run unless --held-out is given (for reporting a form chosen
before, or --why / --bounds: the misses of one form and what any fusion could reach, to read
causes, not to choose). No numpy needed. docs/src/search.md "Meaning" has the results.
  cargo build -q --features testing --example search_rank
  python3 scripts/search_fusion_tune.py [--vectors DIR[,DIR2 --mix mean|sum|max]] [--held-out]
      [--forms weighted:0.7,lex-rank:0.7:5,...] [--why FORM] [--bounds FORM]
Forms (w = the cosine's share): weighted:w (find_tools' own, hybrid::fuse), cos-over-top:w,
minmax:w, cos-gap:w, lex-sqrt:w, lex-rank:w:k, zscore:w, gate:w:t, reserve:w:r, rrf:k.
Prints per form: pooled tuning part (both catalogs) top-1 / top-5 / MRR@10, tuning paraphrases
top-1 / top-5, per catalog top-1 / top-5, and the earlier set's top-1 / top-5.
"""
import argparse, json, math, os, subprocess, tempfile

FILES = ["tests/search/public-servers.json", "tests/search/saas-servers.json"]
EARLIER = "tests/search/queries.json"
RANK = "target/debug/examples/search_rank"
POOL = 50


def labelled(path, held_out):
    doc = json.load(open(path))
    if path == EARLIER:
        key = "heldOut" if held_out else "queries"
        return "catalog/public-servers.json", [(q["query"], q["expect"], "?") for q in doc[key]]
    part = "heldOut" if held_out else "tune"
    return doc["catalog"], [(q["query"], q["expect"], q["kind"]) for q in doc["queries"] if q["part"] == part]


def lexical(catalog, queries):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"queries": [{"query": q} for q in queries]}, f)
    out = subprocess.run([RANK, catalog, f.name, str(POOL)], check=True, capture_output=True, text=True,
                         env={**os.environ, "SEARCH_RANK_DIRECT": "1"}).stdout
    os.unlink(f.name)
    res = {}
    for r in map(json.loads, out.splitlines()):
        res[r["query"]] = [(s.rsplit(" ", 1)[0], float(s.rsplit(" ", 1)[1])) for s in r["scores"]]
    return res


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


class Case:
    """One query: its lexical best 50 (name, score) and every tool's cosine."""

    def __init__(self, query, expect, kind, lex, cos):
        self.query, self.expect, self.kind, self.lex, self.cos = query, expect, kind, lex, cos
        self.by_cos = sorted(cos.items(), key=lambda x: -x[1])[:POOL]
        self.pool = list(dict.fromkeys([n for n, _ in lex] + [n for n, _ in self.by_cos]))


def fused(case, form):
    """The best 10 (names, best first) of one fusion form over the pool."""
    return ranking(case, form)[:10]


def ranking(case, form):
    """The whole pool ranked (names, best first) by one fusion form."""
    kind, w = form[0], form[1]
    lex = dict(case.lex)
    top = case.lex[0][1] if case.lex else 0.0
    pool = case.pool
    cos = case.cos
    if kind == "weighted":  # today's: w cos + (1 - w) lex / top
        s = {n: w * cos[n] + (1 - w) * (lex.get(n, 0.0) / top if top > 0 else 0.0) for n in pool}
    elif kind == "cos-over-top":  # the cosine over the pool's best cosine
        ct = case.by_cos[0][1]
        s = {n: w * cos[n] / ct + (1 - w) * (lex.get(n, 0.0) / top if top > 0 else 0.0) for n in pool}
    elif kind == "minmax":  # both min-max over the pool
        cs = [cos[n] for n in pool]
        lo, hi = min(cs), max(cs)
        ls = [lex.get(n, 0.0) for n in pool]
        llo, lhi = min(ls), max(ls)
        s = {n: w * (cos[n] - lo) / ((hi - lo) or 1) + (1 - w) * (lex.get(n, 0.0) - llo) / ((lhi - llo) or 1)
             for n in pool}
    elif kind == "cos-gap":  # cosine relative to the cosine's best: cos - cos_top (<= 0), lex / top
        ct = case.by_cos[0][1]
        s = {n: w * (cos[n] - ct) + (1 - w) * (lex.get(n, 0.0) / top if top > 0 else 0.0) for n in pool}
    elif kind == "lex-sqrt":  # lexical share compressed: sqrt(lex / top)
        s = {n: w * cos[n] + (1 - w) * (math.sqrt(lex.get(n, 0.0) / top) if top > 0 else 0.0) for n in pool}
    elif kind == "lex-rank":  # lexical as a rank: 1 / (1 + rank / k)
        k = form[2]
        rank = {n: r for r, (n, _) in enumerate(case.lex)}
        s = {n: w * cos[n] + (1 - w) * (1.0 / (1 + rank[n] / k) if n in rank else 0.0) for n in pool}
    elif kind == "zscore":  # both z-scored over the pool (a tool outside the lexical best 50: 0)
        def z(xs):
            m = sum(xs.values()) / len(xs)
            sd = math.sqrt(sum((x - m) ** 2 for x in xs.values()) / len(xs)) or 1
            return {n: (x - m) / sd for n, x in xs.items()}
        zc, zl = z({n: cos[n] for n in pool}), z({n: lex.get(n, 0.0) for n in pool})
        s = {n: w * zc[n] + (1 - w) * zl[n] for n in pool}
    elif kind == "gate":  # the cosine, plus the lexical share only where it is near the top (>= form[2])
        th = form[2]
        s = {n: w * cos[n] + (1 - w) * (lex.get(n, 0.0) / top if top > 0 and lex.get(n, 0.0) >= th * top else 0.0)
             for n in pool}
    elif kind == "reserve":  # weighted at w, then each signal's best form[2] kept in the top 5
        order = ranking(case, ("weighted", w))
        r = int(form[2])
        kept = list(dict.fromkeys([n for n, _ in case.lex[:r]] + [n for n, _ in case.by_cos[:r]]))
        top5 = kept + [n for n in order if n not in kept][: max(0, 5 - len(kept))]
        top5.sort(key=order.index)
        return top5 + [n for n in order if n not in top5]
    elif kind == "rrf":
        k = w
        lr = {n: r for r, (n, _) in enumerate(case.lex)}
        cr = {n: r for r, (n, _) in enumerate(case.by_cos)}
        s = {n: (1 / (k + lr[n] + 1) if n in lr else 0) + (1 / (k + cr[n] + 1) if n in cr else 0) for n in pool}
    else:
        raise SystemExit(f"unknown form {form}")
    return sorted(pool, key=lambda n: (-s[n], pool.index(n)))


def metrics(rows):
    n = len(rows)
    t1 = sum(1 for r, e in rows if r[:1] and r[0] in e) / n
    t5 = sum(1 for r, e in rows if any(x in e for x in r[:5])) / n
    mrr = sum(next((1 / (i + 1) for i, x in enumerate(r[:10]) if x in e), 0) for r, e in rows) / n
    return t1, t5, mrr


def tool_vectors(dirs, catalog, mix):
    """Each tool's vector: one directory's, or (with a second) their mean ("mean": the mean of
    the two cosines) or their normalized sum ("sum"), or "max" (kept as a pair)."""
    files = [json.load(open(os.path.join(d, os.path.basename(catalog) + ".vectors.json"))) for d in dirs]
    if len(files) == 1:
        return files[0]["queries"], files[0]["tools"]
    a, b = files[0]["tools"], files[1]["tools"]
    out = {}
    for n in a:
        if mix == "max":
            out[n] = (a[n], b[n])
            continue
        v = [(x + y) / 2 for x, y in zip(a[n], b[n])]
        if mix == "sum":
            norm = math.sqrt(dot(v, v)) or 1
            v = [x / norm for x in v]
        out[n] = v
    return files[0]["queries"], out


def load(vectors, held_out, mix="mean"):
    sets = {}
    for path in FILES + [EARLIER]:
        catalog, qs = labelled(path, held_out)
        queries, tools = tool_vectors(vectors.split(","), catalog, mix)
        lex = lexical(catalog, [q for q, *_ in qs])
        cases = []
        for q, e, k in qs:
            qv = queries[q]
            cos = {n: max(dot(x, qv) for x in t) if isinstance(t, tuple) else dot(t, qv) for n, t in tools.items()}
            cases.append(Case(q, e, k, lex[q], cos))
        sets[path] = cases
    return sets


FORMS = (
    [("weighted", w) for w in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]
    + [("cos-over-top", w) for w in (0.4, 0.5, 0.6, 0.7)]
    + [("minmax", w) for w in (0.3, 0.4, 0.5, 0.6, 0.7)]
    + [("cos-gap", w) for w in (0.6, 0.7, 0.8)]
    + [("lex-sqrt", w) for w in (0.6, 0.7, 0.8)]
    + [("lex-rank", w, k) for w in (0.7, 0.8, 0.9) for k in (2, 5, 10)]
    + [("zscore", w) for w in (0.3, 0.4, 0.5, 0.6, 0.7)]
    + [("gate", w, t) for w, t in ((0.7, 0.5), (0.7, 0.8), (0.7, 0.9), (0.8, 0.9), (0.85, 0.95), (0.9, 0.95))]
    + [("reserve", w, r) for w in (0.6, 0.7, 0.8) for r in (1, 2)]
    + [("rrf", 60), ("rrf", 10), ("rrf", 2)]
)


def bounds(sets, form):
    """Pooled over the two catalogs: queries whose expected tool is the lexical index's first, the
    cosine's first, either's (no fusion of the two can place first a tool neither does, except by
    a blend: the best weight chosen per query shows how much), in either's top 5; then this form's
    top-1 misses by cause: neither signal had it first, or the fusion lost it; whether the tool
    answered is of the expected tool's server (a near-twin) and shares a word of its name."""
    cases = [c for p in FILES for c in sets[p]]
    groups = {}
    for p in FILES:
        for t in json.load(open(json.load(open(p))["catalog"]))["tools"]:
            groups[t["name"]] = set(t.get("groups") or [])

    def hit(names, c, k):
        return any(n in c.expect for n in names[:k])

    def firsts(c):
        return [n for n, _ in c.lex], [n for n, _ in c.by_cos]

    n = len(cases)
    row = {
        "lexical first": sum(hit(firsts(c)[0], c, 1) for c in cases),
        "cosine first": sum(hit(firsts(c)[1], c, 1) for c in cases),
        "either first": sum(hit(firsts(c)[0], c, 1) or hit(firsts(c)[1], c, 1) for c in cases),
        "best weight per query, first": sum(any(hit(fused(c, ("weighted", w / 20)), c, 1) for w in range(21)) for c in cases),
        "either's top 5": sum(hit(firsts(c)[0], c, 5) or hit(firsts(c)[1], c, 5) for c in cases),
        f"{':'.join(map(str, form))} first": sum(hit(fused(c, form), c, 1) for c in cases),
    }
    print(f"\nbounds over {n} queries: " + "; ".join(f"{k} {v} ({v / n:.3f})" for k, v in row.items()))
    causes = {}
    for c in cases:
        got = fused(c, form)[0]
        if got in c.expect:
            continue
        lex, by_cos = firsts(c)
        why = "fusion lost it" if hit(lex, c, 1) or hit(by_cos, c, 1) else "neither first"
        twin = any(groups.get(got, set()) & groups.get(e, set()) for e in c.expect)
        words = lambda t: set(t.replace("-", "_").lower().split("_")) - {"get", "list", "api"}
        shares = any(words(got) & words(e) for e in c.expect)
        key = f"{why}, {'same server' if twin else 'other server'}{', shares a name word' if shares else ''}"
        causes[key] = causes.get(key, 0) + 1
    for k, v in sorted(causes.items(), key=lambda x: -x[1]):
        print(f"  top-1 misses: {k}: {v}")


def parse_form(text):
    kind, *nums = text.split(":")
    return (kind, *[float(x) for x in nums])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vectors", default="target/search-vectors",
                    help="a folder of search_encode files, or two (comma-separated: tool vectors of two texts, mixed by --mix)")
    ap.add_argument("--mix", default="mean", choices=["mean", "sum", "max"])
    ap.add_argument("--held-out", action="store_true", help="the held-out parts instead (report only)")
    ap.add_argument("--forms", help="forms to run, e.g. weighted:0.7,minmax:0.5 (default: a grid)")
    ap.add_argument("--why", help="print the misses of this form (e.g. weighted:0.7) with both signals")
    ap.add_argument("--bounds", help="what any fusion of the two signals could reach, and this form's top-1 misses "
                    "by cause (e.g. weighted:0.7)")
    args = ap.parse_args()
    sets = load(args.vectors, args.held_out, args.mix)
    forms = [parse_form(f) for f in args.forms.split(",")] if args.forms else FORMS
    print(f"{'form':<22} {'pooled t1/t5/MRR':<20} {'para t1/t5':<12} {'public':<12} {'saas':<12} {'earlier':<12}")
    for form in forms:
        per = {p: [(fused(c, form), c.expect) for c in cs] for p, cs in sets.items()}
        pooled = per[FILES[0]] + per[FILES[1]]
        para = [(fused(c, form), c.expect) for p in FILES for c in sets[p] if c.kind == "paraphrase"]
        t = metrics(pooled)
        cells = [f"{t[0]:.3f}/{t[1]:.3f}/{t[2]:.3f}", "%.3f/%.3f" % metrics(para)[:2]]
        cells += ["%.3f/%.3f" % metrics(per[p])[:2] for p in FILES + [EARLIER]]
        print(f"{':'.join(map(str, form)):<22} {cells[0]:<20} {cells[1]:<12} {cells[2]:<12} {cells[3]:<12} {cells[4]:<12}")
    if args.bounds:
        bounds(sets, parse_form(args.bounds))
    if args.why:
        form = parse_form(args.why)
        for p in FILES + [EARLIER]:
            for c in sets[p]:
                r = fused(c, form)
                if r[:1] and r[0] in c.expect:
                    continue
                lex = dict(c.lex)
                top = c.lex[0][1] if c.lex else 0
                crank = {n: i for i, (n, _) in enumerate(sorted(c.cos.items(), key=lambda x: -x[1]))}
                lrank = {n: i for i, (n, _) in enumerate(c.lex)}
                def show(n):
                    return (f"{n} cos {c.cos.get(n, 0):.3f}#{crank.get(n, -1) + 1} "
                            f"lex {lex.get(n, 0) / top if top else 0:.2f}#{lrank[n] + 1 if n in lrank else '-'}")
                hit5 = any(x in c.expect for x in r[:5])
                print(f"\n[{c.kind}{'' if hit5 else ' NOT-IN-5'}] {c.query!r} ({os.path.basename(p)})")
                print("   got:    " + " | ".join(show(n) for n in r[:3]))
                print("   wanted: " + " | ".join(show(n) for n in c.expect if n in c.cos))


if __name__ == "__main__":
    main()
