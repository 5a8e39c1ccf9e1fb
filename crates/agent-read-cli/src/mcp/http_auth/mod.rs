//! Who may use the HTTP face: clients that present a bearer token (`Authorization: Bearer TOKEN`), either one of the
//! static tokens of `--auth-token-file` (see [`tokens`]) or an OAuth 2.0 access token from a configured
//! authorization server (see [`jwt`]), as the MCP authorization specification has a resource server do. Both may be
//! configured at once: a token is accepted when it is one of the static tokens, or else a valid access token.
//!
//! With OAuth, the server publishes its OAuth 2.0 Protected Resource Metadata (RFC 9728) at
//! `/.well-known/oauth-protected-resource` and at that path followed by the resource's own path (`…/mcp`), and every
//! refusal names that document in its `WWW-Authenticate` header, so that a client can find where to get a token.
//!
//! A refusal is `401` (no token, or one not valid here: `invalid_token`), `403` (a valid access token without a
//! required scope: `insufficient_scope`, RFC 6750), or `503` while the issuer's keys cannot be fetched. No token is
//! ever logged or repeated in an answer.

mod crypto;
mod jwks;
mod jwt;
mod tokens;

use super::http_edges::Answer;
use agent_read::{HttpConfig, OAuthConfig};
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use jwt::{JwtCheck, Refusal};
use tokens::StaticTokens;

/// Where the protected resource metadata is served, before the resource's own path.
pub(super) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Who a request was authenticated as; put in the request's extensions, where rmcp's request context carries it
/// (`context.extensions.get::<axum::http::request::Parts>()` then `parts.extensions.get::<Authenticated>()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Authenticated(pub String);

/// The checks every request to the MCP path passes.
pub(super) struct Gate {
    tokens: Option<StaticTokens>,
    jwt: Option<JwtCheck>,
    metadata: Option<ResourceMetadata>,
}

/// The protected resource metadata document, and where it is served.
pub(super) struct ResourceMetadata {
    /// The JSON document.
    pub document: Bytes,
    /// The paths it is served at.
    pub paths: Vec<String>,
    /// Its full URL, named in `WWW-Authenticate`.
    url: String,
    /// The scopes required, named in `WWW-Authenticate`.
    scopes: String,
}

impl Gate {
    /// The gate `http` configures, or `None` when it configures no authentication.
    pub(super) fn from_config(http: &HttpConfig) -> Result<Option<Gate>, String> {
        let tokens = http.auth_token_file.as_deref().map(StaticTokens::load).transpose()?;
        let (jwt, metadata) = match &http.oauth {
            Some(oauth) => (Some(jwt_check(oauth)?), Some(ResourceMetadata::of(oauth)?)),
            None => (None, None),
        };
        Ok((tokens.is_some() || jwt.is_some()).then_some(Gate { tokens, jwt, metadata }))
    }

    /// The metadata document, when OAuth is configured.
    pub(super) fn metadata(&self) -> Option<&ResourceMetadata> {
        self.metadata.as_ref()
    }

    /// Who presents the request's token, or the answer refusing it.
    pub(super) async fn admit(&self, headers: &HeaderMap) -> Result<Authenticated, Answer> {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(self.refusal(StatusCode::UNAUTHORIZED, None));
        };
        let Some(token) = bearer_token(value) else {
            let why = "the Authorization header holds no bearer token (expected `Bearer TOKEN`)";
            return Err(self.refusal(StatusCode::UNAUTHORIZED, Some(("invalid_request", why))));
        };
        if let Some(number) = self.tokens.as_ref().and_then(|tokens| tokens.position(token.as_bytes())) {
            return Ok(Authenticated(format!("static token {number}")));
        }
        let Some(jwt) = &self.jwt else {
            return Err(self.refusal(StatusCode::UNAUTHORIZED, Some(("invalid_token", "the token is not accepted"))));
        };
        match jwt.check(token).await {
            Ok(holder) => {
                let subject = holder.subject.unwrap_or_else(|| "(no subject)".to_string());
                Ok(Authenticated(format!("{subject} from {}", holder.issuer)))
            }
            Err(Refusal::Invalid(why)) => Err(self.refusal(StatusCode::UNAUTHORIZED, Some(("invalid_token", &why)))),
            Err(Refusal::InsufficientScope) => {
                let why = "the token lacks a scope this server requires";
                Err(self.refusal(StatusCode::FORBIDDEN, Some(("insufficient_scope", why))))
            }
            Err(Refusal::Unavailable) => Err(keys_unavailable()),
        }
    }

    /// A `401` or `403` with its `WWW-Authenticate` challenge; `error` is the RFC 6750 code and its description.
    fn refusal(&self, status: StatusCode, error: Option<(&str, &str)>) -> Answer {
        let mut challenge = String::from("Bearer realm=\"agent-read\"");
        if let Some(metadata) = &self.metadata {
            challenge.push_str(&format!(", resource_metadata=\"{}\"", metadata.url));
            if !metadata.scopes.is_empty() {
                challenge.push_str(&format!(", scope=\"{}\"", metadata.scopes));
            }
        }
        if let Some((code, description)) = error {
            challenge.push_str(&format!(", error=\"{code}\", error_description=\"{description}\""));
        }
        let how = match &self.metadata {
            Some(metadata) => format!(
                "send `Authorization: Bearer TOKEN` with a static token of this server or an access token from \
                 the authorization server its metadata names ({})",
                metadata.url
            ),
            None => "send `Authorization: Bearer TOKEN` with a token of this server's token file".to_string(),
        };
        let said = match error {
            Some((_, description)) => format!("{description}; {how}"),
            None => format!("this server requires authentication: {how}"),
        };
        let mut answer = text_answer(status, said);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            answer.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        answer
    }
}

/// `503` while the issuer's keys cannot be fetched: the token may be fine, and may be tried again shortly.
fn keys_unavailable() -> Answer {
    let mut answer = text_answer(
        StatusCode::SERVICE_UNAVAILABLE,
        "the authorization server's signing keys cannot be fetched right now, so no access token can be checked; \
         try again shortly",
    );
    answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    answer
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in any case).
fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' ')).then_some(token)
}

/// A plain-text answer that closes the connection after it: a client without a valid token has nothing more to do
/// on it.
fn text_answer(status: StatusCode, text: impl Into<String>) -> Answer {
    let mut answer = axum::http::Response::new(http_body_util::Full::new(Bytes::from(text.into())).boxed());
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

/// The access token check `oauth` configures: its URLs checked, one key set per authorization server.
fn jwt_check(oauth: &OAuthConfig) -> Result<JwtCheck, String> {
    check_url("http.oauth.resource", &oauth.resource)?;
    for server in &oauth.authorization_servers {
        check_url("http.oauth.authorization_servers", server)?;
    }
    if let Some(url) = &oauth.jwks_url {
        check_url("http.oauth.jwks_url", url)?;
    }
    crypto::install();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::custom(|attempt| match check_url("a redirect", attempt.url().as_str()) {
            Ok(()) if attempt.previous().len() < 3 => attempt.follow(),
            Ok(()) => attempt.error("more than 3 redirects"),
            Err(why) => attempt.error(why),
        }))
        .build()
        .map_err(|e| format!("cannot set up the HTTPS client that fetches the issuer's keys: {e}"))?;
    let issuers = oauth
        .authorization_servers
        .iter()
        .map(|issuer| jwks::IssuerKeys::new(issuer.clone(), oauth.jwks_url.clone(), client.clone()))
        .collect();
    Ok(JwtCheck::new(issuers, oauth.resource.clone(), oauth.scopes.clone()))
}

/// Refuses a URL that is not `https` (plain `http` only to a loopback host, for a local authorization server).
pub(super) fn check_url(what: &str, url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{what}: `{url}` is no absolute URL ({e})"))?;
    let host = parsed.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
    let loopback = host.eq_ignore_ascii_case("localhost") || ip.is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!("{what}: `{url}` must be an https URL (http only to a loopback host)")),
    }
    .and_then(|()| match parsed.fragment() {
        Some(_) => Err(format!("{what}: `{url}` must not have a fragment (#…)")),
        None => Ok(()),
    })
}

impl ResourceMetadata {
    /// The document `oauth` describes (RFC 9728 §2), served at the well-known path and at that path followed by the
    /// resource's own path (§3.1).
    fn of(oauth: &OAuthConfig) -> Result<ResourceMetadata, String> {
        check_url("http.oauth.resource", &oauth.resource)?;
        let resource = reqwest::Url::parse(&oauth.resource).map_err(|e| format!("http.oauth.resource: {e}"))?;
        let own_path = resource.path().trim_end_matches('/');
        let mut paths = vec![METADATA_PATH.to_string()];
        if !own_path.is_empty() {
            paths.push(format!("{METADATA_PATH}{own_path}"));
        }
        let url = format!("{}{METADATA_PATH}{own_path}", resource.origin().ascii_serialization());
        let mut document = serde_json::json!({
            "resource": oauth.resource,
            "authorization_servers": oauth.authorization_servers,
            "bearer_methods_supported": ["header"],
            "resource_name": "agent-read",
        });
        if !oauth.scopes.is_empty() {
            document["scopes_supported"] = oauth.scopes.clone().into();
        }
        let document = serde_json::to_vec(&document).map_err(|e| format!("the resource metadata: {e}"))?;
        Ok(ResourceMetadata { document: Bytes::from(document), paths, url, scopes: oauth.scopes.join(" ") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(resource: &str) -> OAuthConfig {
        OAuthConfig {
            resource: resource.into(),
            authorization_servers: vec!["https://auth.example".into()],
            jwks_url: None,
            scopes: vec!["files:read".into(), "mcp".into()],
        }
    }

    #[test]
    fn the_metadata_names_the_resource_its_servers_and_scopes_at_both_paths() {
        let metadata = ResourceMetadata::of(&oauth("https://files.example/mcp")).unwrap();
        assert_eq!(metadata.paths, [METADATA_PATH, "/.well-known/oauth-protected-resource/mcp"]);
        assert_eq!(metadata.url, "https://files.example/.well-known/oauth-protected-resource/mcp");
        let document: serde_json::Value = serde_json::from_slice(&metadata.document).unwrap();
        assert_eq!(document["resource"], "https://files.example/mcp");
        assert_eq!(document["authorization_servers"][0], "https://auth.example");
        assert_eq!(document["scopes_supported"], serde_json::json!(["files:read", "mcp"]));
        let root = ResourceMetadata::of(&oauth("https://files.example/")).unwrap();
        assert_eq!(root.paths, [METADATA_PATH]);
    }

    #[test]
    fn urls_must_be_https_unless_they_stay_on_this_machine() {
        assert!(check_url("k", "https://auth.example/x").is_ok());
        assert!(check_url("k", "http://127.0.0.1:8080/jwks").is_ok());
        assert!(check_url("k", "http://localhost/jwks").is_ok());
        assert!(check_url("k", "http://[::1]:9/").is_ok());
        for bad in ["http://auth.example/", "ftp://auth.example/", "auth.example", "https://a.example/#f"] {
            let err = check_url("http.oauth.jwks_url", bad).unwrap_err();
            assert!(err.starts_with("http.oauth.jwks_url: "), "{bad}: {err}");
        }
    }

    #[test]
    fn only_a_bearer_scheme_with_one_token_is_read() {
        let token = |value: &str| bearer_token(&HeaderValue::from_str(value).unwrap()).map(str::to_string);
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("bearer  abc").as_deref(), Some("abc"));
        for bad in ["Basic abc", "Bearer", "Bearer ", "Bearer a b", "Bearerabc"] {
            assert_eq!(token(bad), None, "{bad}");
        }
    }
}
