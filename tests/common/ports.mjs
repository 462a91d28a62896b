//! Free TCP ports on 127.0.0.1 for the tests and the benchmarks (tests/e2e/harness.mjs re-exports
//! `freePort`; scripts/bench-lib.sh runs this file, which prints one).
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * The lowest port of the OS's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range;
 * 49152 elsewhere, IANA's). Ports handed out by freePort() lie below it, so no outgoing
 * connection of another lane (wrangler, a browser, a load client) takes one between the probe
 * and the test's bind: that race once failed CI with EADDRINUSE.
 */
function ephemeralLow() {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 12_000) return low;
  } catch { /* not Linux */ }
  return 49_152;
}
const PORT_LOW = 10_000;
const PORT_HIGH = ephemeralLow();

/** Whether `port` can be bound on 127.0.0.1 right now. */
function canBind(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 that is free now: a random one below the OS's ephemeral range (see
 * ephemeralLow), so only another test's explicit bind can take it before the caller binds it.
 */
export async function freePort() {
  for (let i = 0; i < 200; i++) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
    if (await canBind(port)) return port;
  }
  throw new Error(`freePort: no free port found in ${PORT_LOW}..${PORT_HIGH} after 200 tries`);
}

// Run as a script: prints one free port.
if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await freePort());
