//! A request's headers as the core asks for them: by name, as text. Their names read once into a
//! list of (name, value), then each ask is a scan of that list, a length compared first — the core
//! asks for about 25 names a request, and a scan of hyper's map for each named every header
//! again (`HeaderName::as_str`'s table each time): 3.4% of the native server's user time under
//! scripts/bench-native.sh's `tools/list` load.

use hyper::header::HeaderValue;
use hyper::HeaderMap;

/// The headers by name, in the map's order (hyper keeps names in lowercase).
pub(crate) struct Texts<'a>(Vec<(&'a str, &'a HeaderValue)>);

impl<'a> Texts<'a> {
    /// Reads `map`'s names once (a value is checked for text when it is asked for: most are not,
    /// and the check of every value was a fifth of the header asks' instructions).
    pub(crate) fn of(map: &'a HeaderMap) -> Self {
        let mut texts = Vec::with_capacity(map.len());
        texts.extend(map.iter().map(|(k, v)| (k.as_str(), v)));
        Texts(texts)
    }

    /// The value of header `name` (any case; the first that is text, when sent more than once).
    // The lengths compared first: most names asked are not sent, and none of the same length.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            // hyper's names are lowercase, as the core asks them: compared as bytes first.
            .filter(|(k, _)| k.len() == name.len() && (*k == name || k.eq_ignore_ascii_case(name)))
            .find_map(|(_, v)| v.to_str().ok())
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_found_in_any_case_and_only_as_text() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-session-id", "abc".parse().unwrap());
        headers.append("mcp-session-id", "second".parse().unwrap());
        headers.insert("x-bytes", hyper::header::HeaderValue::from_bytes(b"\xff").unwrap());
        let texts = Texts::of(&headers);
        assert_eq!(texts.get("Mcp-Session-Id").as_deref(), Some("abc"));
        assert_eq!(texts.get("MCP-SESSION-ID").as_deref(), Some("abc"));
        assert_eq!(texts.get("x-bytes"), None);
        headers.append("x-bytes", "text".parse().unwrap());
        let texts = Texts::of(&headers);
        assert_eq!(texts.get("X-Bytes").as_deref(), Some("text"));
        assert_eq!(texts.get("origin"), None);
        assert_eq!(texts.get("not a name"), None);
    }
}
