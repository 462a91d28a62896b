//! Cursor decoding: any string → an offset or a -32602 error; only cursors the server issued for
//! the same method, binding and version decode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_sieve::protocol::cursor;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    match cursor::decode(s, "tools/list", "binding", 7) {
        Ok(offset) => assert_eq!(cursor::encode("tools/list", "binding", 7, offset), s),
        Err(e) => assert_eq!(e.code(), -32602),
    }
});
