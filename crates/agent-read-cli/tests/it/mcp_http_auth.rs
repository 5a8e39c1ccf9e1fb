//! Authentication of the MCP face over HTTP, tested as clients and attackers use it: `agent-read mcp --http` runs as
//! a child process; static bearer tokens come from a token file, OAuth access tokens are JWTs signed in the test with
//! keys made in the test, whose JSON Web Key Set (and the issuer's metadata) a small server of the test serves on
//! loopback.

use crate::common::http::{HttpServer, INITIALIZE, raw_exchange, raw_post, raw_post_with};
use crate::common::mcp::{call, text_of, workspace};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, Header};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const TOKEN: &str = "3f1c9a7e5b2d4f6081a3c5e7f9b1d3e5";
const OTHER_TOKEN: &str = "c0ffee00c0ffee00c0ffee00c0ffee00ab";

/// A private file in `dir` holding `text`.
fn private_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

/// The status line and headers of a raw answer, and its body.
fn split(answer: &str) -> (&str, &str) {
    answer.split_once("\r\n\r\n").unwrap_or((answer, ""))
}

/// The value of header `name` in a raw answer's head.
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let (head, _) = split(answer);
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// An `initialize` POST with `Authorization: Bearer token`.
fn post_with_token(server: &HttpServer, token: &str) -> String {
    raw_post_with(server.authority(), server.authority(), &format!("Authorization: Bearer {token}\r\n"), INITIALIZE)
}

#[tokio::test]
async fn with_a_token_file_requests_without_the_right_token_are_refused_and_the_token_is_never_shown() {
    let dir = workspace();
    let secrets = tempfile::tempdir().unwrap();
    let file = private_file(secrets.path(), "tokens", &format!("# agents\n{OTHER_TOKEN}\n\n{TOKEN}\n"));
    let server = HttpServer::start(dir.path(), &["--auth-token-file", file.to_str().unwrap()]);
    let missing = raw_post(server.authority(), server.authority(), INITIALIZE);
    assert!(missing.starts_with("HTTP/1.1 401"), "{missing}");
    assert_eq!(header(&missing, "www-authenticate"), Some(r#"Bearer realm="agent-read""#), "{missing}");
    assert!(missing.contains("Authorization: Bearer TOKEN"), "the refusal says what to send: {missing}");
    let near_misses = [&TOKEN[..31], &format!("{TOKEN}0"), &TOKEN.to_uppercase(), "", &format!("{TOKEN} {TOKEN}")];
    for wrong in near_misses {
        let answer = post_with_token(&server, wrong);
        assert!(answer.starts_with("HTTP/1.1 401"), "{wrong}: {answer}");
        assert!(header(&answer, "www-authenticate").is_some_and(|c| c.starts_with("Bearer ")), "{answer}");
    }
    for scheme in ["Basic", "Token", "Bearer:"] {
        let answer = raw_post_with(
            server.authority(),
            server.authority(),
            &format!("Authorization: {scheme} {TOKEN}\r\n"),
            INITIALIZE,
        );
        assert!(answer.starts_with("HTTP/1.1 401"), "{scheme}: {answer}");
    }
    // Two Authorization headers, one of them right: refused, rather than guess which one counts.
    let doubled = format!("Authorization: Bearer {OTHER_TOKEN}x\r\nAuthorization: Bearer {TOKEN}\r\n");
    let answer = raw_post_with(server.authority(), server.authority(), &doubled, INITIALIZE);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    // Either token of the file is accepted, in any case of the scheme; a real client with it reads.
    assert!(post_with_token(&server, OTHER_TOKEN).starts_with("HTTP/1.1 200"));
    let lower = format!("authorization: bearer {TOKEN}\r\n");
    assert!(raw_post_with(server.authority(), server.authority(), &lower, INITIALIZE).starts_with("HTTP/1.1 200"));
    let client = server.connect_with_token(TOKEN).await;
    assert!(text_of(&call(&client, json!({"path": "notes.txt", "limit": 1})).await).starts_with("1: line 1\n"));
    client.cancel().await.unwrap();
    // The authentication comes before anything else: a refused client learns nothing of sessions or bodies.
    let head = format!("DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: any\r\n", server.authority());
    assert!(raw_exchange(server.authority(), &head, "").starts_with("HTTP/1.1 401"));
    // A body announced and never sent: the refusal comes without waiting for it.
    let mut stream = std::net::TcpStream::connect(server.authority()).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 5242880\r\n\r\n",
        server.authority()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let said = server.stderr();
    assert!(!said.contains(TOKEN) && !said.contains(OTHER_TOKEN), "a token reached the log: {said}");
    assert!(said.contains("bearer tokens required"), "{said}");
}

/// `agent-read mcp` with `args`, expected to refuse to start: its standard error.
fn refused_start(args: &[&str]) -> String {
    let dir = workspace();
    let output = Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .arg("mcp")
        .args(args)
        .arg("--root")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
#[cfg(unix)]
fn a_token_file_that_is_short_shared_or_empty_is_refused_without_showing_a_token() {
    use std::os::unix::fs::PermissionsExt;
    let secrets = tempfile::tempdir().unwrap();
    let short = private_file(secrets.path(), "short", "hunter2-but-longer\n");
    let said = refused_start(&["--http", "127.0.0.1:0", "--auth-token-file", short.to_str().unwrap()]);
    assert!(said.contains("line 1 has 18 characters, fewer than 32") && !said.contains("hunter2"), "{said}");
    let shared = private_file(secrets.path(), "shared", TOKEN);
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
    let said = refused_start(&["--http", "127.0.0.1:0", "--auth-token-file", shared.to_str().unwrap()]);
    assert!(said.contains("chmod 600") && !said.contains(TOKEN), "{said}");
    let empty = private_file(secrets.path(), "empty", "# nobody yet\n");
    let said = refused_start(&["--http", "127.0.0.1:0", "--auth-token-file", empty.to_str().unwrap()]);
    assert!(said.contains("holds no token"), "{said}");
    let said = refused_start(&["--http", "127.0.0.1:0", "--auth-token-file", "/nonexistent/tokens"]);
    assert!(said.contains("cannot read the token file /nonexistent/tokens"), "{said}");
    let said = refused_start(&["--auth-token-file", shared.to_str().unwrap()]);
    assert!(said.contains("--http"), "the flag needs --http: {said}");
}

#[test]
fn serving_beyond_loopback_or_for_any_host_without_authentication_is_refused_with_the_fix() {
    for args in [
        &["--http", "0.0.0.0:0"][..],
        &["--http", "[::]:0"][..],
        &["--http", "10.255.255.1:0"][..],
        &["--http", "127.0.0.1:0", "--allow-host", "*"][..],
        &["--http", "127.0.0.1:0", "--stateless", "--allow-host", "files.internal", "--allow-host", "*"][..],
    ] {
        let said = refused_start(args);
        assert!(said.contains("refusing to serve") && said.contains("without authentication"), "{args:?}: {said}");
        assert!(said.contains("--auth-token-file FILE") && said.contains("--insecure-no-auth"), "{said}");
    }
    // The configuration's key is the same opt-out, and it cannot be combined with authentication.
    let secrets = tempfile::tempdir().unwrap();
    let tokens = private_file(secrets.path(), "tokens", TOKEN);
    let contradiction = format!("[http]\ninsecure_no_auth = true\nauth_token_file = {:?}\n", tokens.to_str().unwrap());
    let config = private_file(secrets.path(), "contradiction.toml", &contradiction);
    let said = refused_start(&["--http", "127.0.0.1:0", "--config", config.to_str().unwrap()]);
    assert!(said.contains("contradicts"), "{said}");
}

#[tokio::test]
async fn insecure_no_auth_serves_anyway_and_warns_and_authentication_needs_no_opt_out() {
    let dir = workspace();
    let server = HttpServer::start(dir.path(), &["--allow-host", "*", "--insecure-no-auth"]);
    let said = server.stderr();
    assert!(said.contains("WARNING: serving for any Host (--allow-host '*') without authentication"), "{said}");
    assert!(raw_post(server.authority(), "anything.example", INITIALIZE).starts_with("HTTP/1.1 200"));
    let secrets = tempfile::tempdir().unwrap();
    let tokens = private_file(secrets.path(), "tokens", TOKEN);
    let config = private_file(
        secrets.path(),
        "config.toml",
        &format!("[http]\nauth_token_file = {:?}\n", tokens.to_str().unwrap()),
    );
    let server = HttpServer::start(dir.path(), &["--allow-host", "*", "--config", config.to_str().unwrap()]);
    assert!(!server.stderr().contains("WARNING"), "{}", server.stderr());
    assert!(raw_post(server.authority(), "anything.example", INITIALIZE).starts_with("HTTP/1.1 401"));
    assert!(post_with_token(&server, TOKEN).starts_with("HTTP/1.1 200"));
    // On loopback without authentication, as before: no refusal, no warning.
    let plain = HttpServer::start(dir.path(), &[]);
    assert!(!plain.stderr().contains("WARNING"), "{}", plain.stderr());
}

/// A key the test signs tokens with, and its public JWK.
struct SigningKey {
    alg: Algorithm,
    kid: String,
    pair: KeyPair,
    jwk: Jwk,
}

/// A private key, with ring (the server's own crypto).
enum KeyPair {
    Rsa(ring::rsa::KeyPair),
    Ecdsa(ring::signature::EcdsaKeyPair),
    Ed25519(ring::signature::Ed25519KeyPair),
}

/// A 2048-bit RSA key for the tests only (ring makes no RSA keys), in PKCS#8: `openssl genpkey -algorithm RSA -pkeyopt
/// rsa_keygen_bits:2048 | openssl pkcs8 -topk8 -nocrypt -outform DER`.
const RSA_TEST_KEY: &[u8] = include_bytes!("../fixtures/oauth/rsa-2048-test-key.pk8");

impl SigningKey {
    fn rsa(kid: &str) -> SigningKey {
        let pair = ring::rsa::KeyPair::from_pkcs8(RSA_TEST_KEY).unwrap();
        let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(pair.public());
        let jwk = json!({"kty": "RSA", "n": b64(&public.n), "e": b64(&public.e)});
        SigningKey::of(Algorithm::RS256, kid, KeyPair::Rsa(pair), jwk)
    }

    fn p256(kid: &str) -> SigningKey {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING as P256, EcdsaKeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&P256, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&P256, pkcs8.as_ref(), &rng).unwrap();
        // The public point, uncompressed: 0x04, then x and y.
        let point = pair.public_key().as_ref().to_vec();
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..])});
        SigningKey::of(Algorithm::ES256, kid, KeyPair::Ecdsa(pair), jwk)
    }

    fn ed25519(kid: &str) -> SigningKey {
        use ring::signature::{Ed25519KeyPair, KeyPair as _};
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())});
        SigningKey::of(Algorithm::EdDSA, kid, KeyPair::Ed25519(pair), jwk)
    }

    fn of(alg: Algorithm, kid: &str, pair: KeyPair, mut jwk: Value) -> SigningKey {
        jwk["kid"] = json!(kid);
        let jwk = serde_json::from_value(jwk).unwrap();
        SigningKey { alg, kid: kid.to_string(), pair, jwk }
    }

    /// A token of `claims`, signed with this key and naming it.
    fn sign(&self, claims: &Value) -> String {
        self.sign_with(&Header { kid: Some(self.kid.clone()), ..Header::new(self.alg) }, claims)
    }

    /// A token of `header` and `claims`, signed with this key.
    fn sign_with(&self, header: &Header, claims: &Value) -> String {
        let input = signing_input(header, claims);
        let rng = ring::rand::SystemRandom::new();
        let signature = match &self.pair {
            KeyPair::Rsa(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(&ring::signature::RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut signature).unwrap();
                signature
            }
            KeyPair::Ecdsa(pair) => pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            KeyPair::Ed25519(pair) => pair.sign(input.as_bytes()).as_ref().to_vec(),
        };
        format!("{input}.{}", b64(&signature))
    }
}

/// What a token's signature covers: its header and its claims, each base64url-encoded JSON.
fn signing_input(header: &Header, claims: &Value) -> String {
    format!("{}.{}", b64(&serde_json::to_vec(header).unwrap()), b64(&serde_json::to_vec(claims).unwrap()))
}

/// A token of `header` and `claims` with an HMAC-SHA256 signature keyed with `secret`.
fn sign_hs256(header: &Header, claims: &Value, secret: &[u8]) -> String {
    let input = signing_input(header, claims);
    let tag = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret), input.as_bytes());
    format!("{input}.{}", b64(tag.as_ref()))
}

/// An authorization server of the test, on loopback: its metadata (RFC 8414) and its key set, which the test may
/// change; it counts the fetches of the key set.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    fn start(keys: &[&SigningKey]) -> Issuer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let issuer = Issuer { url: url.clone(), keys: Arc::default(), fetches: Arc::default() };
        issuer.publish(keys);
        let (keys, fetches) = (issuer.keys.clone(), issuer.fetches.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let mut reader = BufReader::new(stream);
                let mut request_line = String::new();
                let _ = reader.read_line(&mut request_line);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_string();
                let (status, body) = match path.as_str() {
                    "/.well-known/oauth-authorization-server" => {
                        ("200 OK", json!({"issuer": url, "jwks_uri": format!("{url}/jwks")}))
                    }
                    "/jwks" => {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        ("200 OK", json!({"keys": *keys.lock().unwrap()}))
                    }
                    _ => ("404 Not Found", json!({})),
                };
                let body = body.to_string();
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        issuer
    }

    /// Serves these keys from now on.
    fn publish(&self, keys: &[&SigningKey]) {
        *self.keys.lock().unwrap() = keys.iter().map(|key| serde_json::to_value(&key.jwk).unwrap()).collect();
    }
}

/// This server's resource URI in the tests: what every token's audience must be.
const RESOURCE: &str = "https://files.example/mcp";

/// Claims valid for `issuer`, with `scope`, expiring `exp_in` seconds from now.
fn claims(issuer: &str, scope: &str, exp_in: i64) -> Value {
    let now = jsonwebtoken::get_current_timestamp() as i64;
    json!({"iss": issuer, "sub": "alice", "aud": RESOURCE, "scope": scope, "iat": now, "exp": now + exp_in})
}

/// A server that accepts access tokens from `issuer`, requiring the scope `files:read`.
fn oauth_server(issuer: &Issuer, config_dir: &Path, extra: &str) -> (tempfile::TempDir, HttpServer) {
    let dir = workspace();
    let toml = format!(
        "[http.oauth]\nresource = {RESOURCE:?}\nauthorization_servers = [{:?}]\nscopes = [\"files:read\"]\n{extra}",
        issuer.url
    );
    let config = private_file(config_dir, "oauth.toml", &toml);
    let server = HttpServer::start(dir.path(), &["--config", config.to_str().unwrap()]);
    (dir, server)
}

/// The status code of an answer and its `WWW-Authenticate` challenge.
fn refusal(answer: &str) -> (&str, &str) {
    (answer.get(9..12).unwrap_or_default(), header(answer, "www-authenticate").unwrap_or_default())
}

const METADATA_URL: &str = "https://files.example/.well-known/oauth-protected-resource/mcp";

#[tokio::test]
async fn the_protected_resource_metadata_names_the_resource_its_authorization_servers_and_scopes() {
    let key = SigningKey::p256("k1");
    let issuer = Issuer::start(&[&key]);
    let config_dir = tempfile::tempdir().unwrap();
    let (_dir, server) = oauth_server(&issuer, config_dir.path(), "");
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let head = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n", server.authority());
        let answer = raw_exchange(server.authority(), &head, "");
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
        assert_eq!(header(&answer, "content-type"), Some("application/json"));
        let document: Value = serde_json::from_str(split(&answer).1).unwrap();
        assert_eq!(document["resource"], RESOURCE);
        assert_eq!(document["authorization_servers"], json!([issuer.url]));
        assert_eq!(document["scopes_supported"], json!(["files:read"]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
    let missing = raw_post(server.authority(), server.authority(), INITIALIZE);
    let (status, challenge) = refusal(&missing);
    assert_eq!(status, "401", "{missing}");
    assert_eq!(
        challenge,
        format!(r#"Bearer realm="agent-read", resource_metadata="{METADATA_URL}", scope="files:read""#)
    );
    // Without OAuth there is no metadata to serve.
    let plain = HttpServer::start(_dir.path(), &[]);
    let head = format!("GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {}\r\n", plain.authority());
    assert!(raw_exchange(plain.authority(), &head, "").starts_with("HTTP/1.1 404"));
}

#[tokio::test]
async fn access_tokens_are_checked_for_signature_issuer_audience_lifetime_and_scope() {
    let (rsa, ec, ed) = (SigningKey::rsa("rsa-1"), SigningKey::p256("ec-1"), SigningKey::ed25519("ed-1"));
    let issuer = Issuer::start(&[&rsa, &ec, &ed]);
    let config_dir = tempfile::tempdir().unwrap();
    let (_dir, server) = oauth_server(&issuer, config_dir.path(), "");
    let valid = claims(&issuer.url, "openid files:read", 300);
    for key in [&rsa, &ec, &ed] {
        let answer = post_with_token(&server, &key.sign(&valid));
        assert!(answer.starts_with("HTTP/1.1 200"), "{:?}: {answer}", key.alg);
    }
    let client = server.connect_with_token(&rsa.sign(&valid)).await;
    assert!(text_of(&call(&client, json!({"path": "notes.txt", "limit": 1})).await).starts_with("1: line 1\n"));
    client.cancel().await.unwrap();
    // `scp` as a list serves as well as `scope`.
    let mut scp = valid.clone();
    scp.as_object_mut().unwrap().remove("scope");
    scp["scp"] = json!(["files:read"]);
    assert!(post_with_token(&server, &ec.sign(&scp)).starts_with("HTTP/1.1 200"));

    let now = jsonwebtoken::get_current_timestamp() as i64;
    let with = |key: &str, value: Value| {
        let mut claims = valid.clone();
        claims[key] = value;
        claims
    };
    let mut no_exp = valid.clone();
    no_exp.as_object_mut().unwrap().remove("exp");
    let stranger = SigningKey::p256("ec-1");
    let cases = [
        ("another issuer", ec.sign(&with("iss", json!("https://evil.example"))), "issuer"),
        ("another audience", ec.sign(&with("aud", json!("https://other.example/mcp"))), "audience"),
        ("audience of a sibling path", ec.sign(&with("aud", json!("https://files.example/mcp2"))), "audience"),
        ("expired beyond the leeway", ec.sign(&with("exp", json!(now - 120))), "expired"),
        ("not valid yet", ec.sign(&with("nbf", json!(now + 600))), "not valid yet"),
        ("no expiry", ec.sign(&no_exp), "required claim"),
        ("signed by another key under a known kid", stranger.sign(&valid), "signature"),
        ("garbage", "not.a.jwt".to_string(), "not a signed JWT"),
    ];
    for (what, token, said) in cases {
        let answer = post_with_token(&server, &token);
        let (status, challenge) = refusal(&answer);
        assert_eq!(status, "401", "{what}: {answer}");
        assert!(challenge.contains(r#"error="invalid_token""#) && challenge.contains(said), "{what}: {challenge}");
        assert!(challenge.contains(&format!(r#"resource_metadata="{METADATA_URL}""#)), "{what}: {challenge}");
    }
    // Within the leeway, a token just expired still serves (clocks differ).
    assert!(post_with_token(&server, &ec.sign(&with("exp", json!(now - 5)))).starts_with("HTTP/1.1 200"));
    let unscoped = post_with_token(&server, &rsa.sign(&with("scope", json!("openid files:write"))));
    let (status, challenge) = refusal(&unscoped);
    assert_eq!(status, "403", "{unscoped}");
    assert!(challenge.contains(r#"error="insufficient_scope""#) && challenge.contains(r#"scope="files:read""#));
    assert!(!server.stderr().contains(&rsa.sign(&valid)[..40]), "a token reached the log");
}

/// base64url without padding.
fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test]
async fn unsigned_and_symmetric_tokens_are_refused_whatever_key_they_name() {
    let rsa = SigningKey::rsa("rsa-1");
    // A key set that also lists a shared secret, which no token may be checked against.
    let issuer = Issuer::start(&[&rsa]);
    issuer.keys.lock().unwrap().push(json!({"kty": "oct", "kid": "shared", "k": b64(b"a shared secret")}));
    let config_dir = tempfile::tempdir().unwrap();
    let (_dir, server) = oauth_server(&issuer, config_dir.path(), "");
    let valid = claims(&issuer.url, "files:read", 300);
    let payload = b64(valid.to_string().as_bytes());
    let none = format!("{}.{payload}.", b64(br#"{"alg":"none","typ":"JWT","kid":"rsa-1"}"#));
    let none_upper = format!("{}.{payload}.", b64(br#"{"alg":"None","typ":"JWT"}"#));
    // The algorithm confusion: HS256, keyed with what is public — the issuer's RSA key as its JWK publishes it.
    let public = serde_json::to_vec(&rsa.jwk).unwrap();
    let hs = |kid: &str, secret: &[u8]| {
        let header = Header { kid: Some(kid.to_string()), ..Header::new(Algorithm::HS256) };
        sign_hs256(&header, &valid, secret)
    };
    let rsa_n = rsa.jwk.algorithm.clone();
    let modulus = match rsa_n {
        jsonwebtoken::jwk::AlgorithmParameters::RSA(params) => params.n,
        _ => unreachable!(),
    };
    // An RSA-PSS/ES token naming the RSA key with a mismatched algorithm.
    let es_on_rsa = {
        let ec = SigningKey::p256("rsa-1");
        ec.sign(&valid)
    };
    // The attacker's own key, offered in the token's header (embedded, or by URL): never used.
    let attacker = SigningKey::p256("rsa-1");
    let attacker_own = SigningKey::p256("attacker");
    let embedded = {
        let header = Header { jwk: Some(attacker.jwk.clone()), ..Header::new(Algorithm::ES256) };
        attacker.sign_with(&header, &valid)
    };
    let by_url = {
        let header = Header {
            kid: Some("attacker".into()),
            jku: Some("http://127.0.0.1:9/jwks".into()),
            ..Header::new(Algorithm::ES256)
        };
        attacker_own.sign_with(&header, &valid)
    };
    let cases = [
        ("a key embedded in the header", embedded),
        ("a key set named by the header", by_url),
        ("alg none", none),
        ("alg None", none_upper),
        ("HS256 keyed with the public JWK", hs("rsa-1", &public)),
        ("HS256 keyed with the modulus", hs("rsa-1", modulus.as_bytes())),
        ("HS256 naming the shared secret of the key set", hs("shared", b"a shared secret")),
        ("ES256 naming an RSA key", es_on_rsa),
    ];
    for (what, token) in cases {
        let answer = post_with_token(&server, &token);
        let (status, challenge) = refusal(&answer);
        assert_eq!(status, "401", "{what}: {answer}");
        assert!(challenge.contains(r#"error="invalid_token""#), "{what}: {challenge}");
    }
    assert!(post_with_token(&server, &rsa.sign(&valid)).starts_with("HTTP/1.1 200"), "the key set still serves");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_at_once_and_made_up_key_ids_cannot_make_the_server_hammer_the_issuer() {
    let (first, second) = (SigningKey::p256("2024"), SigningKey::ed25519("2025"));
    let issuer = Issuer::start(&[&first]);
    let config_dir = tempfile::tempdir().unwrap();
    let (_dir, server) = oauth_server(&issuer, config_dir.path(), "");
    let valid = claims(&issuer.url, "files:read", 300);
    assert!(post_with_token(&server, &first.sign(&valid)).starts_with("HTTP/1.1 200"));
    assert!(post_with_token(&server, &first.sign(&valid)).starts_with("HTTP/1.1 200"));
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1, "the key set is kept");
    // The issuer rotates: a token naming the new key makes the server fetch the set again, and it serves.
    issuer.publish(&[&second]);
    assert!(post_with_token(&server, &second.sign(&valid)).starts_with("HTTP/1.1 200"));
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    // The retired key is gone with the old set.
    let answer = post_with_token(&server, &first.sign(&valid));
    assert!(refusal(&answer).1.contains("not among the issuer's keys"), "{answer}");
    // A stream of tokens naming made-up keys: refused, and the key set is not fetched for each.
    for n in 0..20 {
        let made_up = SigningKey::p256(&format!("made-up-{n}"));
        let answer = post_with_token(&server, &made_up.sign(&valid));
        assert_eq!(refusal(&answer).0, "401", "{answer}");
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2, "unknown keys fetched the set at most once every 10 s");
}

#[tokio::test]
async fn a_configured_key_set_url_is_used_and_static_tokens_serve_beside_oauth() {
    let key = SigningKey::rsa("k");
    let issuer = Issuer::start(&[&key]);
    let config_dir = tempfile::tempdir().unwrap();
    let tokens = private_file(config_dir.path(), "tokens", TOKEN);
    let dir = workspace();
    let toml = format!(
        "[http]\nauth_token_file = {:?}\n[http.oauth]\nresource = {RESOURCE:?}\nauthorization_servers = [{:?}]\n\
         jwks_url = \"{}/jwks\"\n",
        tokens.to_str().unwrap(),
        issuer.url,
        issuer.url
    );
    let config = private_file(config_dir.path(), "both.toml", &toml);
    let server = HttpServer::start(dir.path(), &["--config", config.to_str().unwrap()]);
    assert!(post_with_token(&server, &key.sign(&claims(&issuer.url, "", 300))).starts_with("HTTP/1.1 200"));
    assert!(post_with_token(&server, TOKEN).starts_with("HTTP/1.1 200"), "a static token serves too");
    let answer = post_with_token(&server, OTHER_TOKEN);
    assert!(refusal(&answer).1.contains(&format!(r#"resource_metadata="{METADATA_URL}""#)), "{answer}");
}

#[tokio::test]
async fn while_the_issuers_keys_cannot_be_fetched_tokens_are_refused_with_503_and_nothing_is_served() {
    let config_dir = tempfile::tempdir().unwrap();
    // An issuer nobody listens for.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let issuer = Issuer { url: format!("http://{gone}"), keys: Arc::default(), fetches: Arc::default() };
    let (_dir, server) = oauth_server(&issuer, config_dir.path(), "");
    let key = SigningKey::p256("k");
    let answer = post_with_token(&server, &key.sign(&claims(&issuer.url, "files:read", 300)));
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert_eq!(header(&answer, "retry-after"), Some("5"));
    assert!(server.says_soon("cannot fetch the signing keys of the issuer"), "{}", server.stderr());
}

#[tokio::test]
async fn with_two_authorization_servers_each_token_is_checked_with_its_own_issuers_keys() {
    let (a_key, b_key) = (SigningKey::rsa("a"), SigningKey::ed25519("b"));
    let (a, b) = (Issuer::start(&[&a_key]), Issuer::start(&[&b_key]));
    let config_dir = tempfile::tempdir().unwrap();
    let dir = workspace();
    let toml = format!("[http.oauth]\nresource = {RESOURCE:?}\nauthorization_servers = [{:?}, {:?}]\n", a.url, b.url);
    let config = private_file(config_dir.path(), "two.toml", &toml);
    let server = HttpServer::start(dir.path(), &["--config", config.to_str().unwrap()]);
    assert!(post_with_token(&server, &a_key.sign(&claims(&a.url, "", 300))).starts_with("HTTP/1.1 200"));
    assert!(post_with_token(&server, &b_key.sign(&claims(&b.url, "", 300))).starts_with("HTTP/1.1 200"));
    // Signed by one issuer's key, claiming to come from the other: checked with the other's keys, and refused.
    let crossed = post_with_token(&server, &a_key.sign(&claims(&b.url, "", 300)));
    assert_eq!(refusal(&crossed).0, "401", "{crossed}");
    let unknown = post_with_token(&server, &a_key.sign(&claims("https://evil.example", "", 300)));
    assert!(refusal(&unknown).1.contains("issuer is not accepted"), "{unknown}");
}

#[test]
fn oauth_urls_must_be_https_beyond_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let config = private_file(
        dir.path(),
        "c.toml",
        "[http.oauth]\nresource = \"https://files.example/mcp\"\nauthorization_servers = [\"http://auth.example\"]\n",
    );
    let said = refused_start(&["--http", "127.0.0.1:0", "--config", config.to_str().unwrap()]);
    assert!(said.contains("http.oauth.authorization_servers: `http://auth.example` must be an https URL"), "{said}");
}
