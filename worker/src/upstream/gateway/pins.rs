//! The pins of `"pinning"`: the `pins` key of the `MCP_SIEVE_KV` namespace (what `mcp-sieve pin
//! --kv` prints), read again before each refresh, so an approval reaches an isolate with its
//! next refresh.

use mcp_sieve::protocol::Server;

use super::{with, PINS};
use crate::telemetry::log;

/// The KV binding and key of the pins.
pub(super) const PINS_BINDING: &str = "MCP_SIEVE_KV";
const PINS_KEY: &str = "pins";

/// Reads the pins from KV and hands them to the core (which rebuilds at once when they
/// changed). No namespace or no key: no pins; a broken value keeps the pins read before.
pub(super) async fn read_pins(local: &Server) {
    if local.catalog().pinning.mode == mcp_sieve::pin::Mode::Off {
        return;
    }
    let Some(kv) = PINS.with(|p| p.borrow().clone()) else {
        return;
    };
    let pins = match kv.get(PINS_KEY).text().await {
        Ok(Some(text)) => match mcp_sieve::pin::Pins::parse(&text) {
            Ok(p) => p,
            Err(e) => {
                log::error(format_args!(
                    "pinning: {PINS_BINDING} key \"{PINS_KEY}\": {e}; the pins read before stay"
                ));
                return;
            }
        },
        Ok(None) => mcp_sieve::pin::Pins::default(),
        Err(e) => {
            log::error(format_args!(
                "pinning: cannot read {PINS_BINDING} key \"{PINS_KEY}\": {e}"
            ));
            return;
        }
    };
    match with(local, |g| g.set_pins(local.catalog(), pins)) {
        Some(Ok(Some(r))) => r.log.iter().for_each(log::warn),
        Some(Err(e)) => log::error(format_args!("pinning: {e}")),
        _ => {}
    }
}
