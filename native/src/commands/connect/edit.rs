//! What `connect` and `disconnect` write, as pure functions of the files' texts: the client's
//! servers move to mcp-sieve's servers file and one `sieve` entry takes their place; the way
//! back restores the client's own bytes when nothing else changed, else puts the servers back
//! into the file as it is now (the user's edits kept). Every other key of the client's file
//! stays, in its order (serde_json keeps order here), written with the file's own indentation.
//! The files of clients that read JSON with comments (VS Code, Zed) are edited in place by
//! `jsonc-parser`'s concrete syntax tree: only the entries that move change, and every comment,
//! trailing comma and the user's formatting elsewhere stay as they were.

use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

use super::clients::Client;

/// The name of the entry that launches mcp-sieve.
pub const ENTRY: &str = "sieve";

/// What `connect` writes.
#[derive(Debug)]
pub struct Connected {
    /// The client's file.
    pub client: String,
    /// mcp-sieve's servers file.
    pub servers: String,
    /// The servers moved.
    pub moved: Vec<String>,
    /// Whether the client's file as it is now is the one to back up (no backup of a connect
    /// holds it yet).
    pub backup: bool,
}

/// What `disconnect` writes.
#[derive(Debug)]
pub struct Disconnected {
    /// The client's file (`None`: remove it, it did not exist before connect).
    pub client: Option<String>,
    /// mcp-sieve's servers file.
    pub servers: String,
    /// Whether the client's file is its backup, byte for byte.
    pub exact: bool,
    /// What the user should know (servers not put back, and why).
    pub notes: Vec<String>,
}

/// Why a client's file or the servers file is not edited (each says it was left untouched).
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// A file that may hold comments is not valid JSON with comments (its line and column).
    #[error(
        "{file}:{}:{}: not valid JSON with comments: {}; it was left untouched",
        .source.line_display(),
        .source.column_display(),
        .source.kind()
    )]
    Jsonc {
        /// The file, as named to the user.
        file: String,
        /// The parser's error.
        #[source]
        source: jsonc_parser::errors::ParseError,
    },
    /// A file is not valid JSON (its line and column, as `mcp_config` says them).
    #[error("{}; it was left untouched", crate::config::mcp_config::Problem::syntax(.source).show(.file))]
    Json {
        /// The file, as named to the user.
        file: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A file's JSON is not an object.
    #[error("{file}: must be a JSON object; it was left untouched")]
    NotObject {
        /// The file.
        file: String,
    },
    /// A server list is not an object.
    #[error("{file}: {key} must be an object of \"<name>\": {{server}}; it was left untouched")]
    NotServers {
        /// The file.
        file: String,
        /// The list's key.
        key: String,
    },
    /// A connected client's file has servers added since connect.
    #[error(
        "{file} is connected already and has servers added since: {}; run `mcp-sieve disconnect {client}` and connect again to move them too (nothing was changed)",
        .added.join(", ")
    )]
    AddedSince {
        /// The client's file.
        file: String,
        /// The servers added.
        added: Vec<String>,
        /// The client's name.
        client: &'static str,
    },
    /// A server name in both files, with different definitions.
    #[error(
        "a server named \"{name}\" is in both {file} ({key}.{name}) and {servers_file} (mcpServers.{name}), and they differ: rename one of them (nothing was changed)"
    )]
    Clash {
        /// The server's name.
        name: String,
        /// The client's file.
        file: String,
        /// The client's list key.
        key: &'static str,
        /// mcp-sieve's servers file.
        servers_file: String,
    },
}

/// JSON with comments as VS Code and Zed read it: `//` and `/* */` comments and trailing
/// commas, nothing else beyond JSON.
fn jsonc() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The syntax tree of a client file with comments, or an error naming the file, line and column.
fn tree(file: &str, text: &str) -> Result<CstRootNode, EditError> {
    CstRootNode::parse(text, &jsonc()).map_err(|source| EditError::Jsonc {
        file: file.into(),
        source,
    })
}

/// The JSON object in `text` (`file` for messages; an empty text is an empty object), or an
/// error naming the file, line and column. A client that reads comments (VS Code, Zed) may have
/// them, and trailing commas.
pub fn parse(client: Option<Client>, file: &str, text: &str) -> Result<Map<String, Value>, EditError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let value = if client.is_some_and(Client::allows_comments) {
        tree(file, text)?.to_serde_value()
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => Some(v),
            Err(source) => {
                return Err(EditError::Json {
                    file: file.into(),
                    source,
                })
            }
        }
    };
    match value {
        Some(Value::Object(o)) => Ok(o),
        _ => Err(EditError::NotObject { file: file.into() }),
    }
}

/// `v` as the syntax tree's input.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

/// The client file `text` (one that may hold comments) with the server list under `key` edited
/// in place: the entries `out` names removed (with the comments written on their lines), `add`
/// appended; everything else byte for byte as it was.
fn edit_in_place(
    file: &str,
    text: &str,
    key: &str,
    out: &dyn Fn(&str, &Value) -> bool,
    add: &[(String, Value)],
) -> Result<String, EditError> {
    let root = tree(file, text)?;
    let Some(doc) = root.object_value() else {
        return Err(EditError::NotObject { file: file.into() });
    };
    // An absent or `null` list becomes an object (any other value was refused before).
    let list = doc.object_value_or_set(key);
    for p in list.properties() {
        let name = p.decoded_name();
        let value = p.value().and_then(|v| v.to_serde_value());
        if let (Some(name), Some(value)) = (name, value) {
            if out(&name, &value) {
                p.remove();
            }
        }
    }
    for (name, value) in add {
        list.append(name, input(value));
    }
    Ok(root.to_string())
}

/// Whether a server entry launches mcp-sieve.
pub fn launches_sieve(entry: &Value) -> bool {
    let is_sieve = |s: &str| {
        s.rsplit(['/', '\\'])
            .next()
            .is_some_and(|b| b == "mcp-sieve" || b == "mcp-sieve.exe")
    };
    match entry.get("command") {
        Some(Value::String(c)) => is_sieve(c),
        Some(Value::Object(c)) => c.get("path").and_then(Value::as_str).is_some_and(is_sieve),
        _ => false,
    }
}

/// `doc` as text, indented like `like` (two spaces when it says nothing), ending in a newline
/// when `like` does (or is empty).
pub fn render(doc: &Map<String, Value>, like: &str) -> String {
    let indent = like
        .lines()
        .skip(1)
        .find(|l| l.starts_with([' ', '\t']))
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .unwrap_or("  ");
    // Pretty output indents by two spaces, and no string holds a raw newline: each line's
    // leading spaces are its depth.
    let pretty = serde_json::to_string_pretty(doc).unwrap_or_default();
    let mut s = String::with_capacity(pretty.len());
    for (i, line) in pretty.lines().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let body = line.trim_start_matches(' ');
        s.push_str(&indent.repeat((line.len() - body.len()) / 2));
        s.push_str(body);
    }
    if like.is_empty() || like.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The servers object under `key` of `doc` (empty when absent), or an error naming it.
fn servers_of(doc: &Map<String, Value>, key: &str, file: &str) -> Result<Map<String, Value>, EditError> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(o)) => Ok(o.clone()),
        Some(_) => Err(EditError::NotServers {
            file: file.into(),
            key: key.into(),
        }),
    }
}

/// The servers (not launching mcp-sieve) a client file holds.
fn own_servers(client: Client, doc: &Map<String, Value>, file: &str) -> Result<Map<String, Value>, EditError> {
    Ok(servers_of(doc, client.key(), file)?
        .into_iter()
        .filter(|(_, v)| !launches_sieve(v))
        .collect())
}

/// Moves the servers of the client file `text` (at `file`) into the servers file
/// `servers_text` (at `servers_file`) and gives the client `entry`. `connected_before`: a
/// backup of an earlier connect exists.
pub fn connect(
    client: Client,
    (file, text): (&str, &str),
    (servers_file, servers_text): (&str, &str),
    entry: &Value,
    connected_before: bool,
) -> Result<Connected, EditError> {
    let mut doc = parse(Some(client), file, text)?;
    let mut store = parse(None, servers_file, servers_text)?;
    let key = client.key();
    let current = servers_of(&doc, key, file)?;
    let moving = own_servers(client, &doc, file)?;
    let has_entry = current.values().any(launches_sieve);
    if has_entry && connected_before && !moving.is_empty() {
        return Err(EditError::AddedSince {
            file: file.into(),
            added: moving.keys().cloned().collect(),
            client: client.name(),
        });
    }
    let mut held = servers_of(&store, "mcpServers", servers_file)?;
    for (name, server) in &moving {
        let portable = client.portable(server);
        match held.get(name) {
            Some(there) if *there != portable => {
                return Err(EditError::Clash {
                    name: name.clone(),
                    file: file.into(),
                    key,
                    servers_file: servers_file.into(),
                })
            }
            Some(_) => {}
            None => {
                held.insert(name.clone(), portable);
            }
        }
    }
    // A VS Code file's inputs go along, for the servers that use them.
    if let Some(Value::Array(inputs)) = doc.get("inputs") {
        let mut mine = match store.get("inputs") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        for input in inputs {
            if !mine.iter().any(|m| m.get("id") == input.get("id")) {
                mine.push(input.clone());
            }
        }
        store.insert("inputs".into(), Value::Array(mine));
    }
    store.insert("mcpServers".into(), Value::Object(held));
    // The client's list: its servers and older mcp-sieve entries out, ours in (where it was).
    let mut list = Map::new();
    for (name, v) in &current {
        if !moving.contains_key(name) && !launches_sieve(v) {
            list.insert(name.clone(), v.clone());
        }
    }
    list.insert(ENTRY.into(), entry.clone());
    doc.insert(key.into(), Value::Object(list));
    let client_text = if client.allows_comments() && !text.trim().is_empty() {
        let out = |name: &str, v: &Value| moving.contains_key(name) || launches_sieve(v) || name == ENTRY;
        edit_in_place(file, text, key, &out, &[(ENTRY.into(), entry.clone())])?
    } else {
        render(&doc, text)
    };
    let servers_out = render(&store, servers_text);
    Ok(Connected {
        client: if client_text == text || same(Some(client), text, &doc) {
            text.to_string()
        } else {
            client_text
        },
        servers: if same(None, servers_text, &store) {
            servers_text.to_string()
        } else {
            servers_out
        },
        moved: moving.keys().cloned().collect(),
        backup: !(connected_before && has_entry),
    })
}

/// Whether `text` (a file of `client`, or else the servers file) parses to `doc` (so it need
/// not be rewritten).
fn same(client: Option<Client>, text: &str, doc: &Map<String, Value>) -> bool {
    !text.trim().is_empty() && parse(client, "", text).is_ok_and(|d| d == *doc)
}

/// Gives the client back its servers: `backup` is its file before `connect` (empty: it did not
/// exist). The client's bytes are the backup's when the file is as `connect` left it and the
/// moved servers are unchanged in the servers file; otherwise the servers file's entries go into
/// the file as it is now (its other edits kept; a name the user reused there keeps the user's).
pub fn disconnect(
    client: Client,
    (file, text): (&str, &str),
    backup: &str,
    (servers_file, servers_text): (&str, &str),
) -> Result<Disconnected, EditError> {
    let key = client.key();
    let mut doc = parse(Some(client), file, text)?;
    let before = parse(Some(client), &format!("{file} (its backup)"), backup)?;
    let mut store = parse(None, servers_file, servers_text)?;
    let moved = own_servers(client, &before, file)?;
    let mut held = servers_of(&store, "mcpServers", servers_file)?;
    let mut notes = Vec::new();
    // Unchanged since connect: the client's file, with our entry out, is the backup with the
    // moved servers out; and each moved server is the same in the servers file.
    let without = |doc: &Map<String, Value>, out: &dyn Fn(&str, &Value) -> bool| {
        let mut d = doc.clone();
        if let Some(Value::Object(list)) = d.get_mut(key) {
            list.retain(|k, v| !out(k, v));
            if list.is_empty() {
                d.shift_remove(key);
            }
        }
        d
    };
    let untouched = without(&doc, &|_, v| launches_sieve(v)) == without(&before, &|k, _| moved.contains_key(k))
        && moved.iter().all(|(k, v)| held.get(k) == Some(&client.portable(v)));
    // A file with comments is also compared as text, so a comment the user wrote since is kept.
    let untouched = untouched
        && (!client.allows_comments()
            || backup.trim().is_empty()
            || edit_in_place(file, text, key, &|_, v| launches_sieve(v), &[])?
                == edit_in_place(file, backup, key, &|k, _| moved.contains_key(k), &[])?);
    let exact = untouched;
    let client_text = if untouched {
        (!backup.is_empty()).then(|| backup.to_string())
    } else {
        let mut list = servers_of(&doc, key, file)?;
        list.retain(|_, v| !launches_sieve(v));
        let mut put_back = Vec::new();
        for name in moved.keys() {
            match (held.get(name), list.contains_key(name)) {
                (None, _) => notes.push(format!(
                    "\"{name}\" is no longer in {servers_file}: not put back"
                )),
                (Some(_), true) => notes.push(format!(
                    "{file} has a server \"{name}\" of its own now: it stays, and {servers_file}'s \"{name}\" stays there"
                )),
                (Some(there), false) => {
                    list.insert(name.clone(), there.clone());
                    put_back.push((name.clone(), there.clone()));
                }
            }
        }
        doc.insert(key.into(), Value::Object(list));
        Some(if client.allows_comments() && !text.trim().is_empty() {
            edit_in_place(file, text, key, &|_, v| launches_sieve(v), &put_back)?
        } else {
            render(&doc, text)
        })
    };
    // The servers put back leave the servers file.
    let restored: Vec<String> = match &client_text {
        Some(t) => {
            let after = parse(Some(client), file, t)?;
            let back = servers_of(&after, key, file)?;
            moved
                .keys()
                .filter(|k| back.contains_key(*k) && !doc_had_own(&doc, key, k, &held))
                .cloned()
                .collect()
        }
        None => moved.keys().cloned().collect(),
    };
    for name in &restored {
        held.shift_remove(name);
    }
    store.insert("mcpServers".into(), Value::Object(held));
    let servers = if same(None, servers_text, &store) {
        servers_text.to_string()
    } else {
        render(&store, servers_text)
    };
    Ok(Disconnected {
        client: client_text,
        servers,
        exact,
        notes,
    })
}

/// Whether the client's current `doc` had a server `name` of its own (not the one put back).
fn doc_had_own(doc: &Map<String, Value>, key: &str, name: &str, held: &Map<String, Value>) -> bool {
    match doc.get(key).and_then(|l| l.get(name)) {
        Some(v) => !launches_sieve(v) && held.get(name) != Some(v),
        None => false,
    }
}
