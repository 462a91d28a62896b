//! The configuration loader: any bytes as a catalog document → a catalog or a clear error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_sieve::Catalog;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = Catalog::from_json_str(text) {
        assert!(!e.to_string().is_empty());
    }
});
