//! Where a field is written in a JSON file, for errors that name the file, the line and the
//! field: the line and column of the member at a path (`views.email.filter.groups[1]`,
//! `mcpServers.a.args.0`), found by reading the text's structure (a parsed value keeps no
//! positions), and the path at the start of the core's catalog messages.

/// The path a core message begins with (`views.email.filter.groups[1] must be…`,
/// `upstreams.github.headers["Authorization"] uses…`), as segments (indices as digits); an
/// unknown field the message names is added (`… has an unknown field "x"`); empty when the
/// message starts with no path.
pub fn leading_path(message: &str) -> Vec<String> {
    if let Some(rest) = message.strip_prefix("unknown top-level field \"") {
        return rest.split('"').next().map(|k| vec![k.to_string()]).unwrap_or_default();
    }
    let token = message.split([' ', ':', ';', ',']).next().unwrap_or_default();
    let mut segs = Vec::new();
    let mut rest = token;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("[\"") {
            let Some(end) = r.find("\"]") else { break };
            segs.push(r[..end].to_string());
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            segs.push(r[..end].to_string());
            rest = &r[end + 1..];
        } else {
            let r = rest.strip_prefix('.').unwrap_or(rest);
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                break;
            }
            segs.push(r[..end].to_string());
            rest = &r[end..];
        }
    }
    if let Some(k) = message
        .split("unknown field \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
    {
        segs.push(k.to_string());
    }
    segs
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// At a `"`: moves past the string's closing quote.
    fn string(&mut self) {
        self.i += 1;
        while let Some(c) = self.peek() {
            self.i += if c == b'\\' { 2 } else { 1 };
            if c == b'"' {
                return;
            }
        }
    }

    /// Moves past the value that starts here.
    fn value(&mut self) {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    match c {
                        b'"' => {
                            self.string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                ) {
                    self.i += 1;
                }
            }
        }
    }

    /// After a member or item: past a `,` (`false` at the end of the container).
    fn comma(&mut self) -> bool {
        self.ws();
        if self.peek() == Some(b',') {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// In an object (at its `{`): the offset of member `key`'s key, leaving the scan at its value.
    fn member(&mut self, key: &str) -> Option<usize> {
        self.i += 1;
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return None;
            }
            let start = self.i;
            self.string();
            let name: String = serde_json::from_slice(&self.b[start..self.i]).ok()?;
            self.ws();
            if self.peek() != Some(b':') {
                return None;
            }
            self.i += 1;
            self.ws();
            if name == key {
                return Some(start);
            }
            self.value();
            if !self.comma() {
                return None;
            }
        }
    }

    /// In an array (at its `[`): the offset of item `n`, leaving the scan at it.
    fn item(&mut self, n: usize) -> Option<usize> {
        self.i += 1;
        for _ in 0..n {
            self.ws();
            self.value();
            if !self.comma() {
                return None;
            }
        }
        self.ws();
        (self.peek().is_some() && self.peek() != Some(b']')).then_some(self.i)
    }
}

/// The 1-based line and column where the field at `path` is written in `text` (an object
/// member's key, an array's item), or of the deepest part of the path that is there; `None`
/// when not even its first part is.
pub fn position(text: &str, path: &[impl AsRef<str>]) -> Option<(usize, usize)> {
    let mut s = Scan {
        b: text.as_bytes(),
        i: 0,
    };
    let mut at = None;
    for seg in path {
        s.ws();
        let found = match s.peek() {
            Some(b'{') => s.member(seg.as_ref()),
            Some(b'[') => seg.as_ref().parse().ok().and_then(|n| s.item(n)),
            _ => None,
        };
        match found {
            Some(i) => at = Some(i),
            None => break,
        }
    }
    let at = at?;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_from_messages() {
        assert_eq!(
            leading_path("views.email.filter.groups[1] must be a string"),
            ["views", "email", "filter", "groups", "1"]
        );
        assert_eq!(
            leading_path("upstreams.github.headers[\"Authorization\"] uses the secret ${X}"),
            ["upstreams", "github", "headers", "Authorization"]
        );
        assert_eq!(leading_path("unknown top-level field \"bogus\"; expected"), ["bogus"]);
        assert_eq!(
            leading_path("views.v has an unknown field \"filters\"; expected"),
            ["views", "v", "filters"]
        );
        assert_eq!(leading_path("tools[2].name is required"), ["tools", "2", "name"]);
    }

    #[test]
    fn fields_are_found_where_they_are_written() {
        let text = "{\n  \"tools\": [\n    {\"name\": \"a\", \"x\": {\"y\": [1, \"]\"]}},\n    {\"name\": \"b\",\n     \"tags\": \"t\"}\n  ],\n  \"views\": {\"v\": {\"mode\": \"grid\"}}\n}";
        assert_eq!(position(text, &["tools", "1", "tags"]), Some((5, 6)));
        assert_eq!(position(text, &["tools", "1"]), Some((4, 5)));
        assert_eq!(position(text, &["views", "v", "mode"]), Some((7, 19)));
        assert_eq!(
            position(text, &["views", "nope"]),
            Some((7, 3)),
            "the deepest part found"
        );
        assert_eq!(position(text, &["nope"]), None);
        assert_eq!(position("[1", &["0", "x"]), Some((1, 2)));
    }
}
