//! The progressive-discovery drafts (issue 27, item 4): the Progressive Disclosure WG's
//! `io.modelcontextprotocol/groups` extension (`groups/list`, `groups/get`, scoped groups left
//! out of the lists of a client that declares it), beside SEP-1300's `groups/list` for every
//! other client; SEP-2564's `uriPatterns` and `filtering` advertisement; SEP-2636's
//! `tools/catalog` and `tools/describe`.

mod common;

use common::{header_fn, response_of, Harness, LEGACY};
use mcp_sieve::http::endpoint_view;
use mcp_sieve::Catalog;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const EXT: &str = "io.modelcontextprotocol/groups";
/// The default catalog's tools in group `github`.
const GITHUB: [&str; 8] = [
    "list_pull_requests",
    "get_pull_request",
    "create_pull_request",
    "merge_pull_request",
    "list_issues",
    "create_issue",
    "close_issue",
    "open_issue_for_failed_run",
];

/// The default catalog with `github` scoped (with instructions) and a nested `gh-admin`.
fn scoped() -> Catalog {
    let mut doc = common::catalog_json();
    let groups = doc["groups"].as_array_mut().unwrap();
    let gh = groups.iter_mut().find(|g| g["name"] == "github").unwrap();
    gh["scoped"] = json!(true);
    gh["instructions"] = json!("Read the pull request before merging it.");
    groups.push(json!({"name": "gh-admin", "parent": "github", "description": "Closing issues."}));
    let tools = doc["tools"].as_array_mut().unwrap();
    let close = tools.iter_mut().find(|t| t["name"] == "close_issue").unwrap();
    close["groups"] = json!(["github", "gh-admin"]);
    Catalog::load(&doc).unwrap()
}

/// A scoped group's name follows the draft's rule (clients send it back in `groups/get`), its
/// parent's scope reaching it too; a group outside every scope keeps SEP-1300's freer names.
#[test]
fn a_scoped_groups_name_follows_the_drafts_rule() {
    let with = |groups: Value| {
        let mut doc = common::catalog_json();
        doc["groups"]
            .as_array_mut()
            .unwrap()
            .extend(groups.as_array().unwrap().iter().cloned());
        let at = doc["groups"].as_array().unwrap().len() - groups.as_array().unwrap().len();
        (Catalog::load(&doc), at)
    };
    for good in ["a", "billing-v2", "x1-y2-z3", &"a".repeat(64)] {
        let (loaded, _) = with(json!([{"name": good, "scoped": true}]));
        assert!(loaded.is_ok(), "{good}: {:?}", loaded.err());
    }
    for bad in [
        "Billing",
        "billing_v2",
        "-billing",
        "billing-",
        "bill--ing",
        "billing.v2",
        "écrits",
        &"a".repeat(65),
    ] {
        let (loaded, at) = with(json!([{"name": bad, "scoped": true}]));
        let e = loaded.unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "groups[{at}].name \"{bad}\": a scoped group's name must be 1–64 lowercase"
            )),
            "{bad}: {e}"
        );
    }
    // Under a scoped parent: scoped too, so ruled.
    let (loaded, at) = with(json!([{"name": "ops", "scoped": true}, {"name": "Ops_Admin", "parent": "ops"}]));
    let e = loaded.unwrap_err().to_string();
    assert!(e.contains(&format!("groups[{}].name \"Ops_Admin\"", at + 1)), "{e}");
    // Not scoped: any name, as before.
    assert!(with(json!([{"name": "Ops_Admin"}])).0.is_ok());
    assert!(with(json!([{"name": "Ops_Admin", "scoped": false}])).0.is_ok());
    let (loaded, at) = with(json!([{"name": "ops", "scoped": "yes"}]));
    let e = loaded.unwrap_err().to_string();
    assert!(
        e.contains(&format!("groups[{at}].scoped must be true or false, got a string"))
            || e.contains(&format!("groups[{at}].scoped must be true or false, got string")),
        "{e}"
    );
}

fn legacy(catalog: &Catalog, declare: bool) -> Harness {
    let mut h = Harness::with_catalog(catalog.clone());
    let caps = if declare {
        json!({"extensions": {EXT: {}}})
    } else {
        json!({})
    };
    h.initialize(Harness::init_params(LEGACY, json!({ "capabilities": caps })));
    h.initialized(Value::Null);
    h
}

fn modern(h: &mut Harness, method: &str, mut params: Value, declare: bool) -> Value {
    if declare {
        params["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}});
    }
    response_of(&h.modern(json!(1), method, params))
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_client_declaring_the_groups_extension_gets_bundles_and_lists_without_their_tools() {
    let c = scoped();
    // A client that does not declare it: everything flat, SEP-1300's groups/list.
    let mut plain = legacy(&c, false);
    let tools = plain.tool_names(json!({}));
    assert!(
        GITHUB.iter().all(|t| tools.contains(&t.to_string())),
        "flattened: {tools:?}"
    );
    let groups = plain.list_all_items("groups/list", "groups", json!({}));
    assert!(groups.iter().any(|g| g["name"] == "code" && g.get("parent").is_none()));
    assert!(
        groups.iter().any(|g| g["name"] == "github" && g["parent"] == "code"),
        "SEP-1300 shape"
    );

    // A client that declares it (2025-11-25: in initialize's capabilities).
    let mut h = Harness::with_catalog(c.clone());
    let init = h.initialize(Harness::init_params(LEGACY, json!({})));
    assert_eq!(
        init["result"]["capabilities"]["extensions"][EXT],
        json!({"listChanged": true})
    );
    let mut h = legacy(&c, true);
    let tools = h.tool_names(json!({}));
    assert!(
        GITHUB.iter().all(|t| !tools.contains(&t.to_string())),
        "scoped tools left out: {tools:?}"
    );
    assert_eq!(tools.len(), plain.tool_names(json!({})).len() - GITHUB.len());
    let groups = h.list_all_items("groups/list", "groups", json!({}));
    assert_eq!(
        groups,
        [json!({"name": "github", "title": "GitHub", "description": "Pull requests and issues on GitHub."})],
        "only the top-level bundles, in the draft's shape"
    );
    let g = h.rpc_ok("groups/get", json!({"name": "github"}));
    assert_eq!(g["instructions"], json!("Read the pull request before merging it."));
    let mut got = names(&g["contents"]["tools"]);
    got.sort();
    let mut want: Vec<String> = GITHUB.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(g["contents"]["tools"][0]["inputSchema"].is_object(), "full definitions");
    assert_eq!(
        g["contents"]["groups"],
        json!([{"name": "gh-admin", "description": "Closing issues."}]),
        "nested groups are listed in their parent, not at the top"
    );
    let admin = h.rpc_ok("groups/get", json!({"name": "gh-admin"}));
    assert_eq!(names(&admin["contents"]["tools"]), ["close_issue"]);
    assert!(admin.get("instructions").is_none());
    for unknown in ["code", "nope"] {
        let e = h.rpc_err("groups/get", json!({"name": unknown}));
        assert_eq!(e["code"], json!(-32002), "{e}");
    }
    // Discovery gating is not access control: a scoped tool is callable.
    let r = h.rpc_ok("tools/call", json!({"name": "list_issues", "arguments": {}}));
    assert!(r["content"].is_array(), "{r}");
}

#[test]
fn stateless_requests_decide_by_their_declared_capabilities_and_are_private() {
    let c = scoped();
    let mut h = Harness::with_catalog(c.clone());
    let with = modern(&mut h, "tools/list", json!({}), true);
    let without = modern(&mut h, "tools/list", json!({}), false);
    let (with, without) = (names(&with["result"]["tools"]), names(&without["result"]["tools"]));
    assert!(!with.contains(&"merge_pull_request".to_string()) && without.contains(&"merge_pull_request".to_string()));
    // A shared cache cannot key on the body's capabilities: the lists say private.
    let r = modern(&mut h, "tools/list", json!({}), false);
    assert_eq!(r["result"]["cacheScope"], json!("private"));
    let g = modern(&mut h, "groups/list", json!({}), true);
    assert_eq!(names(&g["result"]["groups"]), ["github"]);
    let g = modern(&mut h, "groups/get", json!({"name": "github"}), true);
    assert_eq!(g["result"]["resultType"], json!("complete"));
    assert_eq!(g["result"]["contents"]["tools"].as_array().unwrap().len(), GITHUB.len());
    // Without scoped groups the default catalog's lists stay public.
    let mut doc = common::catalog_json();
    doc.as_object_mut().unwrap().remove("policy");
    let mut plain = Harness::with_catalog(Catalog::load(&doc).unwrap());
    let r = modern(&mut plain, "tools/list", json!({}), true);
    assert_eq!(r["result"]["cacheScope"], json!("public"));
    // server/discover advertises the extension, SEP-2564's filtering and SEP-2636's methods.
    let d = modern(&mut plain, "server/discover", json!({}), false);
    let caps = &d["result"]["capabilities"];
    assert_eq!(caps["extensions"][EXT], json!({"listChanged": true}));
    assert!(
        caps["extensions"]["io.modelcontextprotocol/grouping"].is_object(),
        "the IG's, beside"
    );
    let supported = |k: &str| caps[k]["filtering"]["supported"].as_array().unwrap().clone();
    assert!(supported("tools").contains(&json!("namePatterns")) && !supported("tools").contains(&json!("uriPatterns")));
    assert!(supported("resources").contains(&json!("uriPatterns")));
    assert!(supported("prompts").contains(&json!("namePatterns")));
    assert_eq!(caps["tools"]["progressiveDisclosure"], json!(true));
}

#[test]
fn sep_2564_uri_patterns_and_vendor_fields() {
    let mut h = Harness::new();
    h.init();
    let f = |p: Value| json!({"filter": p});
    assert_eq!(
        h.list_all_items("resources/list", "resources", f(json!({"uriPatterns": ["db://*"]})))
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        ["db://schema"]
    );
    let t = h.list_all_items(
        "resources/templates/list",
        "resourceTemplates",
        f(json!({"uriPatterns": ["github://*"]})),
    );
    assert_eq!(t.len(), 1);
    assert_eq!(
        t[0]["uriTemplate"],
        json!("github://repos/{owner}/{repo}/issues/{number}")
    );
    // AND with namePatterns; OR within a field.
    let both = h.list_all_items(
        "resources/list",
        "resources",
        f(json!({"uriPatterns": ["db://*", "ci://*"], "namePatterns": ["*"]})),
    );
    assert_eq!(both.len(), 2);
    // Tools and prompts have no URI: the field is ignored there, as SEP-2564 ignores fields a
    // list does not support; so is a vendor field (`com.example/x`).
    let all = h.tool_names(json!({})).len();
    assert_eq!(h.tool_names(f(json!({"uriPatterns": ["nothing"]}))).len(), all);
    assert_eq!(h.tool_names(f(json!({"com.example/targetIds": ["t"]}))).len(), all);
    // A cursor is bound to the uriPatterns that made it; a misspelt field stays an error.
    let e = h.rpc_err("tools/list", f(json!({"uriPattern": ["x"]})));
    assert_eq!(e["code"], json!(-32602));
}

#[test]
fn sep_2636_catalog_and_describe_agree_with_the_list() {
    let c = Catalog::load(&common::catalog_json()).unwrap();
    let mut h = Harness::with_catalog(c.clone());
    h.init();
    let listed = h.tool_names(json!({}));
    let mut entries = Vec::new();
    let mut params = json!({});
    loop {
        let r = h.rpc_ok("tools/catalog", params.clone());
        entries.extend(r["tools"].as_array().unwrap().iter().cloned());
        match r.get("nextCursor") {
            Some(c) => params["cursor"] = c.clone(),
            None => break,
        }
    }
    assert_eq!(
        names(&json!(entries)),
        listed,
        "the same tools as tools/list, in its order"
    );
    let add = entries.iter().find(|e| e["name"] == "add").unwrap();
    assert!(add.get("inputSchema").is_none() && add.get("description").is_none());
    assert!(!add["summary"].as_str().unwrap().is_empty() && add["summary"].as_str().unwrap().len() <= 200 * 4);
    // schemaHash: SHA-256 of the canonical JSON of the tool tools/describe returns.
    let d = h.rpc_ok("tools/describe", json!({"names": ["echo", "add"]}));
    assert_eq!(names(&d["tools"]), ["echo", "add"], "in the order asked");
    let canonical = canonical_json(&d["tools"][1]);
    let hash: String = Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(add["schemaHash"], json!(hash));
    let listed_add = h
        .list_all_items("tools/list", "tools", json!({}))
        .into_iter()
        .find(|t| t["name"] == "add");
    assert_eq!(
        listed_add.as_ref(),
        Some(&d["tools"][1]),
        "identical to what tools/list gives"
    );
    // Unknown names fail the whole request with -32002 and name every one.
    let e = h.rpc_err("tools/describe", json!({"names": ["echo", "nope", "zilch"]}));
    assert_eq!(e["code"], json!(-32002));
    assert_eq!(e["data"]["unknownNames"], json!(["nope", "zilch"]));
    assert_eq!(h.rpc_err("tools/describe", json!({"names": []}))["code"], json!(-32602));
    // A query ranks with the search index.
    let q = h.rpc_ok("tools/catalog", json!({"query": "merge a pull request"}));
    assert_eq!(q["tools"][0]["name"], json!("merge_pull_request"), "{q}");
    // A view bounds both: what it hides is unknown.
    let mut v = Harness::with_catalog(c.clone());
    v.view = endpoint_view(&c, "/mcp/x/utilities", "", &header_fn(vec![], &[]), None).unwrap();
    v.init();
    let r = v.rpc_ok("tools/catalog", json!({}));
    assert!(names(&r["tools"])
        .iter()
        .all(|n| ["echo", "add", "text_stats", "current_time", "long_report"].contains(&n.as_str())));
    assert_eq!(
        v.rpc_err("tools/describe", json!({"names": ["send_email"]}))["code"],
        json!(-32002)
    );
    // Scoped tools: out of the catalog of a client declaring the groups extension, describable.
    let mut s = legacy(&scoped(), true);
    let r = s.rpc_ok("tools/catalog", json!({}));
    assert!(!names(&r["tools"]).contains(&"merge_pull_request".to_string()));
    assert_eq!(
        names(&s.rpc_ok("tools/describe", json!({"names": ["merge_pull_request"]}))["tools"]),
        ["merge_pull_request"]
    );
}

/// Object keys sorted, no whitespace (RFC 8785 for these values), written here independently.
fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", json!(k), canonical_json(&o[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}
