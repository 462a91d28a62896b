//! Synthetic conversation text for throughput measurements (the native benchmark and the wasm
//! figure use the same text): ordinary prose with a PII value about every 250 bytes.

const PROSE: [&str; 6] = [
    "Thanks for the update on the release; the build is green and the changelog is ready for review. ",
    "Could you check whether the migration ran on staging before we announce the maintenance window? ",
    "The quarterly numbers look fine, but the forecast for EMEA needs another pass before Friday. ",
    "I moved the meeting to Thursday at 10:30 so that the design team can join after their standup. ",
    "Version 2.14.3 fixed the timeout, and order #48213 shipped on 2025-10-04 with tracking attached. ",
    "Let's keep the scope small: one endpoint, one test suite, and a short note in the README. ",
];

const PII: [&str; 10] = [
    "Reach Jane at jane.smith@example.com or (415) 555-0132. ",
    "Her SSN is 123-45-6789 and the card is 4111 1111 1111 1111. ",
    "Wire it to DE89 3704 0044 0532 0130 00 today. ",
    "The host 10.20.30.40 and 2001:db8::8a2e:370:7334 are blocked. ",
    "Rotate sk-proj-Abc123Def456Ghi789Jkl012Mno345 now. ",
    "Call +44 20 7946 0958 about the invoice. ",
    "password: Tr0ub4dor&3x was leaked. ",
    "Send it to ops_team@corp-x.io before noon. ",
    "Use card 5500-0000-0000-0004 for the deposit. ",
    "Dr. Maria Garcia signed the contract. ",
];

/// About `bytes` bytes of text (whole sentences), the same every time.
pub fn text(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 128);
    let mut i = 0usize;
    while s.len() < bytes {
        s.push_str(PROSE[i % PROSE.len()]);
        s.push_str(PROSE[(i * 7 + 3) % PROSE.len()]);
        s.push_str(PII[i % PII.len()]);
        i += 1;
    }
    s
}
