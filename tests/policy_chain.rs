//! Policy filters (ARCHITECTURE.md "Views and policy"): custom `PrimitiveFilter`s in
//! priority order combined with AND, failing filters logged and ignored, initial checks, and the
//! declarative `policy` of the catalog document. Runs natively and in Chromium.

use std::sync::{Arc, Mutex};

use mcp_sieve::filter::chain::Chain;
use mcp_sieve::filter::Section;
use mcp_sieve::filter::{Bits, FilterContext, InitialCheck, PrimitiveFilter};
use mcp_sieve::model::{Kind, Primitive};
use mcp_sieve::{Catalog, Error};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

type Calls = Arc<Mutex<Vec<String>>>;

/// A filter that records each call as `name:item`, hides the listed items and fails on one.
struct Recording {
    name: &'static str,
    priority: i32,
    hide: Vec<&'static str>,
    fail_on: Option<&'static str>,
    only: Option<Kind>,
    calls: Calls,
}

impl Recording {
    fn new(name: &'static str, priority: i32, hide: &[&'static str], calls: &Calls) -> Self {
        Recording {
            name,
            priority,
            hide: hide.to_vec(),
            fail_on: None,
            only: None,
            calls: calls.clone(),
        }
    }
}

impl PrimitiveFilter for Recording {
    fn priority(&self) -> i32 {
        self.priority
    }

    fn applies_to(&self, kind: Kind) -> bool {
        self.only.is_none_or(|k| k == kind)
    }

    fn test(&self, item: &Primitive, _ctx: &FilterContext) -> Result<bool, String> {
        self.calls.lock().unwrap().push(format!("{}:{}", self.name, item.name));
        if self.fail_on == Some(item.name.as_str()) {
            return Err(format!("{} cannot judge {}", self.name, item.name));
        }
        Ok(!self.hide.contains(&item.name.as_str()))
    }
}

fn doc() -> Value {
    json!({
        "groups": [{"name": "code"}, {"name": "github", "parent": "code"}],
        "tools": [
            {"name": "read_file", "inputSchema": {}, "tags": ["read-only"]},
            {"name": "delete_repo", "inputSchema": {}, "tags": ["destructive"], "groups": ["github"]},
            {"name": "drop_table", "inputSchema": {}, "tags": ["destructive", "db"]},
            {"name": "echo", "inputSchema": {}},
            {"name": "beta_search", "inputSchema": {}, "tags": ["beta"]}
        ],
        "prompts": [
            {"name": "summarize"},
            {"name": "wipe", "tags": ["destructive"]}
        ],
        "resources": [{"name": "log", "uri": "mem://log", "tags": ["destructive"]}]
    })
}

fn catalog_with(policy: Value) -> Catalog {
    let mut d = doc();
    d["policy"] = policy;
    Catalog::load(&d).unwrap()
}

fn ctx(client: &str, version: &str, caps: Value) -> FilterContext {
    FilterContext {
        initialize: json!({
            "protocolVersion": version,
            "clientInfo": {"name": client, "version": "1.0.0"},
            "capabilities": caps
        })
        .into(),
        protocol_version: version.into(),
        method: "tools/list".into(),
        request_id: json!(1),
        ..Default::default()
    }
}

fn visible(chain: &Chain, c: &Catalog, kind: Kind, cx: &FilterContext, log: &mut Vec<String>) -> Vec<String> {
    let s = c.section(kind);
    chain
        .visible(kind, s, cx, log)
        .ones()
        .map(|i| s.items[i].name.clone())
        .collect()
}

fn tools(chain: &Chain, c: &Catalog, cx: &FilterContext) -> Vec<String> {
    let mut log = Vec::new();
    let v = visible(chain, c, Kind::Tool, cx, &mut log);
    assert!(log.is_empty(), "{log:?}");
    v
}

const ALL_TOOLS: [&str; 5] = ["read_file", "delete_repo", "drop_table", "echo", "beta_search"];

#[test]
fn filters_run_in_priority_order_and_combine_with_and() {
    let c = Catalog::load(&doc()).unwrap();
    let calls = Calls::default();
    let mut chain = Chain::default();
    assert!(chain.is_empty());
    chain.add_filter(Arc::new(Recording::new("low", -5, &["echo"], &calls)));
    chain.add_filter(Arc::new(Recording::new("high", 10, &["read_file"], &calls)));
    chain.add_filter(Arc::new(Recording::new("mid", 5, &["drop_table"], &calls)));
    assert!(!chain.is_empty());
    let cx = FilterContext::default();
    assert_eq!(tools(&chain, &c, &cx), ["delete_repo", "beta_search"]);

    let calls = calls.lock().unwrap().clone();
    let mut order: Vec<&str> = calls.iter().map(|c| c.split(':').next().unwrap()).collect();
    order.dedup();
    assert_eq!(order, ["high", "mid", "low"], "{calls:?}");
    // The first filter sees every item.
    let high: Vec<&str> = calls.iter().filter_map(|c| c.strip_prefix("high:")).collect();
    assert_eq!(high, ALL_TOOLS);
    // An item is never shown if any filter hides it, whatever the others say.
    assert!(!calls
        .iter()
        .any(|c| c.ends_with(":read_file") && !c.starts_with("high")));
}

#[test]
fn equal_priorities_run_in_the_order_they_were_added() {
    let c = Catalog::load(&doc()).unwrap();
    let calls = Calls::default();
    let mut chain = Chain::default();
    for name in ["first", "second", "third"] {
        chain.add_filter(Arc::new(Recording::new(name, 1, &[], &calls)));
    }
    tools(&chain, &c, &FilterContext::default());
    let calls = calls.lock().unwrap().clone();
    let mut order: Vec<&str> = calls.iter().map(|c| c.split(':').next().unwrap()).collect();
    order.dedup();
    assert_eq!(order, ["first", "second", "third"]);
}

#[test]
fn a_failing_filter_is_logged_and_ignored() {
    let c = Catalog::load(&doc()).unwrap();
    let calls = Calls::default();
    let mut flaky = Recording::new("flaky", 3, &["echo", "drop_table"], &calls);
    flaky.fail_on = Some("drop_table");
    let mut chain = Chain::default();
    chain.add_filter(Arc::new(flaky));
    chain.add_filter(Arc::new(Recording::new("other", 0, &["read_file"], &calls)));
    let cx = FilterContext::default();
    let mut log = Vec::new();
    let shown = visible(&chain, &c, Kind::Tool, &cx, &mut log);
    // drop_table stays visible although `flaky` would hide it; echo is hidden as asked.
    assert_eq!(shown, ["delete_repo", "drop_table", "beta_search"]);
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(log[0].contains("drop_table"), "{log:?}");
    assert!(log[0].contains("flaky cannot judge drop_table"), "{log:?}");
    // The same on use.
    let s = c.section(Kind::Tool);
    let mut log = Vec::new();
    assert!(chain.allows(Kind::Tool, s, s.find("drop_table").unwrap(), &cx, &mut log));
    assert!(!chain.allows(Kind::Tool, s, s.find("echo").unwrap(), &cx, &mut log));
    assert!(!chain.allows(Kind::Tool, s, s.find("read_file").unwrap(), &cx, &mut log));
    assert!(log.iter().all(|l| l.contains("drop_table")), "{log:?}");
}

/// A filter answering for the whole section through the index.
struct ByTag {
    tag: &'static str,
    broken: bool,
}

impl PrimitiveFilter for ByTag {
    fn test(&self, item: &Primitive, _ctx: &FilterContext) -> Result<bool, String> {
        Ok(!item.tags.iter().any(|t| t == self.tag))
    }

    fn hidden(&self, section: &Section, _ctx: &FilterContext) -> Option<Result<Bits, String>> {
        if self.broken {
            return Some(Err(format!("index for {} unavailable", self.tag)));
        }
        Some(Ok(section
            .index
            .tag(self.tag)
            .cloned()
            .unwrap_or_else(|| Bits::empty(section.items.len()))))
    }
}

#[test]
fn whole_section_answers_hide_and_their_errors_are_ignored() {
    let c = Catalog::load(&doc()).unwrap();
    let mut chain = Chain::default();
    chain.add_filter(Arc::new(ByTag {
        tag: "destructive",
        broken: false,
    }));
    let cx = FilterContext::default();
    assert_eq!(tools(&chain, &c, &cx), ["read_file", "echo", "beta_search"]);

    let mut chain = Chain::default();
    chain.add_filter(Arc::new(ByTag {
        tag: "destructive",
        broken: true,
    }));
    let mut log = Vec::new();
    assert_eq!(visible(&chain, &c, Kind::Tool, &cx, &mut log), ALL_TOOLS);
    assert_eq!(log.len(), 1);
    assert!(log[0].contains("index for destructive unavailable"), "{log:?}");
}

#[test]
fn applies_to_restricts_a_filter_to_one_kind() {
    let c = Catalog::load(&doc()).unwrap();
    let calls = Calls::default();
    let mut prompts_only = Recording::new("prompts", 0, &["summarize", "wipe", "echo", "log"], &calls);
    prompts_only.only = Some(Kind::Prompt);
    let mut chain = Chain::default();
    chain.add_filter(Arc::new(prompts_only));
    let cx = FilterContext::default();
    let mut log = Vec::new();
    assert_eq!(visible(&chain, &c, Kind::Tool, &cx, &mut log), ALL_TOOLS);
    assert_eq!(visible(&chain, &c, Kind::Resource, &cx, &mut log), ["log"]);
    assert!(calls.lock().unwrap().is_empty(), "not called for other kinds");
    assert!(visible(&chain, &c, Kind::Prompt, &cx, &mut log).is_empty());
    assert_eq!(*calls.lock().unwrap(), ["prompts:summarize", "prompts:wipe"]);
    assert!(log.is_empty());
}

#[test]
fn filter_context_reads_the_initialize_request() {
    let cx = ctx(
        "claude-desktop",
        "2025-06-18",
        json!({"sampling": {}, "roots": {"listChanged": true}, "elicitation": null}),
    );
    assert_eq!(cx.client_name(), Some("claude-desktop"));
    assert_eq!(cx.client_version(), Some("1.0.0"));
    assert!(cx.has_capability("sampling"));
    assert!(cx.has_capability("roots"));
    assert!(!cx.has_capability("elicitation"), "a null capability is not declared");
    assert!(!cx.has_capability("experimental"));

    let empty = FilterContext::default();
    assert_eq!(empty.client_name(), None);
    assert_eq!(empty.client_version(), None);
    assert!(!empty.has_capability("sampling"));
}

/// Hides destructive tools from clients that cannot ask the user (no elicitation).
struct NeedsElicitation;

impl PrimitiveFilter for NeedsElicitation {
    fn test(&self, item: &Primitive, ctx: &FilterContext) -> Result<bool, String> {
        Ok(ctx.has_capability("elicitation") || !item.tags.iter().any(|t| t == "destructive"))
    }
}

#[test]
fn filters_see_the_context() {
    let c = Catalog::load(&doc()).unwrap();
    let mut chain = Chain::default();
    chain.add_filter(Arc::new(NeedsElicitation));
    let without = ctx("x", "2025-06-18", json!({}));
    let with = ctx("x", "2025-06-18", json!({"elicitation": {}}));
    assert_eq!(tools(&chain, &c, &without), ["read_file", "echo", "beta_search"]);
    assert_eq!(tools(&chain, &c, &with), ALL_TOOLS);
}

/// An initial check that records its run and fails when told to.
struct Check {
    name: &'static str,
    priority: i32,
    fails: bool,
    calls: Calls,
}

impl InitialCheck for Check {
    fn priority(&self) -> i32 {
        self.priority
    }

    fn check(&self, _ctx: &FilterContext) -> Result<(), String> {
        self.calls.lock().unwrap().push(self.name.to_string());
        if self.fails {
            Err(format!("{} says no", self.name))
        } else {
            Ok(())
        }
    }
}

#[test]
fn initial_checks_run_in_priority_order_and_stop_at_the_first_failure() {
    let calls = Calls::default();
    let check = |name, priority, fails| {
        Arc::new(Check {
            name,
            priority,
            fails,
            calls: calls.clone(),
        })
    };
    let mut chain = Chain::default();
    chain.add_check(check("late", -1, true));
    chain.add_check(check("early", 9, false));
    chain.add_check(check("middle", 4, true));
    chain.add_check(check("middle-too", 4, true));
    assert!(chain.is_empty(), "checks are not filters");
    let cx = FilterContext::default();
    assert_eq!(chain.run_checks(&cx), Err("middle says no".to_string()));
    assert_eq!(*calls.lock().unwrap(), ["early", "middle"]);

    calls.lock().unwrap().clear();
    let mut ok = Chain::default();
    ok.add_check(check("a", 0, false));
    ok.add_check(check("b", 1, false));
    assert_eq!(ok.run_checks(&cx), Ok(()));
    assert_eq!(*calls.lock().unwrap(), ["b", "a"]);
    assert_eq!(Chain::default().run_checks(&cx), Ok(()));
}

fn brief_policy() -> Value {
    json!({
        "rules": [{"when": {"clientName": "inspector*"}, "hide": {"tags": ["destructive"]}}],
        "initialChecks": [
            {"minProtocolVersion": "2025-06-18"},
            {"allowClients": ["claude*", "inspector*"]},
            {"requireCapability": "sampling"}
        ]
    })
}

#[test]
fn declarative_rules_hide_for_matching_clients() {
    let c = catalog_with(brief_policy());
    let chain = c.policy.chain();
    assert!(!chain.is_empty());
    let inspector = ctx("inspector-cli", "2025-06-18", json!({}));
    let claude = ctx("claude-code", "2025-06-18", json!({}));
    assert_eq!(tools(&chain, &c, &inspector), ["read_file", "echo", "beta_search"]);
    assert_eq!(tools(&chain, &c, &claude), ALL_TOOLS);
    // Without `kinds` a rule covers every kind.
    let mut log = Vec::new();
    assert_eq!(visible(&chain, &c, Kind::Prompt, &inspector, &mut log), ["summarize"]);
    assert!(visible(&chain, &c, Kind::Resource, &inspector, &mut log).is_empty());
    assert_eq!(
        visible(&chain, &c, Kind::Prompt, &claude, &mut log),
        ["summarize", "wipe"]
    );
    // Hidden by policy is also refused on use.
    let s = c.section(Kind::Tool);
    let pos = s.find("delete_repo").unwrap();
    assert!(!chain.allows(Kind::Tool, s, pos, &inspector, &mut log));
    assert!(chain.allows(Kind::Tool, s, pos, &claude, &mut log));
    assert!(log.is_empty());
}

#[test]
fn declarative_initial_checks_report_the_first_failure() {
    let c = catalog_with(brief_policy());
    let chain = c.policy.chain();
    let sampling = json!({"sampling": {}});
    // Too old and not allowed and no sampling: the version check comes first.
    let e = chain.run_checks(&ctx("cursor", "2025-03-26", json!({}))).unwrap_err();
    assert!(e.contains("2025-03-26") && e.contains("2025-06-18"), "{e}");
    let e = chain.run_checks(&ctx("cursor", "2025-06-18", json!({}))).unwrap_err();
    assert!(e.contains("\"cursor\"") && e.contains("allowClients"), "{e}");
    assert!(!e.contains("claude*"), "the refusal never names the allow-list: {e}");
    let e = chain
        .run_checks(&ctx("claude-code", "2025-11-25", json!({})))
        .unwrap_err();
    assert!(e.contains("\"sampling\""), "{e}");
    assert_eq!(
        chain.run_checks(&ctx("claude-code", "2025-11-25", sampling.clone())),
        Ok(())
    );
    assert_eq!(
        chain.run_checks(&ctx("inspector", "2025-06-18", sampling.clone())),
        Ok(())
    );
    // No clientInfo at all is not an allowed client.
    let mut anonymous = ctx("", "2025-06-18", sampling);
    std::sync::Arc::make_mut(&mut anonymous.initialize)["clientInfo"] = Value::Null;
    assert!(chain.run_checks(&anonymous).unwrap_err().contains("not allowed"));

    // A priority moves a check ahead of the others.
    let c = catalog_with(json!({"initialChecks": [
        {"minProtocolVersion": "2025-06-18"},
        {"requireCapability": "sampling", "priority": 10}
    ]}));
    let e = c
        .policy
        .chain()
        .run_checks(&ctx("x", "2025-03-26", json!({})))
        .unwrap_err();
    assert!(e.contains("sampling"), "{e}");
}

#[test]
fn when_protocol_version_compares_dates() {
    let rule =
        |cond: &str| catalog_with(json!({"rules": [{"when": {"protocolVersion": cond}, "hide": {"tags": ["beta"]}}]}));
    let cases = [
        (">=2025-06-18", [false, true, true]),
        (">2025-06-18", [false, false, true]),
        ("<2025-06-18", [true, false, false]),
        ("<=2025-06-18", [true, true, false]),
        ("=2025-06-18", [false, true, false]),
        ("2025-06-18", [false, true, false]),
        (">= 2025-06-18", [false, true, true]),
    ];
    for (cond, hides) in cases {
        let c = rule(cond);
        let chain = c.policy.chain();
        for (version, hidden) in ["2025-03-26", "2025-06-18", "2025-11-25"].into_iter().zip(hides) {
            let shown = tools(&chain, &c, &ctx("any", version, json!({})));
            assert_eq!(
                !shown.contains(&"beta_search".to_string()),
                hidden,
                "{cond} at {version}"
            );
            assert_eq!(shown.len(), if hidden { 4 } else { 5 });
        }
    }
}

#[test]
fn when_principal_capability_and_method_narrow_a_rule() {
    let c = catalog_with(json!({"rules": [
        {"when": {"principal": "guest*"}, "hide": {"tags": ["destructive"]}},
        {"when": {"capability": "sampling", "method": "tools/*"}, "hide": {"namePatterns": ["echo"]}}
    ]}));
    let chain = c.policy.chain();
    let mut cx = ctx("any", "2025-06-18", json!({}));
    assert_eq!(tools(&chain, &c, &cx), ALL_TOOLS, "no principal, no match");
    cx.principal = Some("guest-42".into());
    assert_eq!(tools(&chain, &c, &cx), ["read_file", "echo", "beta_search"]);
    cx.principal = Some("admin".into());
    assert_eq!(tools(&chain, &c, &cx), ALL_TOOLS);

    let mut cx = ctx("any", "2025-06-18", json!({"sampling": {}}));
    assert_eq!(
        tools(&chain, &c, &cx),
        ["read_file", "delete_repo", "drop_table", "beta_search"]
    );
    cx.method = "prompts/list".into();
    assert_eq!(tools(&chain, &c, &cx), ALL_TOOLS);
}

#[test]
fn rules_may_be_limited_to_kinds_and_ordered_by_priority() {
    let c = catalog_with(json!({"rules": [
        {"hide": {"tags": ["destructive"]}, "kinds": ["prompts", "resources"]},
        {"hide": {"groups": ["code"]}, "priority": 3}
    ]}));
    let chain = c.policy.chain();
    let cx = FilterContext::default();
    let mut log = Vec::new();
    // Group membership is transitive in policy too: delete_repo is in github, a child of code.
    assert_eq!(
        visible(&chain, &c, Kind::Tool, &cx, &mut log),
        ["read_file", "drop_table", "echo", "beta_search"]
    );
    assert_eq!(visible(&chain, &c, Kind::Prompt, &cx, &mut log), ["summarize"]);
    assert!(visible(&chain, &c, Kind::Resource, &cx, &mut log).is_empty());
    assert!(log.is_empty());
    assert_eq!(c.policy.rules.len(), 2);
    assert_eq!(c.policy.rules[0].priority(), 0);
    assert_eq!(c.policy.rules[1].priority(), 3);
    assert!(c.policy.rules[0].applies_to(Kind::Prompt));
    assert!(!c.policy.rules[0].applies_to(Kind::Tool));
}

#[test]
fn no_policy_is_an_empty_chain() {
    let c = Catalog::load(&doc()).unwrap();
    let chain = c.policy.chain();
    assert!(chain.is_empty());
    assert_eq!(tools(&chain, &c, &FilterContext::default()), ALL_TOOLS);
    assert_eq!(chain.run_checks(&FilterContext::default()), Ok(()));
    for p in [json!(null), json!({}), json!({"rules": [], "initialChecks": []})] {
        let c = catalog_with(p);
        assert!(c.policy.rules.is_empty() && c.policy.checks.is_empty());
    }
}

#[test]
fn malformed_policies_name_the_bad_field() {
    let cases = [
        (json!([]), "policy must be an object"),
        (json!({"rules": {}}), "policy.rules must be an array"),
        (
            json!({"initialChecks": "strict"}),
            "policy.initialChecks must be an array",
        ),
        (json!({"rules": [5]}), "policy.rules[0] must be an object"),
        (json!({"rules": [{"when": {}}]}), "policy.rules[0].hide"),
        (json!({"rules": [{"hide": 3}]}), "policy.rules[0].hide"),
        (
            json!({"rules": [{"hide": {}}, {"when": {"clientName": "x"}}]}),
            "policy.rules[1].hide",
        ),
        (
            json!({"rules": [{"hide": {"tags": "destructive"}}]}),
            "policy.rules[0].hide.tags",
        ),
        (
            json!({"rules": [{"hide": {"colour": []}}]}),
            "policy.rules[0].hide has an unknown field",
        ),
        (
            json!({"rules": [{"hide": {"concerns": {"security": [1]}}}]}),
            "policy.rules[0].hide.concerns.security",
        ),
        (
            json!({"rules": [{"when": 3, "hide": {}}]}),
            "policy.rules[0].when must be an object",
        ),
        (
            json!({"rules": [{"when": {"clientName": 3}, "hide": {}}]}),
            "policy.rules[0].when.clientName",
        ),
        (
            json!({"rules": [{"when": {"os": "linux"}, "hide": {}}]}),
            "policy.rules[0].when has an unknown field \"os\"",
        ),
        (
            json!({"rules": [{"when": {"protocolVersion": "~2025-06-18"}, "hide": {}}]}),
            "policy.rules[0].when.protocolVersion",
        ),
        (
            json!({"rules": [{"when": {"protocolVersion": ">=2025"}, "hide": {}}]}),
            "policy.rules[0].when.protocolVersion",
        ),
        (
            json!({"rules": [{"hide": {}, "kinds": ["widgets"]}]}),
            "policy.rules[0].kinds",
        ),
        (
            json!({"rules": [{"hide": {}, "kinds": "tools"}]}),
            "policy.rules[0].kinds",
        ),
        (
            json!({"rules": [{"hide": {}, "priority": "high"}]}),
            "policy.rules[0].priority",
        ),
        (
            json!({"initialChecks": [{}]}),
            "policy.initialChecks[0] must have one of",
        ),
        (
            json!({"initialChecks": [7]}),
            "policy.initialChecks[0] must be an object",
        ),
        (
            json!({"initialChecks": [{"allowClients": "claude"}]}),
            "policy.initialChecks[0].allowClients",
        ),
        (
            json!({"initialChecks": [{"requireCapability": true}]}),
            "policy.initialChecks[0].requireCapability",
        ),
        (
            json!({"initialChecks": [{"minProtocolVersion": 20250618}]}),
            "policy.initialChecks[0].minProtocolVersion",
        ),
        (
            json!({"initialChecks": [{"requireCapability": "sampling", "priority": 1.5}]}),
            "policy.initialChecks[0].priority",
        ),
    ];
    for (policy, want) in cases {
        let mut d = doc();
        d["policy"] = policy.clone();
        let e = Catalog::load(&d).unwrap_err();
        assert!(matches!(e, Error::Catalog(_)), "{policy}: {e:?}");
        assert_eq!(e.code(), -32602);
        assert!(e.to_string().contains(want), "{policy}: {e} should mention {want}");
    }
}

#[test]
fn a_rule_asked_about_one_item_follows_group_parents() {
    let c = catalog_with(json!({"rules": [{"hide": {"groups": ["code"]}}]}));
    let rule = &c.policy.rules[0];
    let tools = c.section(Kind::Tool);
    let repo = &tools.items[tools.find("delete_repo").unwrap()];
    let echo = &tools.items[tools.find("echo").unwrap()];
    let cx = ctx("any", "2025-11-25", json!({}));
    assert_eq!(
        rule.test(repo, &cx),
        Ok(false),
        "delete_repo is in github, a child of code"
    );
    assert_eq!(rule.test(echo, &cx), Ok(true));
}

#[test]
fn policy_objects_with_unknown_or_malformed_fields_are_refused() {
    for (policy, path) in [
        (
            json!({"rules": [{"hide": {}, "kind": ["prompts"]}]}),
            "policy.rules[0] has an unknown field \"kind\"",
        ),
        (
            json!({"initialChecks": [{"minProtocolVersion": "soon"}]}),
            "policy.initialChecks[0].minProtocolVersion",
        ),
        (
            json!({"initialChecks": [{"requireCapability": "sampling", "allowClients": ["x"]}]}),
            "exactly one",
        ),
        (json!({"rule": []}), "policy has an unknown field \"rule\""),
    ] {
        let mut d = doc();
        d["policy"] = policy.clone();
        let e = Catalog::load(&d).unwrap_err();
        assert!(e.to_string().contains(path), "{policy}: {e}");
    }
}

#[test]
fn closures_are_filters_and_checks() {
    let c = Catalog::load(&doc()).unwrap();
    let mut chain = Chain::default();
    chain.add_filter(Arc::new(|item: &Primitive, _: &FilterContext| {
        !item.name.starts_with("d")
    }));
    chain.add_filter(Arc::new(|item: &Primitive, ctx: &FilterContext| {
        item.name != "echo" || ctx.client_name() == Some("trusted")
    }));
    let cx = ctx("other", "1", json!({}));
    assert_eq!(tools(&chain, &c, &cx), ["read_file", "beta_search"]);
    assert_eq!(
        tools(&chain, &c, &ctx("trusted", "1", json!({}))),
        ["read_file", "echo", "beta_search"]
    );
    chain.add_check(Arc::new(|ctx: &FilterContext| match ctx.client_name() {
        Some("trusted") => Ok(()),
        _ => Err("only trusted clients".to_string()),
    }));
    assert_eq!(chain.run_checks(&cx), Err("only trusted clients".to_string()));
    assert_eq!(chain.run_checks(&ctx("trusted", "1", json!({}))), Ok(()));
}
