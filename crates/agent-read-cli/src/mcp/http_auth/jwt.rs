//! OAuth 2.0 access tokens as JWTs: checked against the issuer's published keys (see [`jwks`]), then for their
//! issuer, their audience (this server's resource URI), their lifetime and their scopes.
//!
//! Only asymmetric algorithms are accepted (RSA, RSA-PSS, ECDSA, EdDSA), each only with a key of its own kind and,
//! where the key names one, its own algorithm: a token saying `alg: none`, or `HS256` in the hope that the issuer's
//! public key is taken for a shared secret, is refused before any key is looked at.

use super::jwks::{IssuerKeys, KeyError};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// Seconds of clock difference allowed between the issuer and this server, on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 30;

/// Why a token was not accepted.
#[derive(Debug)]
pub(super) enum Refusal {
    /// Not a valid token for this server (`401`, `invalid_token`): why, in words safe for a header.
    Invalid(String),
    /// Valid, but without every scope required (`403`, `insufficient_scope`).
    InsufficientScope,
    /// The issuer's keys cannot be fetched: the token cannot be checked now (`503`).
    Unavailable,
}

/// What a valid token says of its holder.
pub(super) struct Holder {
    /// The token's subject, when it names one.
    pub subject: Option<String>,
    pub issuer: String,
}

/// Checks access tokens for one resource.
pub(super) struct JwtCheck {
    issuers: Vec<IssuerKeys>,
    /// The audience every token must name: this server's resource URI.
    resource: String,
    /// Scopes every token must carry.
    scopes: Vec<String>,
}

/// The claims read beyond those the validation checks.
#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: Option<String>,
    /// Space-separated scopes (RFC 9068, RFC 8693).
    scope: Option<String>,
    /// Scopes as some issuers list them (a list, or a space-separated string).
    scp: Option<Scopes>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scopes {
    List(Vec<String>),
    Text(String),
}

/// Just the issuer, read before the signature is checked to choose whose keys check it.
#[derive(Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

impl JwtCheck {
    pub(super) fn new(issuers: Vec<IssuerKeys>, resource: String, scopes: Vec<String>) -> Self {
        JwtCheck { issuers, resource, scopes }
    }

    /// Checks `token`; its holder when it is valid and carries every required scope.
    pub(super) async fn check(&self, token: &str) -> Result<Holder, Refusal> {
        let invalid = |why: &str| Refusal::Invalid(why.to_string());
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("the token is not a signed JWT"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(invalid("the token's algorithm is not accepted (only RS, PS, ES and EdDSA signatures)"));
        }
        let keys = self.issuer_of(token)?;
        let jwk = keys.key_for(header.kid.as_deref()).await.map_err(|e| match e {
            KeyError::Unknown => invalid("the token's signing key is not among the issuer's keys"),
            KeyError::Unavailable => Refusal::Unavailable,
        })?;
        if !fits(&jwk, header.alg) {
            return Err(invalid("the token's algorithm does not fit the issuer's key"));
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| invalid("the issuer's key cannot be used"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&keys.issuer]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| Refusal::Invalid(why(&e)))?;
        let claims = claims.claims;
        if !self.scopes.iter().all(|needed| claims.granted().any(|granted| granted == needed)) {
            return Err(Refusal::InsufficientScope);
        }
        Ok(Holder { subject: claims.sub, issuer: claims.iss })
    }

    /// The keys of the issuer the token names (unchecked yet: its signature is checked with these keys, and its
    /// issuer again after that).
    fn issuer_of(&self, token: &str) -> Result<&IssuerKeys, Refusal> {
        if let [only] = self.issuers.as_slice() {
            return Ok(only);
        }
        let named = jsonwebtoken::dangerous::insecure_decode_claims::<IssuerOnly>(token).ok().and_then(|c| c.iss);
        let found = named.and_then(|iss| self.issuers.iter().find(|keys| keys.issuer == iss));
        found.ok_or_else(|| Refusal::Invalid("the token's issuer is not accepted".to_string()))
    }
}

/// The algorithms accepted: every asymmetric one jsonwebtoken knows.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Whether a token signed with `alg` may be checked with `key`: the key's kind (and curve) fits the algorithm, and
/// the key names no other algorithm.
fn fits(key: &Jwk, alg: Algorithm) -> bool {
    let named_ok =
        key.common.key_algorithm.is_none_or(|named| named.to_string().parse::<Algorithm>().ok() == Some(alg));
    let kind_ok = match &key.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(ec) => {
            matches!(
                (&ec.curve, alg),
                (EllipticCurve::P256, Algorithm::ES256) | (EllipticCurve::P384, Algorithm::ES384)
            )
        }
        AlgorithmParameters::OctetKeyPair(okp) => okp.curve == EllipticCurve::Ed25519 && alg == Algorithm::EdDSA,
        // Shared secrets (`oct`), and kinds this version does not know.
        _ => false,
    };
    named_ok && kind_ok
}

/// Why validation failed, in words (no token content).
fn why(error: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidAudience => "the token is not meant for this server (its audience is another resource)",
        ErrorKind::InvalidIssuer => "the token's issuer is not accepted",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud)",
        _ => "the token is malformed",
    }
    .to_string()
}

impl Claims {
    /// Every scope the token grants, from `scope` and `scp`.
    fn granted(&self) -> impl Iterator<Item = &str> {
        let scp: Vec<&str> = match &self.scp {
            Some(Scopes::List(list)) => list.iter().map(String::as_str).collect(),
            Some(Scopes::Text(text)) => text.split_whitespace().collect(),
            None => Vec::new(),
        };
        self.scope.iter().flat_map(|text| text.split_whitespace()).chain(scp)
    }
}
