//! Preload for `@modelcontextprotocol/conformance` 0.1.16 on Node 20: the package imports
//! `globSync` from `fs` (a Node 22 API used only by its `tier-check` command), which makes the
//! whole CLI fail to load on Node 20. Loaded with `node --import`, this registers a resolve hook
//! that hands the conformance package an `fs` with a stand-in `globSync`; every other importer
//! gets the real `fs`. On Node 22+ it does nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register(new URL('./node20-globsync-hooks.mjs', import.meta.url));
}
