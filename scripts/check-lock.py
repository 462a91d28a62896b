#!/usr/bin/env python3
"""package-lock.json lists every platform's optional packages (issue 41 item 1).

`npm ci` refuses a lock file that lacks another platform's optional package (rollup's, esbuild's,
workerd's: `Missing: @rollup/rollup-darwin-arm64@… from lock file`), and then bootstrap's fallback
`npm install` rewrites the committed lock. This check resolves each optional dependency of each
locked package the way Node does (the nearest node_modules up the tree) and fails on any that is
absent. Fix a failing lock with `npm install --package-lock-only` (npm 11 then records every
platform's optional packages) and commit it.
"""
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "package-lock.json"
with open(path) as f:
    packages = json.load(f)["packages"]

missing = []
for where, meta in packages.items():
    for dep in meta.get("optionalDependencies") or {}:
        base = where
        while True:
            candidate = f"{base}/node_modules/{dep}" if base else f"node_modules/{dep}"
            if candidate in packages:
                break
            if not base:
                missing.append((where or "(root)", dep))
                break
            cut = base.rfind("/node_modules/")
            base = base[:cut] if cut >= 0 else ""

for where, dep in missing:
    print(f"{path}: {where} has optional dependency {dep}, which the lock does not list")
if missing:
    print(f"{len(missing)} optional packages missing: run `npm install --package-lock-only` and commit the lock")
    sys.exit(1)
print(f"{path}: every optional dependency of {len(packages)} entries is locked")
