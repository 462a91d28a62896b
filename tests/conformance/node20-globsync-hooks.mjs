//! Resolve hook of node20-globsync.mjs: `fs` / `node:fs` imported from inside the conformance
//! package resolves to a shim module that re-exports `node:fs` plus a `globSync` that throws
//! (the server scenarios never call it).
const SHIM = 'data:text/javascript,' + encodeURIComponent(`
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync() {
  throw new Error('fs.globSync needs Node 22 (only the conformance tier-check command uses it)');
}
`);

export async function resolve(specifier, context, next) {
  const fromConformance = (context.parentURL ?? '').includes('/@modelcontextprotocol/conformance/');
  if (fromConformance && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: SHIM, shortCircuit: true };
  }
  return next(specifier, context);
}
