//! One issuer's signing keys: its JSON Web Key Set, fetched (from the configured URL, or from the `jwks_uri` of the
//! issuer's own metadata), kept, and fetched again when it grows old ([`REFRESH_EVERY`]) or when a token names a key
//! it does not hold — the issuer may have rotated its keys —, but then at most once every
//! [`UNKNOWN_KEY_REFETCH_EVERY`], so that tokens naming made-up keys cannot make the server hammer the issuer. Only
//! public keys of the asymmetric families are kept: a shared secret (`kty: oct`) in a key set is ignored, so no
//! token can be checked against one.

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, RwLock};

/// Keys older than this are fetched again at their next use; if that fails, the old ones serve on.
const REFRESH_EVERY: Duration = Duration::from_secs(3600);

/// The least time between two fetches caused by a token naming a key the set does not hold.
pub(super) const UNKNOWN_KEY_REFETCH_EVERY: Duration = Duration::from_secs(10);

/// The least time between two tries while no key set could be fetched yet.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest metadata document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Why no key could be found for a token.
#[derive(Debug)]
pub(super) enum KeyError {
    /// The set holds no key by that id (or, for a token naming none, not exactly one key).
    Unknown,
    /// No key set could be fetched yet (the reason went to the server's log).
    Unavailable,
}

/// The keys of one issuer.
pub(super) struct IssuerKeys {
    pub(super) issuer: String,
    /// Where the key set is, when configured; otherwise it is found in the issuer's metadata.
    configured_url: Option<String>,
    client: reqwest::Client,
    state: RwLock<Held>,
    /// Held while fetching, so that requests arriving together cause one fetch.
    fetching: Mutex<()>,
}

/// What is known of the key set.
#[derive(Default)]
struct Held {
    keys: Vec<Jwk>,
    /// When the keys were last fetched (None: never).
    fetched: Option<Instant>,
    /// When a fetch was last tried, whatever its outcome.
    tried: Option<Instant>,
    /// When a token naming an unknown key last caused a fetch.
    unknown_refetched: Option<Instant>,
    /// The key set's address, once found in the issuer's metadata.
    discovered_url: Option<String>,
}

impl Held {
    /// Whether the keys are missing or old, and a fetch may be tried now.
    fn refresh_due(&self) -> bool {
        let old = self.fetched.is_none_or(|at| at.elapsed() >= REFRESH_EVERY);
        old && self.tried.is_none_or(|at| at.elapsed() >= RETRY_AFTER_FAILURE)
    }

    /// Whether a token naming an unknown key may cause a fetch now.
    fn unknown_refetch_due(&self) -> bool {
        self.unknown_refetched.is_none_or(|at| at.elapsed() >= UNKNOWN_KEY_REFETCH_EVERY)
    }
}

impl IssuerKeys {
    pub(super) fn new(issuer: String, configured_url: Option<String>, client: reqwest::Client) -> Self {
        IssuerKeys { issuer, configured_url, client, state: RwLock::default(), fetching: Mutex::new(()) }
    }

    /// The key a token signed with `kid` (or naming none) is checked against.
    pub(super) async fn key_for(&self, kid: Option<&str>) -> Result<Jwk, KeyError> {
        if Held::refresh_due(&*self.state.read().await) {
            self.refresh_if(|held| held.refresh_due()).await;
        }
        if self.state.read().await.fetched.is_none() {
            return Err(KeyError::Unavailable);
        }
        if let Some(key) = self.find(kid).await {
            return Ok(key);
        }
        if !Held::unknown_refetch_due(&*self.state.read().await) {
            return Err(KeyError::Unknown);
        }
        self.refresh_if(|held| {
            let due = Held::unknown_refetch_due(held);
            if due {
                held.unknown_refetched = Some(Instant::now());
            }
            due
        })
        .await;
        self.find(kid).await.ok_or(KeyError::Unknown)
    }

    /// The held key named `kid`; with no `kid`, the only key held.
    async fn find(&self, kid: Option<&str>) -> Option<Jwk> {
        let held = self.state.read().await;
        match kid {
            Some(kid) => held.keys.iter().find(|key| key.common.key_id.as_deref() == Some(kid)).cloned(),
            None if held.keys.len() == 1 => held.keys.first().cloned(),
            None => None,
        }
    }

    /// Fetches the key set when `due` says so, checked once this request's turn to fetch has come (another request
    /// may have fetched meanwhile). A failure keeps the keys held, and is said on standard error.
    async fn refresh_if(&self, due: impl FnOnce(&mut Held) -> bool) {
        let _turn = self.fetching.lock().await;
        let url = {
            let mut held = self.state.write().await;
            if !due(&mut held) {
                return;
            }
            held.tried = Some(Instant::now());
            held.discovered_url.clone()
        };
        let fetched = self.fetch(url).await;
        let mut held = self.state.write().await;
        match fetched {
            Ok((keys, url)) => {
                held.keys = keys;
                held.fetched = Some(Instant::now());
                held.discovered_url = Some(url);
            }
            Err(why) => {
                eprintln!("agent-read: cannot fetch the signing keys of the issuer {}: {why}", self.issuer);
            }
        }
    }

    /// The usable keys of the set, and the address they came from.
    async fn fetch(&self, known_url: Option<String>) -> Result<(Vec<Jwk>, String), String> {
        let url = match self.configured_url.clone().or(known_url) {
            Some(url) => url,
            None => self.discover_jwks_url().await?,
        };
        let set: serde_json::Value = self.get_json(&url).await?;
        let Some(listed) = set.get("keys").and_then(serde_json::Value::as_array) else {
            return Err(format!("{url} is no JSON Web Key Set (no `keys` list)"));
        };
        let keys: Vec<Jwk> =
            listed.iter().filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok()).filter(usable).collect();
        Ok((keys, url))
    }

    /// The `jwks_uri` of the issuer's metadata: OAuth authorization server metadata (RFC 8414), else OpenID
    /// Connect discovery. The document must name this very issuer.
    async fn discover_jwks_url(&self) -> Result<String, String> {
        let mut failures = Vec::new();
        for url in metadata_urls(&self.issuer)? {
            match self.get_json(&url).await {
                Ok(document) => {
                    if document.get("issuer").and_then(serde_json::Value::as_str) != Some(self.issuer.as_str()) {
                        return Err(format!("the metadata at {url} names another issuer than {}", self.issuer));
                    }
                    let jwks = document.get("jwks_uri").and_then(serde_json::Value::as_str);
                    let jwks = jwks.ok_or_else(|| format!("the metadata at {url} names no jwks_uri"))?;
                    super::check_url("the issuer's jwks_uri", jwks)?;
                    return Ok(jwks.to_string());
                }
                Err(why) => failures.push(why),
            }
        }
        Err(failures.join("; "))
    }

    /// GETs `url` as JSON, at most [`MAX_DOCUMENT_BYTES`].
    async fn get_json(&self, url: &str) -> Result<serde_json::Value, String> {
        let mut response =
            self.client.get(url).timeout(FETCH_TIMEOUT).send().await.map_err(|e| format!("GET {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("GET {url}: {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("GET {url}: the document is larger than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))
    }
}

/// Whether a key may check signatures: a public key of an asymmetric family, not marked for encryption only.
fn usable(key: &Jwk) -> bool {
    let signing = !matches!(key.common.public_key_use, Some(PublicKeyUse::Encryption));
    let asymmetric = matches!(
        key.algorithm,
        AlgorithmParameters::RSA(_) | AlgorithmParameters::EllipticCurve(_) | AlgorithmParameters::OctetKeyPair(_)
    );
    signing && asymmetric
}

/// Where an issuer's metadata may be: the RFC 8414 address (the well-known path inserted before the issuer's own
/// path), then the OpenID Connect one (appended to it).
fn metadata_urls(issuer: &str) -> Result<[String; 2], String> {
    let parsed = reqwest::Url::parse(issuer).map_err(|e| format!("the issuer {issuer} is no URL: {e}"))?;
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    Ok([
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_connect_put_it() {
        let [oauth, oidc] = metadata_urls("https://auth.example/tenant/1/").unwrap();
        assert_eq!(oauth, "https://auth.example/.well-known/oauth-authorization-server/tenant/1");
        assert_eq!(oidc, "https://auth.example/tenant/1/.well-known/openid-configuration");
        let [oauth, _] = metadata_urls("https://auth.example").unwrap();
        assert_eq!(oauth, "https://auth.example/.well-known/oauth-authorization-server");
    }

    #[test]
    fn shared_secrets_and_encryption_keys_are_never_used_for_signatures() {
        let key = |json: serde_json::Value| serde_json::from_value::<Jwk>(json).unwrap();
        assert!(!usable(&key(serde_json::json!({"kty": "oct", "k": "c2VjcmV0", "kid": "s"}))));
        let rsa = serde_json::json!({"kty": "RSA", "n": "sXch", "e": "AQAB", "kid": "r"});
        assert!(usable(&key(rsa.clone())));
        let mut enc = rsa;
        enc["use"] = "enc".into();
        assert!(!usable(&key(enc)));
    }
}
