#!/usr/bin/env python3
"""What is in a wasm module by size, read from its name section (issue 63; no twiggy here).

Sums the code section's function bodies by their names (the name section wasm-bindgen writes
demangled, which worker-build keeps), so a build can be compared with another part by part:

  scripts/wasm-size.py WASM                  sections, then code by crate (raw and gzipped)
  scripts/wasm-size.py WASM --depth 2        code by path prefix of 2 segments (mcp_sieve::protocol)
  scripts/wasm-size.py WASM --families       code by family of generic code (sort, fmt, serde, ...)
  scripts/wasm-size.py WASM --top 40         the 40 largest functions
  scripts/wasm-size.py WASM --grep REGEX     the functions whose name matches, largest first
  scripts/wasm-size.py BEFORE --diff AFTER   the change of each group (with --depth/--families)

A function is counted under the path of the type or function it belongs to: `<T as Trait>::f`
under T's path, a closure under its function's. "gz" of a group is its bodies gzipped together
(gzip -9), an estimate: the module gzips its parts in context, so the groups' gz do not add up
to the module's.
"""

import argparse
import gzip
import re
import subprocess
import sys
from collections import defaultdict


def leb(buf, pos):
    """An unsigned LEB128 at pos: (value, position after it)."""
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def name_at(buf, pos):
    """A wasm name (length-prefixed UTF-8) at pos: (text, position after it)."""
    length, pos = leb(buf, pos)
    return buf[pos : pos + length].decode("utf-8", "replace"), pos + length


SECTION_NAMES = {
    0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
    7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount", 13: "tag",
}


class Module:
    """The sections of a wasm module, and its function bodies by name."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        if self.buf[:4] != b"\0asm":
            sys.exit(f"{path}: not a wasm module (no \\0asm magic)")
        self.sections = []  # (label, start of content, end)
        self.imported_funcs = 0
        self.names = {}
        self.bodies = []  # (function index, body bytes)
        pos = 8
        while pos < len(self.buf):
            sid = self.buf[pos]
            size, start = leb(self.buf, pos + 1)
            end = start + size
            label = SECTION_NAMES.get(sid, f"id {sid}")
            if sid == 0:
                custom, _ = name_at(self.buf, start)
                label = f"custom '{custom}'"
                if custom == "name":
                    self._names(start, end)
            elif sid == 2:
                self._imports(start)
            elif sid == 10:
                self._code(start)
            self.sections.append((label, start, end))
            pos = end

    def _imports(self, pos):
        count, pos = leb(self.buf, pos)
        for _ in range(count):
            _, pos = name_at(self.buf, pos)
            _, pos = name_at(self.buf, pos)
            kind = self.buf[pos]
            pos += 1
            if kind == 0:  # function: type index
                _, pos = leb(self.buf, pos)
                self.imported_funcs += 1
            elif kind == 1:  # table: reftype, limits
                pos = self._limits(pos + 1)
            elif kind == 2:  # memory: limits
                pos = self._limits(pos)
            elif kind == 3:  # global: valtype, mutability
                pos += 2
            elif kind == 4:  # tag: attribute, type index
                _, pos = leb(self.buf, pos + 1)
            else:
                sys.exit(f"unknown import kind {kind}")

    def _limits(self, pos):
        flags = self.buf[pos]
        _, pos = leb(self.buf, pos + 1)
        if flags & 1:
            _, pos = leb(self.buf, pos)
        return pos

    def _code(self, pos):
        count, pos = leb(self.buf, pos)
        for i in range(count):
            size, body = leb(self.buf, pos)
            self.bodies.append((self.imported_funcs + i, self.buf[pos : body + size]))
            pos = body + size

    def _names(self, pos, end):
        _, pos = name_at(self.buf, pos)
        while pos < end:
            sub = self.buf[pos]
            size, start = leb(self.buf, pos + 1)
            if sub == 1:  # function names
                count, p = leb(self.buf, start)
                for _ in range(count):
                    index, p = leb(self.buf, p)
                    self.names[index], p = name_at(self.buf, p)
            pos = start + size

    def name(self, index):
        return self.names.get(index, f"<function {index}>")


def owner_path(name):
    """The path a function belongs to: T's in `<T as Trait>::f`, without generic arguments."""
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    if name.startswith("<"):
        depth = 0
        for i, ch in enumerate(name):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    inner = name[1:i]
                    break
        else:
            inner = name[1:]
        inner = re.split(r" as | for ", inner)[0]
        name = inner.lstrip("&*").removeprefix("mut ").removeprefix("dyn ").removeprefix("const ")
    # Drop generic arguments, closures and the like: keep the plain path segments.
    out, depth = [], 0
    for ch in name:
        if ch in "<[(":
            depth += 1
        elif ch in ">])":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return [s for s in "".join(out).split("::") if s and not s.startswith("{{")]


# Families of generic or derived code, tried in order; the first match names a function's family.
FAMILIES = [
    ("sort (core::slice::sort)", r"core::slice::sort::|::sort_by|::sort_unstable|driftsort|ipnsort|smallsort|quicksort|heapsort"),
    ("fmt (core::fmt, Debug/Display impls)", r"core::fmt::|as core::fmt::(Debug|Display|Write)>"),
    ("serde Deserialize (derive, visitors)", r"Deserialize|Visitor|deserialize|MapAccess|SeqAccess|EnumAccess|VariantAccess|__Field"),
    ("serde Serialize", r"Serialize|serialize|SerializeMap|SerializeStruct|SerializeSeq"),
    ("serde_json (other)", r"serde_json::"),
    ("wasm-bindgen / js-sys / web-sys glue", r"wasm_bindgen|js_sys::|web_sys::|__wbg|__wbindgen"),
    ("futures / async state machines", r"\{\{closure\}\}|core::future|Future>::poll|futures_"),
    ("hashbrown / HashMap / IndexMap", r"hashbrown::|std::collections::hash|indexmap::"),
    ("Vec / String / alloc", r"alloc::"),
    ("drop_in_place", r"drop_in_place"),
    ("core (other)", r"^core::|^<core::"),
]


def family(name):
    for label, pattern in FAMILIES:
        if re.search(pattern, name):
            return label
    return "other"


def groups(module, how):
    """{group: [total bytes, count, concatenated bodies]} of module's code."""
    out = defaultdict(lambda: [0, 0, bytearray()])
    for index, body in module.bodies:
        name = module.name(index)
        if how == "families":
            key = family(name)
        else:
            path = owner_path(name)
            key = "::".join(path[: max(1, how)]) if path else name
        g = out[key]
        g[0] += len(body)
        g[1] += 1
        g[2] += body
    return out


def gz(data):
    """Bytes gzipped as scripts/check-size.sh counts them (`gzip -9`; zlib's, when there is no
    gzip, differs by a few KB on a module)."""
    try:
        return len(subprocess.run(["gzip", "-9c"], input=bytes(data), capture_output=True, check=True).stdout)
    except OSError:
        return len(gzip.compress(bytes(data), 9, mtime=0))


def sections_table(module, path):
    buf = module.buf
    print(f"{path}: {len(buf):,} bytes, {gz(buf):,} gzipped (gzip -9)")
    print(f"{'section':<28}{'bytes':>12}{'gzipped':>12}")
    for label, start, end in module.sections:
        print(f"{label:<28}{end - start:>12,}{gz(buf[start:end]):>12,}")
    print(f"{len(module.bodies):,} functions defined, {module.imported_funcs:,} imported, "
          f"{len(module.names):,} named")


def groups_table(module, how, limit):
    rows = sorted(groups(module, how).items(), key=lambda kv: -kv[1][0])
    total = sum(len(b) for _, b in module.bodies)
    print(f"\n{'group':<64}{'bytes':>11}{'share':>7}{'gz':>10}{'fns':>6}")
    for key, (size, count, bodies) in rows[:limit]:
        print(f"{key[:63]:<64}{size:>11,}{100 * size / total:>6.1f}%{gz(bodies):>10,}{count:>6}")
    if len(rows) > limit:
        rest = rows[limit:]
        print(f"{f'({len(rest)} more groups)':<64}{sum(r[1][0] for r in rest):>11,}")


def diff_table(before, after, how, limit):
    a, b = groups(before, how), groups(after, how)
    keys = set(a) | set(b)
    rows = sorted(keys, key=lambda k: -abs(b.get(k, [0])[0] - a.get(k, [0])[0]))
    print(f"{'group':<64}{'before':>11}{'after':>11}{'change':>10}")
    for k in rows[:limit]:
        x, y = a.get(k, [0])[0], b.get(k, [0])[0]
        if x != y:
            print(f"{k[:63]:<64}{x:>11,}{y:>11,}{y - x:>+10,}")
    tx = sum(len(v) for _, v in before.bodies)
    ty = sum(len(v) for _, v in after.bodies)
    print(f"{'code, all':<64}{tx:>11,}{ty:>11,}{ty - tx:>+10,}")
    print(f"{'module':<64}{len(before.buf):>11,}{len(after.buf):>11,}{len(after.buf) - len(before.buf):>+10,}")
    print(f"{'module gzipped':<64}{gz(before.buf):>11,}{gz(after.buf):>11,}{gz(after.buf) - gz(before.buf):>+10,}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wasm")
    ap.add_argument("--depth", type=int, default=1, help="path segments a group keeps (default 1: the crate)")
    ap.add_argument("--families", action="store_true", help="group by family of generic code instead")
    ap.add_argument("--top", type=int, help="list the N largest functions")
    ap.add_argument("--grep", help="list the functions whose name matches this regex")
    ap.add_argument("--diff", metavar="AFTER", help="compare with another build, group by group")
    ap.add_argument("--limit", type=int, default=40, help="rows of a group table (default 40)")
    args = ap.parse_args()
    module = Module(args.wasm)
    how = "families" if args.families else args.depth
    if args.diff:
        diff_table(module, Module(args.diff), how, args.limit)
        return
    if args.top or args.grep:
        rows = [(len(b), module.name(i)) for i, b in module.bodies]
        if args.grep:
            rows = [r for r in rows if re.search(args.grep, r[1])]
            print(f"{len(rows)} functions, {sum(r[0] for r in rows):,} bytes")
        for size, name in sorted(rows, reverse=True)[: args.top or args.limit]:
            print(f"{size:>9,}  {name}")
        return
    sections_table(module, args.wasm)
    groups_table(module, how, args.limit)


if __name__ == "__main__":
    main()
