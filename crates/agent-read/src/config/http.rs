//! The `[http]` table: how the MCP server's HTTP face authenticates its clients, how long it waits on them, and how
//! much any of them may hold. Plain data, like the rest of [`crate::Config`]; the HTTP face reads it (the library
//! itself serves no HTTP).

use crate::config_error::{ConfigError, ValueBound};
use serde::Deserialize;
use std::path::PathBuf;

/// The `[http]` table. Every field has a default, so a configuration without the table serves as before, with the
/// limits below.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// A file of static bearer tokens, one a line (`--auth-token-file`; see the README for its format).
    pub auth_token_file: Option<PathBuf>,
    /// OAuth 2.0 access tokens (JWTs) from the named authorization servers (`[http.oauth]`).
    pub oauth: Option<OAuthConfig>,
    /// Serve beyond loopback (or for any `Host`) without authentication (`--insecure-no-auth`).
    pub insecure_no_auth: bool,
    /// Milliseconds a connection may take to send a request's head (its request line and headers), counted from
    /// the connection's opening or from its first byte after an idle pause.
    pub head_timeout_ms: u64,
    /// Milliseconds a request may take to send its body once its head has arrived.
    pub body_timeout_ms: u64,
    /// Milliseconds a kept-alive connection may sit idle between requests before it is closed.
    pub idle_timeout_ms: u64,
    /// Connections served at once; further ones wait in the system's queue, and an idle one is closed to make room.
    pub max_connections: usize,
    /// MCP sessions held at once; a new one ends the longest-idle session, or is refused (`503`) when every session
    /// has a call running.
    pub max_sessions: usize,
    /// Calls one session may have running or waiting at once; further ones are refused (`429`) until one ends.
    pub max_calls_per_session: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            auth_token_file: None,
            oauth: None,
            insecure_no_auth: false,
            head_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            idle_timeout_ms: 30_000,
            max_connections: 1024,
            max_sessions: 1000,
            max_calls_per_session: 64,
        }
    }
}

/// The `[http.oauth]` table: this server as an OAuth 2.0 resource server, as the MCP authorization specification
/// describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// This server's resource URI as clients reach it (`https://files.example.com/mcp`): the audience every access
    /// token must name, and the `resource` of the protected resource metadata.
    pub resource: String,
    /// The issuers whose access tokens are accepted (at least one), named in the metadata for clients to find.
    pub authorization_servers: Vec<String>,
    /// Where the issuer's JSON Web Key Set is; by default, the `jwks_uri` of the issuer's own metadata. Only with a
    /// single authorization server.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Scopes every access token must carry (in its `scope` or `scp` claim); listed as `scopes_supported`.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// The longest timeout accepted, in milliseconds.
const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// The most connections one server may be configured to serve at once (far beyond what one process serves well).
const MAX_CONNECTIONS: usize = 1_000_000;

impl HttpConfig {
    /// Whether clients must authenticate: a token file or OAuth is configured. Other parts of the server ask this
    /// before they allow what only an authenticated client may do.
    pub fn authenticates(&self) -> bool {
        self.auth_token_file.is_some() || self.oauth.is_some()
    }

    /// Checks the values can be served; the error names the key and what it accepts.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_limits()?;
        self.check_authentication()
    }

    /// Timeouts between 1 ms and a day, caps at least 1.
    fn check_limits(&self) -> Result<(), ConfigError> {
        let positive = [
            ("http.head_timeout_ms", self.head_timeout_ms),
            ("http.body_timeout_ms", self.body_timeout_ms),
            ("http.idle_timeout_ms", self.idle_timeout_ms),
            ("http.max_connections", self.max_connections as u64),
            ("http.max_sessions", self.max_sessions as u64),
            ("http.max_calls_per_session", self.max_calls_per_session as u64),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::OutOfRange { key, bound: ValueBound::AtLeast(1) });
        }
        if let Some((key, _)) = positive[..3].iter().find(|(_, ms)| *ms > MAX_TIMEOUT_MS) {
            return Err(ConfigError::OutOfRange { key, bound: ValueBound::AtMost(MAX_TIMEOUT_MS) });
        }
        if self.max_connections > MAX_CONNECTIONS {
            return Err(ConfigError::OutOfRange {
                key: "http.max_connections",
                bound: ValueBound::AtMost(MAX_CONNECTIONS as u64),
            });
        }
        Ok(())
    }

    /// No opt-out beside authentication; OAuth with an issuer, and a key set URL only for a single one.
    fn check_authentication(&self) -> Result<(), ConfigError> {
        if self.authenticates() && self.insecure_no_auth {
            return Err(ConfigError::InsecureNoAuthWithAuthentication);
        }
        if let Some(oauth) = &self.oauth {
            if oauth.authorization_servers.is_empty() {
                return Err(ConfigError::OAuthWithoutIssuer);
            }
            if oauth.jwks_url.is_some() && oauth.authorization_servers.len() > 1 {
                return Err(ConfigError::JwksUrlWithSeveralIssuers);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limits_and_contradictions_are_named() {
        let zero = HttpConfig { body_timeout_ms: 0, ..HttpConfig::default() };
        assert!(zero.validate().unwrap_err().to_string().contains("http.body_timeout_ms must be at least 1"));
        let long = HttpConfig { idle_timeout_ms: u64::MAX, ..HttpConfig::default() };
        assert!(long.validate().unwrap_err().to_string().contains("http.idle_timeout_ms must be at most 86400000"));
        let huge = HttpConfig { max_connections: usize::MAX, ..HttpConfig::default() };
        assert!(huge.validate().unwrap_err().to_string().contains("http.max_connections must be at most 1000000"));
        let both = HttpConfig { auth_token_file: Some("t".into()), insecure_no_auth: true, ..HttpConfig::default() };
        assert!(both.validate().unwrap_err().to_string().contains("contradicts"));
        let oauth = |servers: &[&str], jwks: Option<&str>| HttpConfig {
            oauth: Some(OAuthConfig {
                resource: "https://files.example/mcp".into(),
                authorization_servers: servers.iter().map(|s| s.to_string()).collect(),
                jwks_url: jwks.map(str::to_string),
                scopes: vec![],
            }),
            ..HttpConfig::default()
        };
        assert!(oauth(&[], None).validate().unwrap_err().to_string().contains("names no issuer"));
        let two = oauth(&["https://a", "https://b"], Some("https://a/jwks")).validate().unwrap_err();
        assert!(two.to_string().contains("drop jwks_url"), "{two}");
        assert!(oauth(&["https://a"], Some("https://a/jwks")).validate().is_ok());
        assert!(oauth(&["https://a"], None).authenticates());
        assert!(!HttpConfig::default().authenticates());
    }
}
