#!/usr/bin/env python3
"""Sentence vectors in find_tools (issue 40): which tool text and which fusion, measured on the TUNING part only.

Reads only the `part: "tune"` queries of tests/search/*-servers.json and the earlier set's `queries`
(no held-out query is read or run). The lexical scores are find_tools' own (examples/search_rank with
SEARCH_RANK_DIRECT=1, its best 50); the sentence vectors come from a numpy copy of all-MiniLM-L6-v2 as
native/src/search/encoder.rs runs it (128 tokens, [SEP] last, mean-pooled, unit length; it reproduces the
candle encoder's tuning-part numbers exactly), cached per text in target/search-meaning-cache, so a
text form costs one encoding of the catalogs (a few minutes) and a fusion only arithmetic.
Prints top-1, top-5, MRR@10 pooled over the two catalogs (108 queries), top-1/top-5 per catalog, and
the earlier set, per text form and fusion. docs/src/search.md "Meaning" has the results.
Needs numpy, tokenizers and safetensors (e.g. python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy
tokenizers safetensors) and the model of scripts/bootstrap.sh:
  cargo build -q --features testing --example search_rank
  /tmp/v/bin/python scripts/search_meaning_tune.py [--texts] [--fusions]
"""
import json, math, os, re, subprocess, sys, tempfile, hashlib
import numpy as np
import json, math, os, sys, hashlib
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

D = "target/models/all-minilm-l6-v2"
W = load_file(os.path.join(D, "model.safetensors"))
TOK = Tokenizer.from_file(os.path.join(D, "tokenizer.json"))
TOK.no_truncation(); TOK.no_padding()

def ln(x, p):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * W[p + ".weight"] + W[p + ".bias"]

def lin(x, p):
    return x @ W[p + ".weight"].T + W[p + ".bias"]

def ids(text, max_tokens=128):
    i = TOK.encode(text).ids
    if len(i) > max_tokens:
        i = i[:max_tokens]; i[-1] = 102
    return i

def encode_ids(i):
    x = np.asarray(i)
    h = W["embeddings.word_embeddings.weight"][x] + W["embeddings.position_embeddings.weight"][: len(x)] + W["embeddings.token_type_embeddings.weight"][0]
    h = ln(h, "embeddings.LayerNorm")
    n = len(x)
    for l in range(6):
        p = f"encoder.layer.{l}."
        q = lin(h, p + "attention.self.query").reshape(n, 12, 32).transpose(1, 0, 2)
        k = lin(h, p + "attention.self.key").reshape(n, 12, 32).transpose(1, 0, 2)
        v = lin(h, p + "attention.self.value").reshape(n, 12, 32).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, 384)
        h = ln(lin(a, p + "attention.output.dense") + h, p + "attention.output.LayerNorm")
        m = lin(h, p + "intermediate.dense")
        m = 0.5 * m * (1 + ERF(m / math.sqrt(2)))
        h = ln(lin(m, p + "output.dense") + h, p + "output.LayerNorm")
    e = h.mean(0)
    return e / np.linalg.norm(e)

def ERF(x):
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7)
    s = np.sign(x); a = np.abs(x)
    t = 1 / (1 + 0.3275911 * a)
    y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y

CACHE = "target/search-meaning-cache"
os.makedirs(CACHE, exist_ok=True)
_mem = {}

def encode(texts, max_tokens=128):
    """unit vectors of texts (cached on disk by text)."""
    out = []
    for t in texts:
        key = hashlib.sha1(f"{max_tokens}\0{t}".encode()).hexdigest()
        if key not in _mem:
            f = os.path.join(CACHE, key + ".npy")
            if os.path.exists(f):
                _mem[key] = np.load(f)
            else:
                _mem[key] = encode_ids(ids(t, max_tokens)).astype(np.float32)
                np.save(f, _mem[key])
        out.append(_mem[key])
    return np.stack(out) if out else np.zeros((0, 384), np.float32)



def split_name(n):
    out, prev_lower = "", False
    for c in n:
        if c in "_-./":
            out += " "; prev_lower = False; continue
        if c.isupper() and prev_lower:
            out += " "
        prev_lower = c.islower() or c.isdigit()
        out += c.lower()
    return out

SETS = []
for f in ["public-servers", "saas-servers", "queries"]:
    d = json.load(open(f"tests/search/{f}.json"))
    if f == "queries":
        cat = "catalog/public-servers.json"; qs = [(q["query"], q["expect"], "?") for q in d["queries"]]
    else:
        cat = d["catalog"]; qs = [(q["query"], q["expect"], q["kind"]) for q in d["queries"] if q["part"] == "tune"]
    doc = json.load(open(cat))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
        json.dump({"queries": [{"query": q} for q, *_ in qs]}, t)
    out = subprocess.run(["target/debug/examples/search_rank", cat, t.name, "50"], check=True, capture_output=True,
                         text=True, env={**os.environ, "SEARCH_RANK_DIRECT": "1"}).stdout
    lex = {}
    for line in out.splitlines():
        r = json.loads(line)
        lex[r["query"]] = [(s.rsplit(" ", 1)[0], float(s.rsplit(" ", 1)[1])) for s in r["scores"]]
    SETS.append(dict(name=f, doc=doc, tools=doc["tools"], qs=qs, lex=lex))

def first_sentence(d):
    return re.split(r"(?<=[.!?])\s", (d or "").strip(), maxsplit=1)[0]

def base(t):
    s = split_name(t["name"])
    if t.get("title"): s += ": " + t["title"]
    if t.get("description"): s += ". " + t["description"]
    return s

def params(t, desc=False):
    props = (t.get("inputSchema") or {}).get("properties") or {}
    if desc:
        return "; ".join(split_name(k) + (": " + first_sentence(v.get("description")) if isinstance(v, dict) and v.get("description") else "") for k, v in props.items())
    return ", ".join(split_name(k) for k in props)

def clean(d):
    d = re.sub(r"<(\w+)>.*?</\1>", " ", d or "", flags=re.S)
    return re.sub(r"\s+", " ", d).strip()

def gdesc(t, doc):
    g = {x["name"]: x.get("description", "") for x in doc.get("groups", [])}
    return "; ".join(g.get(n, n) for n in t.get("groups") or [])

TEXTS = {
    "T0 name: title. description": lambda t, doc: base(t),
    "T1 + parameter names": lambda t, doc: base(t) + (". Parameters: " + params(t) if params(t) else ""),
    "T3 group: T0": lambda t, doc: " ".join(t.get("groups") or []) + " " + base(t),
    "T2 + parameter names and descriptions": lambda t, doc: base(t) + (". Parameters: " + params(t, True) if params(t) else ""),
    "T4 group description: T0": lambda t, doc: gdesc(t, doc) + ". " + base(t),
    "T6 T0, description cleaned": lambda t, doc: split_name(t["name"]) + (": " + t["title"] if t.get("title") else "") + ". " + clean(t.get("description")),
    "T7 name: title": lambda t, doc: split_name(t["name"]) + (": " + t["title"] if t.get("title") else ""),
    "T3+T6 groups: T0, description cleaned": lambda t, doc: " ".join(t.get("groups") or []) + " " + split_name(t["name"]) + (": " + t["title"] if t.get("title") else "") + ". " + clean(t.get("description")),
    "T5 name: title. first sentence": lambda t, doc: split_name(t["name"]) + (": " + t["title"] if t.get("title") else "") + ". " + first_sentence(t.get("description")),
}

def metrics(ranks):
    n = len(ranks)
    return np.array([sum(r == 1 for r in ranks) / n, sum(r is not None and r <= 5 for r in ranks) / n, sum(1 / r for r in ranks if r) / n])

def fuse(lexlist, cos, names, w, norm="raw", pool=50, lexnorm="top"):
    """lexlist [(name, score)] best first; cos: np array over tools."""
    idx = {n: i for i, n in enumerate(names)}
    lex = {idx[n]: s for n, s in lexlist[:pool]}
    order = np.argsort(-cos, kind="stable")[:pool]
    P = list(dict.fromkeys(list(lex) + list(order)))
    top = max(lex.values(), default=0)
    c = cos.copy()
    cp = cos[order]
    if norm == "max":
        c = c / cp[0]
    elif norm == "minmax":
        c = (c - cp[-1]) / max(cp[0] - cp[-1], 1e-6)
    elif norm == "z":
        c = (c - cp.mean()) / max(cp.std(), 1e-6) / 3
    elif norm.startswith("floor"):
        fl = float(norm[5:]); c = np.maximum(c - fl, 0) / (1 - fl)
    sc = {}
    for d in P:
        l = lex.get(d, 0.0) / top if top > 0 else 0.0
        if lexnorm == "minmax" and top > 0:
            lo = min(lex.values()); l = (lex[d] - lo) / max(top - lo, 1e-6) if d in lex else 0.0
        sc[d] = w * c[d] + (1 - w) * l
    return [names[d] for d in sorted(sc, key=lambda d: (-sc[d], d))[:10]]

def evaluate(text_key, fusions, show=False):
    res = {}
    for S in SETS:
        names = [t["name"] for t in S["tools"]]
        tv = encode([TEXTS[text_key](t, S["doc"]) for t in S["tools"]])
        qv = encode([q for q, *_ in S["qs"]])
        for fname, f in fusions.items():
            ranks = []
            for (q, e, k), v in zip(S["qs"], qv):
                ranked = f(S["lex"][q], tv @ v, names)
                ranks.append(next((i + 1 for i, n in enumerate(ranked) if n in e), None))
            res.setdefault(fname, {})[S["name"]] = ranks
    return res

def report(label, res, sets=("public-servers", "saas-servers")):
    for fname, per in res.items():
        pooled = metrics(per["public-servers"] + per["saas-servers"])
        pub, saas, earl = metrics(per["public-servers"]), metrics(per["saas-servers"]), metrics(per["queries"])
        fm = lambda a: " ".join(f"{x:.3f}" for x in a)
        print(f"{label[:34]:34} {fname:22} pooled {fm(pooled)} | public {fm(pub[:2])} | saas {fm(saas[:2])} | earlier {fm(earl)}", flush=True)


def fusions():
    F = {"lexical": lambda l, c, n: [x for x, _ in l[:10]], "encoder": lambda l, c, n: fuse(l, c, n, 1.0)}
    for w in (0.5, 0.6, 0.7, 0.8):
        F[f"raw w{w}"] = (lambda w: lambda l, c, n: fuse(l, c, n, w))(w)
    for w in (0.3, 0.4, 0.5, 0.6, 0.7):
        F[f"minmax w{w}"] = (lambda w: lambda l, c, n: fuse(l, c, n, w, "minmax"))(w)
    for w in (0.5, 0.6, 0.7, 0.8):
        F[f"max w{w}"] = (lambda w: lambda l, c, n: fuse(l, c, n, w, "max"))(w)
    for w in (0.3, 0.5, 0.7):
        F[f"z/3 w{w}"] = (lambda w: lambda l, c, n: fuse(l, c, n, w, "z"))(w)
    for w in (0.6, 0.7, 0.8):
        F[f"floor0.2 w{w}"] = (lambda w: lambda l, c, n: fuse(l, c, n, w, "floor0.2"))(w)
    for p in (20, 100):
        F[f"raw w0.7 pool{p}"] = (lambda p: lambda l, c, n: fuse(l, c, n, 0.7, pool=p))(p)
    return F


if __name__ == "__main__":
    if "--fusions" not in sys.argv[1:] or "--texts" in sys.argv[1:]:
        F = {"lexical": lambda l, c, n: [x for x, _ in l[:10]], "encoder": lambda l, c, n: fuse(l, c, n, 1.0),
             "w0.7": lambda l, c, n: fuse(l, c, n, 0.7)}
        for k in TEXTS:
            report(k, evaluate(k, F))
    if "--fusions" in sys.argv[1:]:
        for k in ("T0 name: title. description", "T3 group: T0"):
            report(k, evaluate(k, fusions()))
