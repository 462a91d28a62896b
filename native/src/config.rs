//! Where the server's configuration comes from and how it changes: a catalog document or an MCP
//! client configuration read (`load`), and client configurations turned into upstreams (`mcp_config`,
//! a pure conversion). Watching both for changes is `crate::reload`.

pub(crate) mod load;
pub(crate) mod mcp_config;
