#!/usr/bin/env python3
"""Checks the links of the README, ARCHITECTURE.md and the book (docs/src/**/*.md), offline.

Every relative link and image (`[text](path#anchor)`, `![alt](path)`, `[label]: path`, and
`href`/`src` in inline HTML) must name an existing file, and every `#anchor` a heading of the file it
points at (ids made as mdBook makes them: lowercased, alphanumerics, `_` and `-` kept, spaces to
`-`, a repeated id suffixed `-1`, `-2`, ...; `{#custom-id}` honoured). A link from the book must
stay inside docs/src, since mdBook copies nothing else. Links with a scheme (https:, mailto:) are
not fetched. Code blocks and code spans are skipped. Exits 1 listing every broken link as
file:line: link: what is wrong.

    python3 scripts/check-docs.py            # README.md, ARCHITECTURE.md and docs/src
    python3 scripts/check-docs.py FILE.md... # only these
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
BOOK = os.path.join(ROOT, 'docs', 'src')

INLINE = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$')
HTML = re.compile(r'(?:href|src)\s*=\s*"([^"]*)"')
HEADING = re.compile(r'^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')


def prose_lines(text):
    """(line number, line) of the text outside fenced code blocks, code spans blanked."""
    fence = None
    for n, line in enumerate(text.split('\n'), 1):
        m = re.match(r'^\s{0,3}(`{3,}|~{3,})', line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield n, re.sub(r'(`+)(.+?)\1', lambda s: ' ' * len(s.group(0)), line)


def heading_text(raw):
    """A heading's text as rendered: links to their text, code spans and emphasis marks gone."""
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', raw)
    t = t.replace('`', '')
    return re.sub(r'<[^>]+>', '', t)


def slug(text):
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in '_-':
            out.append(ch)
        elif ch.isspace():
            out.append('-')
    return ''.join(out)


_anchors = {}


def anchors(path):
    """The ids of a Markdown file's headings (and of explicit HTML ids)."""
    if path not in _anchors:
        ids, used = set(), {}
        with open(path, encoding='utf-8') as f:
            text = f.read()
        fence = None
        for line in text.split('\n'):
            m = re.match(r'^\s{0,3}(`{3,}|~{3,})', line)
            if fence:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            if m:
                fence = m.group(1)
                continue
            h = HEADING.match(line)
            if h:
                raw = h.group(2)
                custom = re.search(r'\{#([^}\s]+)[^}]*\}\s*$', raw)
                if custom:
                    ids.add(custom.group(1))
                    continue
                base = slug(heading_text(raw))
                n = used.get(base, 0)
                ids.add(base if n == 0 else f'{base}-{n}')
                used[base] = n + 1
            for m in re.finditer(r'\bid\s*=\s*"([^"]+)"', line):
                ids.add(m.group(1))
        _anchors[path] = ids
    return _anchors[path]


def check(path):
    problems = []
    rel = os.path.relpath(path, ROOT)
    in_book = os.path.commonpath([path, BOOK]) == BOOK
    with open(path, encoding='utf-8') as f:
        text = f.read()
    for n, line in prose_lines(text):
        targets = [m.group(1) for m in INLINE.finditer(line)]
        targets += [m.group(1) for m in HTML.finditer(line)]
        d = REFDEF.match(line)
        if d:
            targets.append(d.group(1))
        for link in targets:
            if not link or SCHEME.match(link):
                continue
            file_part, _, anchor = link.partition('#')
            if file_part:
                base = ROOT if file_part.startswith('/') else os.path.dirname(path)
                target = os.path.normpath(os.path.join(base, file_part.lstrip('/')))
                if not os.path.exists(target):
                    problems.append(f'{rel}:{n}: {link}: no such file ({os.path.relpath(target, ROOT)})')
                    continue
                if in_book and os.path.commonpath([target, BOOK]) != BOOK:
                    problems.append(f'{rel}:{n}: {link}: points outside docs/src, which mdBook does not copy')
                    continue
            else:
                target = path
            if anchor:
                if not target.endswith('.md') or os.path.isdir(target):
                    continue
                if anchor not in anchors(target):
                    problems.append(f'{rel}:{n}: {link}: no heading "#{anchor}" in {os.path.relpath(target, ROOT)}')
    return problems


def main(argv):
    if argv:
        files = [os.path.abspath(a) for a in argv]
    else:
        files = [os.path.join(ROOT, 'README.md'), os.path.join(ROOT, 'ARCHITECTURE.md')]
        for d, _, names in os.walk(BOOK):
            files += [os.path.join(d, x) for x in sorted(names) if x.endswith('.md')]
    problems = [p for f in files for p in check(f)]
    for p in problems:
        print(p)
    print(f'check-docs: {len(files)} files, {len(problems)} broken links')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
