#!/usr/bin/env python3
"""Lists import cycles, and exits 1 on one:
1. between the core's top-level modules (src/<module>.rs and src/<module>/): a module's `crate::<other>`
   references, including `use` lines and inline paths;
2. between the files of one folder (src/ and every folder under it, native/src, worker/src): a file's
   references to a sibling, as `super::<sibling>`, `crate::<folder path>::<sibling>`, or a name the
   folder's parent file re-exports from that sibling (`pub use sibling::Name`). A file and the folder
   of the same name (detect.rs and detect/) are one node."""
import os, re, sys

base = os.path.join(os.path.dirname(__file__), '..')


def code(path):
    # `#[cfg(test)]` modules (at the end of a file) may reach anywhere; comments are not imports.
    return re.sub(r'//[^\n]*', '', open(path).read().split('#[cfg(test)]')[0])


def cycles_of(deps):
    found = set()

    def walk(start, node, path):
        for d in deps.get(node, ()):
            if d == start:
                cyc = path + [d]
                i = cyc.index(min(cyc[:-1]))
                found.add(' -> '.join(cyc[i:-1] + cyc[:i] + [cyc[i]]))
            elif d not in path and len(path) < 8:
                walk(start, d, path + [d])

    for m in deps:
        walk(m, m, [m])
    return found


def top_level():
    root = os.path.join(base, 'src')
    mods = {}
    for entry in os.listdir(root):
        name = entry[:-3] if entry.endswith('.rs') else entry
        if name in ('lib', 'main'):
            continue
        mods.setdefault(name, [])
        path = os.path.join(root, entry)
        files = [path] if entry.endswith('.rs') else [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith('.rs')]
        mods[name] += files
    deps = {}
    for m, files in mods.items():
        text = ''.join(code(f) for f in files)
        refs = set(re.findall(r'crate::([a-z_]+)', text))
        for block in re.findall(r'use crate::\{([^;]*)\}', text):
            refs |= set(re.findall(r'(?:^|[\s,{])([a-z_]+)(?:::|\s*[,}])', block))
        deps[m] = {r for r in refs if r in mods and r != m}
    return ['modules: ' + c for c in sorted(cycles_of(deps))]


def heads(text, prefix):
    """The first path segment after each match of the regex `prefix`; for a `{...}` group, the first
    segment of each of its top-level items."""
    out = set()
    for m in re.finditer(prefix + r'(\{|[A-Za-z_][A-Za-z0-9_]*)', text):
        if m.group(1) != '{':
            out.add(m.group(1))
            continue
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        depth, item, items = 0, '', []
        for c in text[m.end():i - 1]:
            depth += {'{': 1, '}': -1}.get(c, 0)
            if c == ',' and depth == 0:
                items.append(item)
                item = ''
            else:
                item += c
        items.append(item)
        out |= {w.group(1) for w in (re.match(r'\s*([A-Za-z_][A-Za-z0-9_]*)', x) for x in items) if w}
    return out


def folder(d, parent, modpath):
    """Cycles between the files of folder `d` (module path `modpath`, declared in `parent`), then
    in its subfolders."""
    sibs = {}
    for e in sorted(os.listdir(d)):
        p = os.path.join(d, e)
        if e.endswith('.rs') and e[:-3] not in ('lib', 'main', 'mod'):
            sibs.setdefault(e[:-3], {'own': None, 'files': []})
            sibs[e[:-3]]['own'] = p
            sibs[e[:-3]]['files'].append(p)
        elif os.path.isdir(p):
            sibs.setdefault(e, {'own': None, 'files': []})['files'] += [
                os.path.join(a, f) for a, _, fs in os.walk(p) for f in fs if f.endswith('.rs')]
    reexported = {}
    if parent and os.path.exists(parent):
        text = code(parent)
        for m in re.finditer(r'pub(?:\([a-z]+\))?\s+use\s+(?:self::)?([a-z_][a-z0-9_]*)::', text):
            if m.group(1) in sibs:
                for name in heads(text[m.start():], re.escape(m.group(0))):
                    reexported.setdefault(name, m.group(1))
    in_crate = r'(?<![A-Za-z0-9_:])crate::' + ''.join(x + '::' for x in modpath)
    deps = {}
    for s, info in sibs.items():
        refs = set()
        for f in info['files']:
            text = code(f)
            refs |= heads(text, in_crate)
            # `super::` names this folder's module from its direct files only.
            if f == info['own']:
                refs |= heads(text, r'(?<![A-Za-z0-9_:])super::')
        deps[s] = {r if r in sibs else reexported[r] for r in refs if r in sibs or r in reexported} - {s}
    found = [f'{os.path.relpath(d, base)}: {c}' for c in sorted(cycles_of(deps))]
    for s, info in sibs.items():
        sub = os.path.join(d, s)
        if os.path.isdir(sub):
            found += folder(sub, info['own'], modpath + [s])
    return found


found = top_level()
for d, parent in [('src', 'src/lib.rs'), ('native/src', 'native/src/lib.rs'), ('worker/src', 'worker/src/lib.rs')]:
    found += folder(os.path.join(base, d), os.path.join(base, parent), [])
for c in found:
    print('cycle:', c)
sys.exit(1 if found else 0)
