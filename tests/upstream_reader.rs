//! Issue 23, item 7: an upstream's SSE answer is scanned once. An upstream that streams a long
//! `data:` line in small chunks must cost time linear in the bytes, not in bytes × chunks: the
//! reader keeps where it stopped looking for the end of an event.

use std::time::{Duration, Instant};

use mcp_sieve::upstream::AnswerReader;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#;

/// An SSE answer to `REQUEST` whose one `data:` line is about `len` bytes long.
fn long_event(len: usize) -> Vec<u8> {
    let text = "x".repeat(len);
    format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n\n"
    )
    .into_bytes()
}

/// Feeds `bytes` to a reader `chunk` bytes at a time; the time it took, and whether the reader
/// said the response arrived exactly at the last chunk.
fn feed(bytes: &[u8], chunk: usize) -> (Duration, bool) {
    let started = Instant::now();
    let mut reader = AnswerReader::new("text/event-stream", REQUEST, 64 << 20);
    let mut found_at_end = false;
    let pieces: Vec<&[u8]> = bytes.chunks(chunk).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let found = reader.push(piece).unwrap();
        assert_eq!(
            found,
            i + 1 == pieces.len(),
            "the response is found at the last chunk only (chunk {i})"
        );
        found_at_end = found;
    }
    let took = started.elapsed();
    assert_eq!(reader.body().len(), bytes.len());
    (took, found_at_end)
}

#[test]
fn a_long_data_line_in_small_chunks_is_scanned_once() {
    let bytes = long_event(128 << 10);
    // 8,000 pushes of 16 bytes: linear reading costs a small multiple of one push of it all;
    // scanning from the event's start on every push costs 8,000 × 64 KB (28 s in a debug build).
    // The machine is shared: up to three tries, each compared with a fresh one-push time.
    let mut tries = Vec::new();
    for _ in 0..3 {
        let whole = feed(&bytes, bytes.len()).0;
        let chunked = feed(&bytes, 16).0;
        if chunked <= whole * 20 + Duration::from_millis(100) {
            return;
        }
        tries.push((chunked, whole));
    }
    panic!("128 KB in 16-byte chunks vs in one push took {tries:?}: the reader rescans what it already read");
}

#[test]
fn events_split_anywhere_are_found_once_whole() {
    // A notification, then the response, with CRLF line ends, cut at every chunk size.
    let sse = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n\
               event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\r\ndata: \"result\":{\"ok\":\"\u{1F600}é\"}}\r\n\r\n";
    for chunk in 1..sse.len() {
        let (_, found) = feed(sse.as_bytes(), chunk);
        assert!(found, "chunk size {chunk}");
    }
    // A response to another id is not ours: reading goes on.
    let mut reader = AnswerReader::new("text/event-stream", REQUEST, 1 << 20);
    assert!(!reader
        .push(b"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n")
        .unwrap());
    assert!(reader
        .push(b"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n")
        .unwrap());
}
