//! Identity from verified tokens reaches decisions exactly as a static token's principal does:
//! views' `"principals": ["role:admin"]`, policy `when.roles` / `when.claims`, middleware
//! `allowPrincipals`, and the catalog's `auth` block is parsed with clear errors (issue 28).
#![cfg(feature = "auth")]

mod common;

use std::sync::Arc;

use common::{catalog_json, header_fn, Harness};
use mcp_sieve::auth::Identity;
use mcp_sieve::http::endpoint_view_for;
use mcp_sieve::Catalog;
use serde_json::{json, Map, Value};

fn identity(principal: &str, roles: &[&str], claims: Value) -> Arc<Identity> {
    let claims: Map<String, Value> = serde_json::from_value(claims).unwrap();
    Arc::new(Identity {
        principal: principal.into(),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        claims: Arc::new(claims),
    })
}

fn as_caller(catalog: &Catalog, id: Option<Arc<Identity>>) -> Harness {
    let mut h = Harness::with_catalog(catalog.clone());
    h.principal = id.as_ref().map(|i| i.principal.clone());
    h.identity = id;
    h.init();
    h
}

#[test]
fn roles_open_views() {
    let mut doc = catalog_json();
    doc["views"]["admins"] = json!({"filter": {"groups": ["admin"]}, "principals": ["role:admin", "carol"]});
    let catalog = Catalog::load(&doc).unwrap();
    let h = header_fn(vec![], &[]);
    let view = |p: Option<&str>, roles: &[&str]| {
        let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
        endpoint_view_for(&catalog, "/mcp/admins", "", &h, p, &roles).map_err(|r| r.status)
    };
    assert!(view(Some("bob"), &["admin"]).unwrap().is_some());
    assert!(view(Some("carol"), &[]).unwrap().is_some());
    assert_eq!(view(Some("bob"), &["eng"]).unwrap_err(), 403);
    // A principal named like a role is not that role.
    assert_eq!(view(Some("role:admin"), &[]).unwrap_err(), 403);
    assert_eq!(view(None, &[]).unwrap_err(), 403);
}

#[test]
fn policy_rules_see_roles_and_claims() {
    let mut doc = catalog_json();
    doc["policy"] = json!({"rules": [
        {"when": {"roles": ["contractor*"]}, "hide": {"tags": ["destructive"]}},
        {"when": {"claims": {"org.department": ["sales", "support"]}}, "hide": {"groups": ["code"]}}
    ]});
    let catalog = Catalog::load(&doc).unwrap();
    let all = as_caller(&catalog, None).tool_names(json!({}));
    let destructive = |h: &mut Harness| h.tool_names(json!({"filter": {"tags": ["destructive"]}})).len();
    let mut staff = as_caller(
        &catalog,
        Some(identity("alice", &["staff"], json!({"org": {"department": "eng"}}))),
    );
    assert_eq!(staff.tool_names(json!({})), all);
    let mut contractor = as_caller(&catalog, Some(identity("bob", &["contractor-eu"], json!({}))));
    assert!(destructive(&mut staff) > 0);
    assert_eq!(destructive(&mut contractor), 0);
    let mut sales = as_caller(
        &catalog,
        Some(identity("sam", &[], json!({"org": {"department": "sales"}}))),
    );
    let code = |h: &mut Harness| h.tool_names(json!({"filter": {"groups": ["code"]}})).len();
    assert!(code(&mut staff) > 0);
    assert_eq!(code(&mut sales), 0);
    // Not callable either.
    let hidden = contractor.tool_names(json!({}));
    let gone = all.iter().find(|n| !hidden.contains(n)).unwrap().clone();
    let e = contractor.rpc_err("tools/call", json!({"name": gone, "arguments": {}}));
    assert!(e["message"].as_str().unwrap().contains(&gone), "{e}");
}

#[test]
fn policy_identity_fields_are_checked() {
    for (when, needle) in [
        (
            json!({"roles": 3}),
            "policy.rules[0].when.roles must be a string or an array of strings",
        ),
        (
            json!({"claims": ["x"]}),
            "policy.rules[0].when.claims must be an object",
        ),
        (
            json!({"claims": {"dept": {}}}),
            "policy.rules[0].when.claims.dept must be a string or an array",
        ),
    ] {
        let mut doc = catalog_json();
        doc["policy"] = json!({"rules": [{"when": when, "hide": {"tags": ["destructive"]}}]});
        let e = Catalog::load(&doc).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
}

#[test]
fn middleware_allow_principals_takes_roles() {
    let mut doc = catalog_json();
    doc["middleware"] = json!({"enabled": ["timestamp_injector"], "allowPrincipals": ["role:ml", "alice"]});
    let catalog = Catalog::load(&doc).unwrap();
    let mut ml = as_caller(&catalog, Some(identity("bob", &["ml"], json!({}))));
    assert!(ml.rpc_ok("middleware/list", json!({}))["middleware"].is_array());
    let mut other = as_caller(&catalog, Some(identity("eve", &["sales"], json!({}))));
    assert_eq!(other.rpc_err("middleware/list", json!({}))["code"], -32601);
    let mut alice = as_caller(&catalog, Some(identity("alice", &[], json!({}))));
    assert!(alice.rpc_ok("middleware/list", json!({}))["middleware"].is_array());
}

#[test]
fn sessions_stay_with_their_principal() {
    let catalog = Catalog::load(&catalog_json()).unwrap();
    let alice = as_caller(&catalog, Some(identity("alice", &["admin"], json!({}))));
    let session = alice.session.clone();
    let mut bob = Harness::with_catalog(catalog);
    bob.principal = Some("bob".into());
    bob.identity = Some(identity("bob", &["admin"], json!({})));
    bob.session = session;
    bob.protocol_version = alice.protocol_version.clone();
    let r = bob.post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}), &[]);
    assert_eq!(r.status, 404, "{}", r.body);
}

#[test]
fn the_auth_block_is_validated_with_the_catalog() {
    let mut doc = catalog_json();
    doc["auth"] = json!({"issuer": "https://login.example.com/"});
    let e = Catalog::load(&doc).unwrap_err().to_string();
    assert!(e.contains("auth.resource is required"), "{e}");
    doc["auth"] = json!({"resource": "https://mcp.example.com/mcp", "issuer": "https://login.example.com/",
        "jwksUrl": "https://login.example.com/jwks", "rolesClaims": ["groups"]});
    let c = Catalog::load(&doc).unwrap();
    assert_eq!(
        c.auth.unwrap().oauth.as_ref().unwrap().roles_claims,
        vec!["groups".to_string()]
    );
}
