//! MCP client configurations as upstreams, a pure conversion: Claude Desktop, Cursor and Claude
//! Code (`mcpServers`: `command`/`args`/`env`/`cwd`, or `url`/`headers`/`type`), VS Code
//! (`servers` with `type`, `inputs`; also `mcp.servers` inside a settings file) → the catalog
//! document's `upstreams` object (`{"name": {"command","args","env","cwd"} | {"url","headers"}}`).
//! `${env:NAME}`, `${NAME}` and `${NAME:-default}` are resolved from the environment given;
//! `${input:ID}` takes the VS Code input's `default` or is an error (nothing here can prompt).
//! Unknown fields are warnings; errors name the file, the line and the field, and all of them
//! are reported at once.

use serde_json::{json, Map, Value};

/// One problem in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line and column of the field (0: unknown).
    pub line: usize,
    pub column: usize,
    /// The field's path, e.g. `mcpServers.github.env.TOKEN`.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl Problem {
    /// `file:line:column: field: message`.
    pub fn show(&self, file: &str) -> String {
        let at = match (self.line, self.column) {
            (0, _) => String::new(),
            (l, 0) => format!(":{l}"),
            (l, c) => format!(":{l}:{c}"),
        };
        match self.field.is_empty() {
            true => format!("{file}{at}: {}", self.message),
            false => format!("{file}{at}: {}: {}", self.field, self.message),
        }
    }

    /// A JSON syntax error, at its line and column.
    pub fn syntax(e: &serde_json::Error) -> Problem {
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(i) => &message[..i],
            None => &message,
        };
        Problem {
            line: e.line(),
            column: e.column(),
            field: String::new(),
            message: format!("not valid JSON: {message}"),
        }
    }
}

/// A converted configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Converted {
    /// The `upstreams` object, one entry per server (in the file's order).
    pub upstreams: Map<String, Value>,
    /// Ignored fields and servers left out, for stderr.
    pub warnings: Vec<Problem>,
    /// What makes the configuration unusable (empty: it converted); all of them at once.
    pub errors: Vec<Problem>,
}

/// Whether `doc` looks like an MCP client configuration rather than a catalog document.
pub fn is_client_config(doc: &Value) -> bool {
    let has = |k: &str| doc.get(k).is_some_and(Value::is_object);
    (has("mcpServers") || has("servers") || doc["mcp"]["servers"].is_object())
        && doc.get("tools").is_none()
        && doc.get("upstreams").is_none()
}

/// Fields a server entry may have; the ones mcp-sieve uses first.
const STDIO_FIELDS: [&str; 4] = ["command", "args", "env", "cwd"];
const HTTP_FIELDS: [&str; 2] = ["url", "headers"];

/// Converts the text of a client configuration. `env` looks up environment variables;
/// `workspace` is what VS Code's `${workspaceFolder}` means here.
pub fn convert(text: &str, env: &dyn Fn(&str) -> Option<String>, workspace: &str) -> Converted {
    let doc: Value = match serde_json::from_str(text) {
        Ok(d) => d,
        Err(e) => {
            return Converted {
                errors: vec![Problem::syntax(&e)],
                ..Converted::default()
            }
        }
    };
    let mut c = Conv {
        text,
        env,
        workspace,
        inputs: Map::new(),
        out: Converted::default(),
    };
    let Some(root) = doc.as_object() else {
        c.error(
            &[],
            "must be an object with \"mcpServers\" (Claude Desktop, Cursor, Claude Code) or \"servers\" (VS Code)"
                .into(),
        );
        return c.out;
    };
    let (key, servers): (Vec<&str>, &Value) = if let Some(s) = root.get("mcpServers") {
        (vec!["mcpServers"], s)
    } else if let Some(s) = root.get("servers") {
        (vec!["servers"], s)
    } else if let Some(s) = root.get("mcp").and_then(|m| m.get("servers")) {
        (vec!["mcp", "servers"], s)
    } else {
        let keys: Vec<&str> = root.keys().map(String::as_str).collect();
        c.error(
            &[],
            format!(
                "has neither \"mcpServers\" (Claude Desktop, Cursor, Claude Code) nor \"servers\" (VS Code); its fields are: {}",
                if keys.is_empty() { "none".into() } else { keys.join(", ") }
            ),
        );
        return c.out;
    };
    // A settings file (`mcp.servers`) has the editor's other settings beside it: not warned about.
    for k in root.keys().filter(|_| key[0] != "mcp") {
        if !["mcpServers", "servers", "inputs"].contains(&k.as_str()) {
            c.warn(&[k], "ignored (not a server list)");
        }
    }
    if let Some(inputs) = root
        .get("inputs")
        .or_else(|| root.get("mcp").and_then(|m| m.get("inputs")))
    {
        c.read_inputs(inputs);
    }
    let Some(servers) = servers.as_object() else {
        c.error(
            &key,
            format!("must be an object of \"<name>\": {{server}}, got {}", kind(servers)),
        );
        return c.out;
    };
    for (name, server) in servers {
        let mut path = key.clone();
        path.push(name);
        c.server(&path, name, server);
    }
    c.out
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct Conv<'a> {
    text: &'a str,
    env: &'a dyn Fn(&str) -> Option<String>,
    workspace: &'a str,
    /// VS Code inputs by id: their `default`, if any.
    inputs: Map<String, Value>,
    out: Converted,
}

impl Conv<'_> {
    fn problem(&self, path: &[&str], message: String) -> Problem {
        let (line, column) = mcp_sieve::catalog::locate::position(self.text, path).unwrap_or_default();
        Problem {
            line,
            column,
            field: path.join("."),
            message,
        }
    }

    fn error(&mut self, path: &[&str], message: String) {
        let p = self.problem(path, message);
        self.out.errors.push(p);
    }

    fn warn(&mut self, path: &[&str], message: &str) {
        let p = self.problem(path, message.into());
        self.out.warnings.push(p);
    }

    fn read_inputs(&mut self, inputs: &Value) {
        let Some(list) = inputs.as_array() else {
            self.warn(&["inputs"], "ignored (must be an array)");
            return;
        };
        for input in list {
            if let Some(id) = input.get("id").and_then(Value::as_str) {
                self.inputs
                    .insert(id.into(), input.get("default").cloned().unwrap_or(Value::Null));
            }
        }
    }

    /// `s` with every `${…}` reference resolved, each once: a value is never read again as a
    /// template; `None` after an error (recorded). In a field the catalog resolves `${NAME}` in
    /// again (`secrets`: `headers`, `env`), a variable whose value holds `${` is written as the
    /// reference `${NAME}` instead (the catalog resolves it once, from the same environment), so
    /// no value is parsed as a reference there either. No message quotes a value.
    fn resolve(&mut self, path: &[&str], s: &str, secrets: bool) -> Option<String> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let Some(len) = rest[start..].find('}') else {
                self.error(path, format!("\"{s}\" has a ${{ with no closing }}"));
                return None;
            };
            let reference = &rest[start + 2..start + len];
            rest = &rest[start + len + 1..];
            let (name, default) = match reference.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (reference, None),
            };
            let value = if let Some(id) = name.strip_prefix("input:") {
                match self.inputs.get(id) {
                    Some(Value::String(d)) => Some(d.clone()),
                    Some(_) => {
                        self.error(path, format!("uses ${{input:{id}}}, a VS Code prompt with no default; mcp-sieve cannot prompt: put the value in an environment variable and write ${{env:NAME}}"));
                        return None;
                    }
                    None => {
                        self.error(
                            path,
                            format!("uses ${{input:{id}}} but \"inputs\" has no input with id \"{id}\""),
                        );
                        return None;
                    }
                }
            } else if name == "workspaceFolder" {
                Some(self.workspace.to_string())
            } else if name == "userHome" {
                (self.env)("HOME")
            } else {
                let var = name.strip_prefix("env:").unwrap_or(name);
                let known = !var.is_empty()
                    && !var.starts_with(|c: char| c.is_ascii_digit())
                    && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !known {
                    self.error(path, format!("\"${{{reference}}}\" is not a reference mcp-sieve knows (${{env:NAME}}, ${{NAME}}, ${{NAME:-default}}, ${{input:ID}}, ${{workspaceFolder}}; a NAME is letters, digits and _, not starting with a digit)"));
                    return None;
                }
                match (self.env)(var) {
                    // Resolved by the catalog, once (see above).
                    Some(v) if secrets && v.contains("${") => {
                        out.push_str(&format!("${{{var}}}"));
                        continue;
                    }
                    Some(v) => Some(v),
                    None => default.map(str::to_string),
                }
            };
            if secrets && value.as_ref().is_some_and(|v| v.contains("${")) {
                self.error(path, format!("the value of ${{{reference}}} holds \"${{\", which this field would read as a secret reference; write the value into an environment variable and use ${{env:NAME}}"));
                return None;
            }
            match value {
                Some(v) => out.push_str(&v),
                None => {
                    self.error(
                        path,
                        format!(
                            "the environment variable {} is not set",
                            name.strip_prefix("env:").unwrap_or(name)
                        ),
                    );
                    return None;
                }
            }
        }
        out.push_str(rest);
        Some(out)
    }

    /// A string field (resolved); `None` when absent or wrong (recorded).
    fn string(&mut self, path: &[&str], v: Option<&Value>) -> Option<String> {
        match v? {
            Value::String(s) => self.resolve(path, s, false),
            other => {
                self.error(path, format!("must be a string, got {}", kind(other)));
                None
            }
        }
    }

    /// An object of strings (resolved).
    fn strings(&mut self, path: &[&str], v: Option<&Value>) -> Option<Map<String, Value>> {
        let obj = match v? {
            Value::Object(o) => o,
            other => {
                self.error(path, format!("must be an object of strings, got {}", kind(other)));
                return None;
            }
        };
        let mut out = Map::new();
        for (k, v) in obj {
            let p = [path, &[k.as_str()]].concat();
            let value = match v {
                // Numbers and booleans in env are written as text by clients; take them the same way.
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                Value::String(s) => self.resolve(&p, s, true),
                other => {
                    self.error(&p, format!("must be a string, got {}", kind(other)));
                    None
                }
            };
            if let Some(value) = value {
                out.insert(k.clone(), json!(value));
            }
        }
        Some(out)
    }

    fn server(&mut self, path: &[&str], name: &str, v: &Value) {
        let Some(obj) = v.as_object() else {
            self.error(
                path,
                format!("must be an object with \"command\" or \"url\", got {}", kind(v)),
            );
            return;
        };
        if obj.get("disabled") == Some(&Value::Bool(true)) {
            self.warn(path, "left out (\"disabled\": true)");
            return;
        }
        let ty = obj.get("type").and_then(Value::as_str);
        let (has_command, has_url) = (obj.contains_key("command"), obj.contains_key("url"));
        let stdio = match (ty, has_command, has_url) {
            (Some("stdio"), _, _) | (None, true, false) => true,
            (Some("http" | "streamable-http" | "streamableHttp"), _, _) | (None, false, true) => false,
            (Some("sse"), _, _) => {
                self.warn(path, "left out: the old HTTP+SSE transport (\"type\": \"sse\") is not supported; if the server also speaks Streamable HTTP, write \"type\": \"http\" and its /mcp URL");
                return;
            }
            (Some(other), _, _) => {
                self.error(
                    &[path, &["type"]].concat(),
                    format!("\"{other}\" is not a transport mcp-sieve knows; expected stdio or http"),
                );
                return;
            }
            (None, true, true) => {
                self.error(
                    path,
                    "has both \"command\" and \"url\"; keep one (or say \"type\")".into(),
                );
                return;
            }
            (None, false, false) => {
                self.error(
                    path,
                    "needs \"command\" (a stdio server) or \"url\" (an HTTP server)".into(),
                );
                return;
            }
        };
        // `npx mcp-remote <url> [--header "Name: value"]…` wraps a remote server in a stdio
        // bridge: mcp-sieve reaches the server itself, over HTTPS (and signs in where it asks).
        if stdio {
            if let Some(remote) = mcp_remote(obj) {
                self.remote(path, name, obj, remote);
                return;
            }
        }
        // A client configuration usually lists mcp-sieve itself: launching it again would recurse.
        let launches_sieve = stdio
            && std::iter::once(obj.get("command"))
                .chain(
                    obj.get("args")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(Some),
                )
                .filter_map(|v| v.and_then(Value::as_str))
                .any(|a| {
                    a.rsplit(['/', '\\'])
                        .next()
                        .is_some_and(|b| b == "mcp-sieve" || b == "mcp-sieve.exe")
                });
        if launches_sieve {
            self.warn(path, "left out: it launches mcp-sieve itself");
            return;
        }
        let known: &[&str] = if stdio { &STDIO_FIELDS } else { &HTTP_FIELDS };
        for k in obj.keys() {
            if k != "type" && k != "disabled" && !known.contains(&k.as_str()) {
                self.warn(&[path, &[k.as_str()]].concat(), "ignored (not used by mcp-sieve)");
            }
        }
        let errors = self.out.errors.len();
        let mut up = Map::new();
        let p = |k: &'static str| [path, &[k]].concat();
        if stdio {
            let f = p("command");
            match self.string(&f, obj.get("command")) {
                Some(c) if !c.trim().is_empty() => {
                    up.insert("command".into(), json!(c));
                }
                Some(_) => self.error(&f, "must not be empty".into()),
                None if obj.get("command").is_none() => self.error(&f, "is required for a stdio server".into()),
                None => {}
            }
            let f = p("args");
            match obj.get("args") {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) => {
                    let mut args = Vec::new();
                    for (i, x) in a.iter().enumerate() {
                        let i = i.to_string();
                        if let Some(s) = self.string(&[&f[..], &[i.as_str()]].concat(), Some(x)) {
                            args.push(json!(s));
                        }
                    }
                    up.insert("args".into(), Value::Array(args));
                }
                Some(other) => self.error(&f, format!("must be an array of strings, got {}", kind(other))),
            }
            for k in ["env", "cwd"] {
                let f = p(k);
                let value = if k == "env" {
                    self.strings(&f, obj.get(k)).map(Value::Object)
                } else {
                    self.string(&f, obj.get(k)).map(Value::String)
                };
                if let Some(v) = value {
                    up.insert(k.into(), v);
                }
            }
        } else {
            let f = p("url");
            match self.string(&f, obj.get("url")) {
                Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
                    up.insert("url".into(), json!(u));
                }
                // The URL as written (its variables' values may be secrets).
                Some(_) => {
                    let written = obj.get("url").and_then(Value::as_str).unwrap_or_default();
                    self.error(&f, format!("must be an http:// or https:// URL, got \"{written}\""))
                }
                None if obj.get("url").is_none() => self.error(&f, "is required for an HTTP server".into()),
                None => {}
            }
            let f = p("headers");
            if let Some(h) = self.strings(&f, obj.get("headers")) {
                up.insert("headers".into(), Value::Object(h));
            }
        }
        if self.out.errors.len() != errors {
            return;
        }
        self.add(path, name, up);
    }

    /// An `mcp-remote` entry as the direct HTTP upstream it bridges to: its URL, and its
    /// `--header "Name: value"` arguments, `${VAR}` in them read from the entry's `env` first
    /// (as mcp-remote does), then the environment. Its other options are said to be ignored.
    fn remote(&mut self, path: &[&str], name: &str, obj: &Map<String, Value>, remote: Remote) {
        let errors = self.out.errors.len();
        let f = [path, &["args"]].concat();
        let env: Map<String, Value> = obj.get("env").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut up = Map::new();
        match self.resolve(&f, &remote.url, false) {
            Some(u) if u.starts_with("http://") || u.starts_with("https://") => drop(up.insert("url".into(), json!(u))),
            Some(_) => self.error(
                &f,
                format!("mcp-remote's URL must be http:// or https://, got \"{}\"", remote.url),
            ),
            None => {}
        }
        let mut headers = Map::new();
        for h in &remote.headers {
            let Some((k, v)) = h.split_once(':') else {
                self.error(&f, format!("mcp-remote's --header \"{h}\" must be \"Name: value\""));
                continue;
            };
            // The entry's own env first, as mcp-remote substitutes it.
            let own = |n: &str| env.get(n).and_then(Value::as_str).map(str::to_string);
            let mut value = v.trim().to_string();
            for (n, val) in env.keys().filter_map(|n| Some((n.clone(), own(n)?))) {
                value = value.replace(&format!("${{{n}}}"), &val);
            }
            if let Some(v) = self.resolve(&f, &value, true) {
                headers.insert(k.trim().to_string(), json!(v));
            }
        }
        if !headers.is_empty() {
            up.insert("headers".into(), Value::Object(headers));
        }
        if let Some(info) = &remote.client_info {
            if let Some(auth) = self.client_info(&f, info) {
                up.insert("auth".into(), auth);
            }
        }
        for ignored in &remote.ignored {
            self.warn(
                &f,
                &format!("mcp-remote's {ignored} is ignored: mcp-sieve reaches the server itself"),
            );
        }
        if self.out.errors.len() == errors {
            self.add(path, name, up);
        }
    }

    /// mcp-remote's `--static-oauth-client-info '{"client_id": …, "client_secret": …}'` as the
    /// upstream's `auth` (its pre-registered client; the secret may be a `${NAME}`).
    fn client_info(&mut self, f: &[&str], info: &str) -> Option<Value> {
        let bad = "mcp-remote's --static-oauth-client-info must be a JSON object with a \"client_id\" string";
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(info) else {
            self.error(f, bad.into());
            return None;
        };
        let Some(id) = o.get("client_id").and_then(Value::as_str) else {
            self.error(f, bad.into());
            return None;
        };
        let mut auth = Map::from_iter([("type".into(), json!("oauth")), ("clientId".into(), json!(id))]);
        if let Some(secret) = o.get("client_secret").and_then(Value::as_str) {
            auth.insert("clientSecret".into(), json!(self.resolve(f, secret, true)?));
        }
        Some(Value::Object(auth))
    }

    /// Adds the upstream `up` for the server `name`.
    fn add(&mut self, path: &[&str], name: &str, up: Map<String, Value>) {
        // An upstream's name is 1 to 64 letters, digits, '_' or '-' (its tools are `<name>_…`).
        let mut id: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
            .take(64)
            .collect();
        if id.is_empty() {
            id = "server".into();
        }
        if id != name {
            self.warn(
                path,
                &format!("named \"{id}\" as an upstream (letters, digits, _ and - only)"),
            );
        }
        if self.out.upstreams.contains_key(&id) {
            self.error(
                path,
                format!("its upstream name \"{id}\" is taken by another server; rename one"),
            );
            return;
        }
        self.out.upstreams.insert(id, Value::Object(up));
    }
}

/// What an `mcp-remote` launch line says.
#[derive(Debug, PartialEq)]
struct Remote {
    url: String,
    /// `--header` values, as written (`Name: value`).
    headers: Vec<String>,
    /// `--static-oauth-client-info`'s JSON (`{"client_id", "client_secret"}`): the client
    /// registered beforehand with a server that has no dynamic registration.
    client_info: Option<String>,
    /// Options mcp-sieve does not need (said in a warning).
    ignored: Vec<String>,
}

/// The `mcp-remote` bridge an entry launches (`npx [-y] mcp-remote[@version] <url> …`, the same
/// through `bunx`/`pnpx`/`pnpm dlx`/`yarn dlx`, or `mcp-remote` itself), if it does.
fn mcp_remote(obj: &Map<String, Value>) -> Option<Remote> {
    let command = obj.get("command")?.as_str()?;
    let base = command
        .rsplit(['/', '\\'])
        .next()?
        .trim_end_matches(".cmd")
        .trim_end_matches(".exe");
    let args: Vec<&str> = obj.get("args")?.as_array()?.iter().filter_map(Value::as_str).collect();
    let is_bridge = |a: &str| a == "mcp-remote" || a.starts_with("mcp-remote@");
    let rest: &[&str] = if is_bridge(base) {
        &args
    } else if matches!(base, "npx" | "bunx" | "pnpx" | "pnpm" | "yarn") {
        let at = args.iter().position(|a| is_bridge(a))?;
        // Only launcher flags before it (`-y`, `--yes`, `dlx`, `-p pkg`…), never another package.
        if args[..at].iter().any(|a| !a.starts_with('-') && *a != "dlx") {
            return None;
        }
        &args[at + 1..]
    } else {
        return None;
    };
    let (url, options) = rest.split_first()?;
    let mut remote = Remote {
        url: url.to_string(),
        headers: Vec::new(),
        client_info: None,
        ignored: Vec::new(),
    };
    let mut it = options.iter();
    while let Some(a) = it.next() {
        match *a {
            "--header" => remote.headers.extend(it.next().map(|h| h.to_string())),
            "--static-oauth-client-info" if it.as_slice().first().is_some_and(|v| !v.starts_with('@')) => {
                remote.client_info = it.next().map(|v| v.to_string());
            }
            "--transport"
            | "--host"
            | "--resource"
            | "--auth-timeout"
            | "--static-oauth-client-metadata"
            | "--static-oauth-client-info" => {
                remote.ignored.push(format!("{a} {}", it.next().unwrap_or(&"")));
            }
            other => remote.ignored.push(other.to_string()),
        }
    }
    Some(remote)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "GITHUB_TOKEN" => Some("ghp_x".into()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    fn ok(text: &str) -> Converted {
        let c = convert(text, &env, "/ws");
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        c
    }

    fn errors(text: &str) -> Vec<Problem> {
        convert(text, &env, "/ws").errors
    }

    /// Issue 38, item 10: a variable is expanded once: a value holding `${…}` is never read as a
    /// template again (here, nor by the catalog that resolves `headers` and `env`), and no
    /// message quotes a value.
    #[test]
    fn a_value_is_expanded_once_and_never_quoted() {
        let env = |name: &str| match name {
            "WEB_TOKEN" => Some("pw-${OTHER}-end".to_string()),
            "ODD" => Some("s3cr3t-${1x}-tail".to_string()),
            "OTHER" => Some("other-value".to_string()),
            "URL" => Some("ftp://user:hunter2@x".to_string()),
            _ => None,
        };
        let c = convert(
            r#"{"mcpServers": {
  "web": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${WEB_TOKEN}", "X-Odd": "${env:ODD}"}},
  "local": {"command": "node", "args": ["${WEB_TOKEN}"], "env": {"T": "${WEB_TOKEN}", "D": "${NOPE:-${X}"}}
}}"#,
            &env,
            "/ws",
        );
        // Headers and env keep the reference (the catalog resolves it once); args take the value as it is.
        assert_eq!(
            c.upstreams["web"]["headers"],
            json!({"Authorization": "Bearer ${WEB_TOKEN}", "X-Odd": "${ODD}"})
        );
        assert_eq!(
            c.upstreams.get("local"),
            None,
            "a default holding ${{ is refused: {:?}",
            c.errors
        );
        let shown: Vec<String> = c.errors.iter().map(|p| p.show("f")).collect();
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(shown[0].contains("mcpServers.local.env.D"), "{shown:?}");
        // The catalog resolves the reference once: the value, `${OTHER}` and all.
        let named = json!({"web": c.upstreams["web"].clone()});
        let ups = mcp_sieve::catalog::Upstream::parse_all(None, Some(&named)).unwrap();
        let headers = ups[0].resolved_headers(&env).unwrap();
        assert_eq!(headers[0].1, "Bearer pw-${OTHER}-end");
        assert_eq!(headers[1].1, "s3cr3t-${1x}-tail");

        // No message quotes a value: a bad URL shows what was written.
        let c = convert(r#"{"mcpServers": {"u": {"url": "${URL}"}}}"#, &env, "/ws");
        let shown: Vec<String> = c.errors.iter().map(|p| p.show("f")).collect();
        assert!(shown.iter().all(|m| !m.contains("hunter2")), "{shown:?}");
        assert!(shown[0].contains("\"${URL}\""), "{shown:?}");
        // A reference whose name starts with a digit is not one.
        let c = convert(
            r#"{"mcpServers": {"u": {"url": "https://x", "headers": {"A": "${1x}"}}}}"#,
            &env,
            "/ws",
        );
        assert!(c.errors[0].show("f").contains("is not a reference"), "{:?}", c.errors);
    }

    #[test]
    fn claude_desktop_servers_become_upstreams() {
        let c = ok(r#"{
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"]},
    "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}},
    "memory": {"type": "stdio", "command": "node", "args": ["m.js"], "env": {"DEBUG": "${NOPE:-0}", "N": 3}, "cwd": "/tmp"}
  }
}"#);
        assert_eq!(
            Value::Object(c.upstreams),
            json!({
                "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/notes"]},
                "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ghp_x"}},
                "memory": {"command": "node", "args": ["m.js"], "env": {"DEBUG": "0", "N": "3"}, "cwd": "/tmp"}
            })
        );
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn vs_code_servers_with_inputs() {
        let c = ok(r#"{
  "inputs": [{"type": "promptString", "id": "region", "description": "Region", "default": "eu"}],
  "servers": {
    "api": {"type": "http", "url": "https://x.example/mcp", "headers": {"X-Region": "${input:region}"}},
    "local": {"type": "stdio", "command": "${workspaceFolder}/bin/server", "envFile": "${workspaceFolder}/.env"}
  }
}"#);
        assert_eq!(c.upstreams["api"]["headers"]["X-Region"], "eu");
        assert_eq!(c.upstreams["local"]["command"], "/ws/bin/server");
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(c.warnings[0].field, "servers.local.envFile");
        assert_eq!(c.warnings[0].line, 5);
        // settings.json nests the list under "mcp".
        let c = ok(r#"{"editor.fontSize": 12, "mcp": {"servers": {"a": {"command": "x"}}}}"#);
        assert_eq!(c.upstreams["a"]["command"], "x");
    }

    #[test]
    fn a_prompt_without_default_is_a_clear_error() {
        let e = errors(
            r#"{"inputs": [{"type": "promptString", "id": "key", "password": true}],
  "servers": {"s": {"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${input:key}"}}}}"#,
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "servers.s.headers.Authorization");
        assert_eq!(e[0].line, 2);
        assert!(e[0].message.contains("cannot prompt"), "{}", e[0].message);
    }

    #[test]
    fn every_error_is_reported_with_file_line_and_field() {
        let text = r#"{
  "mcpServers": {
    "a": {"command": 5},
    "b": {"url": "ftp://x"},
    "c": {"command": "x", "env": {"T": "${MISSING}"}},
    "d": {"type": "carrier-pigeon"},
    "e": "npx server"
  }
}"#;
        let e = errors(text);
        let shown: Vec<String> = e.iter().map(|p| p.show("cfg.json")).collect();
        assert_eq!(
            shown,
            [
                "cfg.json:3:11: mcpServers.a.command: must be a string, got a number",
                "cfg.json:4:11: mcpServers.b.url: must be an http:// or https:// URL, got \"ftp://x\"",
                "cfg.json:5:35: mcpServers.c.env.T: the environment variable MISSING is not set",
                "cfg.json:6:11: mcpServers.d.type: \"carrier-pigeon\" is not a transport mcp-sieve knows; expected stdio or http",
                "cfg.json:7:5: mcpServers.e: must be an object with \"command\" or \"url\", got a string",
            ]
        );
    }

    #[test]
    fn broken_json_names_its_line() {
        let e = errors("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}");
        assert_eq!(e[0].line, 3);
        assert!(e[0].message.starts_with("not valid JSON"));
        let e = errors("{\"tools\": []}");
        assert!(e[0].message.contains("neither \"mcpServers\""), "{:?}", e[0]);
    }

    #[test]
    fn unknown_fields_and_old_transports_are_warnings() {
        let c = ok(r#"{"mcpServers": {
  "a": {"command": "x", "autoApprove": [], "timeout": 60},
  "b": {"type": "sse", "url": "https://old/sse"},
  "c": {"command": "y", "disabled": true}
}, "globalShortcut": "x"}"#);
        assert_eq!(c.upstreams.keys().collect::<Vec<_>>(), ["a"]);
        let fields: Vec<&str> = c.warnings.iter().map(|w| w.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "globalShortcut",
                "mcpServers.a.autoApprove",
                "mcpServers.a.timeout",
                "mcpServers.b",
                "mcpServers.c"
            ]
        );
    }

    #[test]
    fn mcp_remote_entries_become_direct_upstreams() {
        let c = ok(r#"{"mcpServers": {
            "linear": {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.linear.app/mcp"]},
            "sentry": {"command": "npx", "args": ["mcp-remote@0.1.29", "https://mcp.sentry.dev/mcp",
                "--header", "Authorization:${AUTH_HEADER}", "--transport", "http-only", "9696"],
                "env": {"AUTH_HEADER": "Bearer s3cr3t"}},
            "other": {"command": "npx", "args": ["-y", "some-server", "mcp-remote"]}
        }}"#);
        assert_eq!(c.upstreams["linear"], json!({"url": "https://mcp.linear.app/mcp"}));
        assert_eq!(
            c.upstreams["sentry"],
            json!({"url": "https://mcp.sentry.dev/mcp", "headers": {"Authorization": "Bearer s3cr3t"}})
        );
        assert!(
            c.upstreams["other"].get("command").is_some(),
            "another package is left as it is"
        );
        let warned: Vec<String> = c.warnings.iter().map(|w| w.message.clone()).collect();
        assert!(
            warned.iter().any(|w| w.contains("--transport http-only is ignored")),
            "{warned:?}"
        );
        assert!(!warned.iter().any(|w| w.contains("s3cr3t")), "{warned:?}");
        let e = errors(
            r#"{"mcpServers": {"x": {"command": "npx", "args": ["mcp-remote", "ftp://x", "--header", "nocolon"]}}}"#,
        );
        assert!(
            e.iter().any(|p| p.message.contains("must be http:// or https://")),
            "{e:?}"
        );
        assert!(e.iter().any(|p| p.message.contains("must be \"Name: value\"")), "{e:?}");
    }

    /// A server without dynamic registration: mcp-remote is given the client registered
    /// beforehand, which becomes the upstream's `auth` (its secret never in a message).
    #[test]
    fn mcp_remote_static_client_info_becomes_auth() {
        let c = ok(r#"{"mcpServers": {
            "slack": {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.slack.example/mcp",
                "--static-oauth-client-info", "{\"client_id\": \"abc\", \"client_secret\": \"${GITHUB_TOKEN}\"}"]},
            "plain": {"command": "npx", "args": ["mcp-remote", "https://x.example/mcp",
                "--static-oauth-client-info", "{\"client_id\": \"pub\"}"]},
            "file": {"command": "npx", "args": ["mcp-remote", "https://y.example/mcp",
                "--static-oauth-client-info", "@/home/u/client.json"]}
        }}"#);
        assert_eq!(
            c.upstreams["slack"],
            json!({"url": "https://mcp.slack.example/mcp", "auth": {"type": "oauth", "clientId": "abc", "clientSecret": "ghp_x"}})
        );
        assert_eq!(
            c.upstreams["plain"]["auth"],
            json!({"type": "oauth", "clientId": "pub"})
        );
        assert_eq!(c.upstreams["file"], json!({"url": "https://y.example/mcp"}));
        let warned: Vec<String> = c.warnings.iter().map(|w| w.message.clone()).collect();
        assert!(
            warned
                .iter()
                .any(|w| w.contains("--static-oauth-client-info @/home/u/client.json is ignored")),
            "{warned:?}"
        );
        assert!(!warned.iter().any(|w| w.contains("ghp_x")), "{warned:?}");
        let e = errors(
            r#"{"mcpServers": {"x": {"command": "npx", "args": ["mcp-remote", "https://x", "--static-oauth-client-info", "{}"]}}}"#,
        );
        assert!(e.iter().any(|p| p.message.contains("\"client_id\" string")), "{e:?}");
    }

    #[test]
    fn mcp_sieve_itself_is_left_out() {
        let c = ok(r#"{"mcpServers": {
  "sieve": {"command": "/usr/local/bin/mcp-sieve", "args": ["stdio", "--mcp-config", "this.json"]},
  "npx-sieve": {"command": "npx", "args": ["-y", "mcp-sieve", "stdio"]},
  "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
}}"#);
        assert_eq!(c.upstreams.keys().collect::<Vec<_>>(), ["files"]);
        assert!(c.warnings.iter().all(|w| w.message.contains("mcp-sieve itself")));
    }

    #[test]
    fn server_names_become_upstream_names() {
        let c = convert(
            r#"{"mcpServers": {"My Files": {"command": "x"}, "my.files": {"command": "y"}, "ok-1": {"command": "z"}}}"#,
            &env,
            "/ws",
        );
        assert_eq!(c.upstreams.keys().collect::<Vec<_>>(), ["My_Files", "my_files", "ok-1"]);
        assert_eq!(c.warnings.len(), 2);
        let c = convert(
            r#"{"mcpServers": {"a b": {"command": "x"}, "a_b": {"command": "y"}}}"#,
            &env,
            "/ws",
        );
        assert!(c.errors[0].message.contains("\"a_b\" is taken"), "{:?}", c.errors);
    }

    #[test]
    fn client_configurations_are_told_from_catalogs() {
        assert!(is_client_config(&json!({"mcpServers": {}})));
        assert!(is_client_config(&json!({"servers": {}, "inputs": []})));
        assert!(!is_client_config(&json!({"tools": [], "servers": {}})));
        assert!(!is_client_config(&json!({"upstreams": {}})));
    }
}
