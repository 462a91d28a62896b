//! What a user sees on stderr while the upstreams start (`serve`, `stdio`, `tools`, `init`, and
//! an upstream that joins late): one line per upstream from the gateway's status — which are up
//! with how many tools (and which of them pinning holds back), which failed and why, and when the
//! next try is. Never a header or a secret (the status holds none).

use serde_json::Value;

/// The stderr lines for a gateway status (`{"upstreams": [{name, transport, state, tools, error, retryInMs}]}`).
pub fn lines(status: &Value) -> Vec<String> {
    status["upstreams"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| {
            let name = u["name"].as_str().filter(|n| !n.is_empty()).unwrap_or("upstream");
            let transport = u["transport"].as_str().unwrap_or("?");
            let head = format!("mcp-sieve: {name} ({transport})");
            match u["state"].as_str().unwrap_or("?") {
                "up" => {
                    let held: Vec<&str> = u["quarantined"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    let held = match held.len() {
                        0 => String::new(),
                        n => format!(" ({n} quarantined by pinning: {})", held.join(", ")),
                    };
                    format!("{head}: up, {} tools{held}", u["tools"].as_u64().unwrap_or(0))
                }
                "starting" => format!("{head}: still starting"),
                state => {
                    let why = u["error"].as_str().unwrap_or("no reason given");
                    let retry = u["retryInMs"]
                        .as_i64()
                        .map_or(String::new(), |ms| format!("; tried again in {} s", (ms + 999) / 1000));
                    format!("{head}: {state}, its tools are left out: {why}{retry}")
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_upstream_is_one_line_saying_why() {
        let status = json!({"upstreams": [
            {"name": "files", "transport": "stdio", "state": "up", "tools": 14},
            {"name": "web", "transport": "http", "state": "up", "tools": 3, "quarantined": ["web_fetch", "web_post"]},
            {"name": "broken", "transport": "stdio", "state": "down", "tools": 0, "error": "its process exited (status 3)", "retryInMs": 1500},
            {"name": "api", "transport": "http", "state": "starting"}
        ]});
        assert_eq!(
            lines(&status),
            [
                "mcp-sieve: files (stdio): up, 14 tools",
                "mcp-sieve: web (http): up, 3 tools (2 quarantined by pinning: web_fetch, web_post)",
                "mcp-sieve: broken (stdio): down, its tools are left out: its process exited (status 3); tried again in 2 s",
                "mcp-sieve: api (http): still starting",
            ]
        );
    }
}
