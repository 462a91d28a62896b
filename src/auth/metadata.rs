//! OAuth 2.0 Protected Resource Metadata (RFC 9728) for this MCP endpoint: the document, and where
//! it is published (`/.well-known/oauth-protected-resource` plus the resource's path, so
//! `https://h/mcp` has its metadata at `https://h/.well-known/oauth-protected-resource/mcp`).

use serde_json::{json, Value};

use super::config::AuthConfig;

/// The well-known path prefix of RFC 9728.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// `(origin, path)` of an absolute URL, without query or fragment.
fn split(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let cut = rest.find('/').unwrap_or(rest.len());
    let origin_len = scheme.len() + 3 + cut;
    Some((&url[..origin_len], rest[cut..].trim_end_matches('/')))
}

/// The path the metadata of `resource` is published at (its path-specific form).
pub fn metadata_path(resource: &str) -> Option<String> {
    split(resource).map(|(_, path)| format!("{WELL_KNOWN}{path}"))
}

/// The absolute metadata URL of `resource`.
fn metadata_url(resource: &str) -> Option<String> {
    split(resource).map(|(origin, path)| format!("{origin}{WELL_KNOWN}{path}"))
}

impl AuthConfig {
    /// The metadata URL of this resource (`/.well-known/oauth-protected-resource/mcp` on its host).
    pub fn metadata_url(&self) -> Option<String> {
        self.oauth.as_ref()?;
        metadata_url(self.resource.as_deref()?)
    }

    /// The Protected Resource Metadata document (`None`: no OAuth resource is configured).
    pub fn metadata(&self) -> Option<Value> {
        self.oauth.as_ref()?;
        let mut doc = json!({
            "resource": self.resource.as_deref()?,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        Some(doc)
    }

    /// Whether `path` is one where this resource's metadata is published: the bare well-known
    /// path, the resource's path-specific form, or that of one of its views (`.../mcp/readonly`).
    pub fn serves_metadata_at(&self, path: &str) -> bool {
        let Some(own) = self.resource.as_deref().and_then(metadata_path) else {
            return false;
        };
        self.oauth.is_some()
            && (path == WELL_KNOWN
                || path == own
                || path.strip_prefix(own.as_str()).is_some_and(|r| r.starts_with('/')))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_the_metadata() {
        assert_eq!(
            metadata_url("https://h.example:8443/mcp?x#y").unwrap(),
            "https://h.example:8443/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://h/").unwrap(),
            "https://h/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_path("http://127.0.0.1:9/a/mcp").unwrap(),
            "/.well-known/oauth-protected-resource/a/mcp"
        );
        assert!(metadata_url("no-scheme").is_none());
    }

    #[test]
    fn the_document_and_where_it_is() {
        let c = AuthConfig::parse(Some(&json!({"resource": "https://h/mcp", "issuer": "https://i",
            "jwksUrl": "https://i/jwks", "requiredScopes": ["mcp"], "resourceName": "Tools"})))
        .unwrap()
        .unwrap();
        assert_eq!(
            c.metadata().unwrap(),
            json!({"resource": "https://h/mcp", "authorization_servers": ["https://i"],
                "bearer_methods_supported": ["header"], "scopes_supported": ["mcp"], "resource_name": "Tools"})
        );
        for (p, yes) in [
            (WELL_KNOWN, true),
            ("/.well-known/oauth-protected-resource/mcp", true),
            ("/.well-known/oauth-protected-resource/mcp/readonly", true),
            ("/.well-known/oauth-protected-resource/mcpx", false),
            ("/.well-known/oauth-authorization-server", false),
        ] {
            assert_eq!(c.serves_metadata_at(p), yes, "{p}");
        }
    }
}
