#!/usr/bin/env python3
"""Lists import cycles between the core's top-level modules (src/<module>.rs and src/<module>/):
a module's `crate::<other>` references, including `use` lines and inline paths. Exits 1 on a cycle."""
import os, re, sys
root = os.path.join(os.path.dirname(__file__), '..', 'src')
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
    # `#[cfg(test)]` modules (at the end of a file) may reach anywhere; comments are not imports.
    text = ''.join(open(f).read().split('#[cfg(test)]')[0] for f in files)
    text = re.sub(r'//[^\n]*', '', text)
    refs = set(re.findall(r'crate::([a-z_]+)', text))
    for block in re.findall(r'use crate::\{([^;]*)\}', text):
        refs |= set(re.findall(r'(?:^|[\s,{])([a-z_]+)(?:::|\s*[,}])', block))
    deps[m] = {r for r in refs if r in mods and r != m}
cycles = set()
def walk(start, node, path):
    for d in deps.get(node, ()):
        if d == start:
            cyc = path + [d]
            i = cyc.index(min(cyc[:-1]))
            cycles.add(' -> '.join(cyc[i:-1] + cyc[:i] + [cyc[i]]))
        elif d not in path and len(path) < 6:
            walk(start, d, path + [d])
for m in deps:
    walk(m, m, [m])
for c in sorted(cycles):
    print('cycle:', c)
sys.exit(1 if cycles else 0)
