//! The cryptography of OAuth, all of it from one library, `ring`: the TLS of the HTTPS client that fetches an
//! issuer's keys (rustls' ring provider) and the checks of access tokens' signatures (a `jsonwebtoken` provider over
//! ring's verifiers, below). ring is small and builds for Linux, macOS and Windows alike; the other providers both
//! crates offer either build a large C library (aws-lc) or carry a crate with a standing advisory (RustCrypto's
//! `rsa`).
//!
//! Contract: the token provider only verifies, and only the asymmetric algorithms a token may be accepted with
//! (RSA PKCS#1 v1.5 and PSS with 2048- to 8192-bit keys, ECDSA on P-256 and P-384, Ed25519), each with a key of its
//! own family. It never signs and never derives keys: this server only checks tokens. Every refusal is an error,
//! never a panic.

use jsonwebtoken::crypto::{CryptoProvider, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::jwk::ThumbprintHash;
use jsonwebtoken::signature::{Error as SignatureError, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind};
use ring::signature::{self as ring_sig, RsaParameters, VerificationAlgorithm};

/// Makes ring the crypto of this process for rustls and for `jsonwebtoken`. Call it before building the HTTPS
/// client or checking a token; calling it again changes nothing.
pub(super) fn install() {
    // An `Err` means a provider was installed already: by an earlier call, since nothing else here installs one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = TOKEN_CRYPTO.install_default();
}

/// Verification of token signatures with ring.
static TOKEN_CRYPTO: CryptoProvider = CryptoProvider {
    signer_factory: |_, _| Err(ErrorKind::Provider("this server checks tokens and never signs one".into()).into()),
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| Err(no_private_keys()),
        rsa_pub_components_from_public_key: |_| Err(no_private_keys()),
        ec_pub_components_from_private_key: |_, _| Err(no_private_keys()),
        ed_pub_components_from_private_key: |_, _| Err(no_private_keys()),
        compute_digest: digest,
    },
};

fn no_private_keys() -> jsonwebtoken::errors::Error {
    ErrorKind::Provider("this server derives no keys: it only checks tokens against an issuer's public keys".into())
        .into()
}

fn digest(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let algorithm = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
        _ => return Err(ErrorKind::Provider("a thumbprint hash this server does not know".into()).into()),
    };
    Ok(ring::digest::digest(algorithm, data).as_ref().to_vec())
}

/// How ring checks a signature made with one algorithm.
#[derive(Clone, Copy)]
enum Check {
    /// RSA, whose key may come as a modulus and an exponent (a JWK) as well as DER.
    Rsa(&'static RsaParameters),
    /// ECDSA and EdDSA: the key as the bytes of its public point.
    Point(&'static dyn VerificationAlgorithm),
}

/// The check for `alg`, and the key family it needs; `None` for an algorithm no token is accepted with.
fn check_for(alg: Algorithm) -> Option<(Check, AlgorithmFamily)> {
    use AlgorithmFamily::{Ec, Ed, Rsa};
    Some(match alg {
        Algorithm::RS256 => (Check::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA256), Rsa),
        Algorithm::RS384 => (Check::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA384), Rsa),
        Algorithm::RS512 => (Check::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA512), Rsa),
        Algorithm::PS256 => (Check::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA256), Rsa),
        Algorithm::PS384 => (Check::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA384), Rsa),
        Algorithm::PS512 => (Check::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA512), Rsa),
        Algorithm::ES256 => (Check::Point(&ring_sig::ECDSA_P256_SHA256_FIXED), Ec),
        Algorithm::ES384 => (Check::Point(&ring_sig::ECDSA_P384_SHA384_FIXED), Ec),
        Algorithm::EdDSA => (Check::Point(&ring_sig::ED25519), Ed),
        // Shared secrets (HS*) are never accepted: an issuer's key is public.
        _ => return None,
    })
}

fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    let (check, family) = check_for(*alg).ok_or(ErrorKind::InvalidAlgorithm)?;
    if key.family() != family {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    Ok(Box::new(SignatureCheck { alg: *alg, check, key: key.clone() }))
}

/// One token signature check: an algorithm and the issuer's key for it.
struct SignatureCheck {
    alg: Algorithm,
    check: Check,
    key: DecodingKey,
}

impl Verifier<Vec<u8>> for SignatureCheck {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> std::result::Result<(), SignatureError> {
        let verified = match (self.check, self.key.kind()) {
            (Check::Rsa(params), DecodingKeyKind::RsaModulusExponent { n, e }) => {
                ring_sig::RsaPublicKeyComponents { n, e }.verify(params, message, signature)
            }
            (Check::Rsa(params), DecodingKeyKind::SecretOrDer(der)) => {
                ring_sig::UnparsedPublicKey::new(params, der).verify(message, signature)
            }
            (Check::Point(algorithm), DecodingKeyKind::SecretOrDer(point)) => {
                ring_sig::UnparsedPublicKey::new(algorithm, point).verify(message, signature)
            }
            (Check::Point(_), DecodingKeyKind::RsaModulusExponent { .. }) => return Err(SignatureError::new()),
        };
        verified.map_err(|_| SignatureError::new())
    }
}

impl JwtVerifier for SignatureCheck {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair};

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn signatures_verify_with_their_own_key_and_algorithm_only() {
        install();
        let rng = SystemRandom::new();
        let alg = &ring_sig::ECDSA_P256_SHA256_FIXED_SIGNING;
        let ec =
            EcdsaKeyPair::from_pkcs8(alg, EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap().as_ref(), &rng).unwrap();
        let point = ec.public_key().as_ref();
        let ec_key = DecodingKey::from_ec_components(&b64(&point[1..33]), &b64(&point[33..])).unwrap();
        let signature = b64(ec.sign(&rng, b"header.claims").unwrap().as_ref());
        assert!(jsonwebtoken::crypto::verify(&signature, b"header.claims", &ec_key, Algorithm::ES256).unwrap());
        assert!(!jsonwebtoken::crypto::verify(&signature, b"header.claimz", &ec_key, Algorithm::ES256).unwrap());
        // The same key under an algorithm of another family, or a shared-secret algorithm: refused outright.
        for other in [Algorithm::RS256, Algorithm::EdDSA, Algorithm::HS256] {
            assert!(jsonwebtoken::crypto::verify(&signature, b"header.claims", &ec_key, other).is_err(), "{other:?}");
        }

        let ed = Ed25519KeyPair::from_pkcs8(Ed25519KeyPair::generate_pkcs8(&rng).unwrap().as_ref()).unwrap();
        let ed_key = DecodingKey::from_ed_components(&b64(ed.public_key().as_ref())).unwrap();
        let signature = b64(ed.sign(b"header.claims").as_ref());
        assert!(jsonwebtoken::crypto::verify(&signature, b"header.claims", &ed_key, Algorithm::EdDSA).unwrap());
        assert!(!jsonwebtoken::crypto::verify(&signature, b"header.claims", &ec_key, Algorithm::ES256).unwrap());
    }

    #[test]
    fn nothing_is_signed_and_no_key_is_derived() {
        install();
        let secret = jsonwebtoken::EncodingKey::from_secret(b"a secret");
        let refused = jsonwebtoken::encode(&jsonwebtoken::Header::default(), &serde_json::json!({}), &secret);
        assert!(matches!(refused.unwrap_err().kind(), ErrorKind::Provider(_)));
        assert!((TOKEN_CRYPTO.key_utils.rsa_pub_components_from_public_key)(b"der").is_err());
        let thumbprint = (TOKEN_CRYPTO.key_utils.compute_digest)(b"abc", ThumbprintHash::SHA256).unwrap();
        assert_eq!(b64(&thumbprint), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
    }
}
