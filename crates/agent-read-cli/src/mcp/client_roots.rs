//! A client's MCP roots: when they are known ([`Settled`]), how a call on protocol 2026-07-28 or later brings them
//! ([`in_call`]), the directories they name (`file:` URIs, RFC 8089: `file:///p`, `file://localhost/p`, `file:/p`,
//! on this machine, percent-decoded byte for byte), and how they are taken in ([`adopt`]).
//!
//! The configured roots are the ceiling: a client root is taken only inside them, opened through their confined
//! handles ([`Reader::narrowed`]), unless the operator trusts clients to choose their own (`--trust-client-roots`,
//! stdio only). A root refused is said on standard error, in the audit log, and to the model in the footer of its next
//! answer, with the roots in force.
//!
//! Two protocols, two ways to the same roots. Up to 2025-11-25, the server asks with `roots/list` after `initialize`
//! and on every `roots/list_changed`. From 2026-07-28 on, a server may send the client no request of its own: a call
//! from a client that offers roots is answered `input_required` with a `roots/list` request in it, and the client
//! sends the call again with its roots in `inputResponses` (SEP-2322). Over stdio the answer holds for the
//! connection until `roots/list_changed`; over HTTP, where every call stands alone, every call asks.

#![allow(deprecated)] // MCP Roots: deprecated by SEP-2577, still offered by the clients people use (see mod.rs).

use agent_read::Reader;
use agent_read::{Refused, RootsChange, Who, audit_timestamp};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InputRequest, InputRequiredResult, ListRootsRequest, ListRootsResult,
    ProtocolVersion, RequestMetaObject,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// The key of the roots request in an `input_required` answer, and of the client's roots in `inputResponses`.
const ROOTS_INPUT: &str = "roots";

/// How long a read waits for a client that offers roots to list them before it reads beneath `--root`.
const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// Whether a client's first `roots/list` has been answered (or has failed), so that reads know their roots. Until
/// then, a read from a client that offers roots waits, rather than read beneath `--root`, which the client may never
/// have meant to open.
#[derive(Clone, Debug)]
pub(super) struct Settled(Arc<watch::Sender<bool>>);

impl Settled {
    /// Roots not yet settled.
    pub fn new() -> Settled {
        Settled(Arc::new(watch::Sender::new(false)))
    }

    /// Marks the roots settled: reads waiting go on.
    pub fn settle(&self) {
        self.0.send_replace(true);
    }

    /// Returns once reads from `peer` may go on: at once when it offers no roots or they are settled; else when they
    /// are, or after [`ROOTS_WAIT`] (then with a line on standard error, and settled for every later read).
    pub async fn wait(&self, peer: &Peer<RoleServer>) {
        let offers_roots = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
        if !offers_roots || *self.0.borrow() {
            return;
        }
        let mut settled = self.0.subscribe();
        if tokio::time::timeout(ROOTS_WAIT, settled.wait_for(|settled| *settled)).await.is_err() {
            eprintln!(
                "agent-read: the client offers roots but has not listed them within {} s; reading beneath --root \
                 until it does",
                ROOTS_WAIT.as_secs()
            );
            self.settle();
        }
    }
}

/// What a `tools/call` says of its client's roots.
#[derive(Debug, PartialEq)]
pub(super) enum InCall {
    /// Nothing: the client offers no roots, or speaks a protocol older than 2026-07-28 (whose roots come through
    /// `roots/list`, see [`Settled`]).
    Silent,
    /// The client offers roots and has not given them in this call.
    Offered,
    /// The client's roots, given in this call's `inputResponses`: their URIs.
    Given(Vec<String>),
}

/// What `request` says of its client's roots; an error when its client gave roots that are not a `roots/list`
/// result.
pub(super) fn in_call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<InCall, ErrorData> {
    // rmcp moves the request's `_meta` out of the params into the context.
    in_call_with(&context.meta, request.input_responses.as_ref())
}

/// [`in_call`] from a call's `_meta` and `inputResponses`.
fn in_call_with(
    meta: &RequestMetaObject,
    responses: Option<&rmcp::model::InputResponses>,
) -> Result<InCall, ErrorData> {
    let modern = meta.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    let offers_roots = || meta.client_capabilities().is_some_and(|capabilities| capabilities.roots.is_some());
    if !modern || !offers_roots() {
        return Ok(InCall::Silent);
    }
    let Some(given) = responses.and_then(|responses| responses.get(ROOTS_INPUT)) else {
        return Ok(InCall::Offered);
    };
    let listed: ListRootsResult = serde_json::from_value(given.clone()).map_err(|e| {
        let shape = r#"{"roots": [{"uri": "file:///…"}]}"#;
        let why = format!("inputResponses.{ROOTS_INPUT} is not a roots/list result ({e}); send the roots as {shape}");
        ErrorData::invalid_params(why, None)
    })?;
    Ok(InCall::Given(listed.roots.into_iter().map(|root| root.uri).collect()))
}

/// The answer that asks the client for its roots: `input_required`, with a `roots/list` request.
pub(super) fn ask() -> CallToolResponse {
    let request = ListRootsRequest { method: Default::default(), extensions: Default::default() };
    let requests = [(ROOTS_INPUT.to_string(), InputRequest::ListRoots(request))].into_iter().collect();
    CallToolResponse::InputRequired(InputRequiredResult::from_input_requests(requests))
}

/// Whether a connection's client has given its roots in a call (protocol 2026-07-28 or later), so that its further
/// calls need not ask until `roots/list_changed`.
#[derive(Clone, Debug, Default)]
pub(super) struct GivenInCall(Arc<AtomicBool>);

impl GivenInCall {
    /// Whether the roots are known.
    pub fn known(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Records that they are, or (`false`) that they changed and must be asked for again.
    pub fn set(&self, known: bool) {
        self.0.store(known, Ordering::Release);
    }
}

/// The reader a client's roots (`uris`) give: one narrowed beneath `configured` to the roots it may have (with
/// `trust`, beyond them too), or `configured` itself when none can be taken; and the notice the model gets, when a
/// root was refused. Each refusal is said on standard error, and the change is audited (by `who`).
pub(super) fn adopt(
    configured: &Arc<Reader>,
    uris: &[String],
    trust: bool,
    who: Who<'_>,
) -> (Arc<Reader>, Option<String>) {
    let parsed: Vec<Result<PathBuf, String>> = uris.iter().map(|uri| local_path(uri).map_err(String::from)).collect();
    let paths: Vec<PathBuf> = parsed.iter().filter_map(|p| p.as_ref().ok().cloned()).collect();
    let (narrowed, mut outcomes) = configured.narrowed(&paths, trust);
    let mut outcomes = outcomes.drain(..);
    // Each URI's outcome, in order: its own parse error, or what became of its path.
    let decided: Vec<Result<PathBuf, String>> = parsed
        .into_iter()
        .map(|parsed| parsed.and_then(|_| outcomes.next().map_or(Err("not taken".to_string()), |asked| asked.outcome)))
        .collect();
    let reader = narrowed.map(Arc::new).unwrap_or_else(|| configured.clone());
    let in_force: Vec<String> = reader.root_paths().iter().map(|p| p.display().to_string()).collect();
    let refused: Vec<Refused<'_>> = uris
        .iter()
        .zip(&decided)
        .filter_map(|(uri, outcome)| outcome.as_ref().err().map(|why| Refused { root: uri, why: why.clone() }))
        .collect();
    for refusal in &refused {
        eprintln!(
            "agent-read: client root {} refused: {}; roots in force: {}",
            refusal.root,
            refusal.why,
            in_force.join(", ")
        );
    }
    let accepted: Vec<String> =
        decided.iter().filter_map(|d| d.as_ref().ok()).map(|p| p.display().to_string()).collect();
    if accepted.is_empty() {
        eprintln!("agent-read: the client offers no usable root; reading beneath the configured roots");
    }
    let notice = (!refused.is_empty()).then(|| notice(&refused, &in_force, accepted.is_empty()));
    let asked = uris.iter().map(String::as_str).collect();
    let change = RootsChange { time: audit_timestamp(), event: "roots", who, asked, accepted, refused, in_force };
    configured.audit_roots_change(&change);
    (reader, notice)
}

/// What the model is told when client roots were refused: which, why, and the roots in force (all within the
/// configured roots, or chosen by a trusted client).
fn notice(refused: &[Refused<'_>], in_force: &[String], none_taken: bool) -> String {
    const NAMED: usize = 3;
    let clip = |text: &str| {
        let mut end = text.len().min(120);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end < text.len() { format!("{}…", &text[..end]) } else { text.to_string() }
    };
    let mut named: Vec<String> = refused.iter().take(NAMED).map(|r| format!("{} ({})", clip(r.root), r.why)).collect();
    if refused.len() > NAMED {
        named.push(format!("{} more", refused.len() - NAMED));
    }
    let whose = if none_taken { "the configured roots" } else { "the client's roots taken" };
    format!("client roots refused: {}; reading beneath {whose}: {}", named.join(", "), in_force.join(", "))
}

/// The absolute path a `file:` URI names on this machine: `file:///p` and `file://localhost/p` (the authority may
/// name only this host); the path's escapes decoded to the exact bytes, since Unix paths need not be UTF-8. On Windows
/// the path names a drive (`file:///C:/work` is `C:\work`), and must be UTF-8.
fn local_path(uri: &str) -> Result<PathBuf, &'static str> {
    let (scheme, rest) = uri.split_once(':').ok_or("not a file:// URI")?;
    if !scheme.eq_ignore_ascii_case("file") {
        return Err("not a file:// URI");
    }
    // RFC 8089 allows the authority to be left out: `file:/path`.
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after_slashes) => after_slashes.split_at(after_slashes.find('/').unwrap_or(after_slashes.len())),
        None if rest.starts_with('/') => ("", rest),
        None => return Err("not a file:// URI with an absolute path (file:///path)"),
    };
    if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
        return Err("names another host; only local directories can be roots");
    }
    if path.is_empty() {
        return Err("has no path");
    }
    // A query or fragment is not part of the path; a `?` or `#` in a directory's name arrives escaped.
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    if bytes.contains(&0) {
        return Err("its path holds a NUL byte");
    }
    path_of_bytes(bytes)
}

#[cfg(unix)]
fn path_of_bytes(bytes: Vec<u8>) -> Result<PathBuf, &'static str> {
    use std::os::unix::ffi::OsStringExt as _;
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(windows)]
fn path_of_bytes(bytes: Vec<u8>) -> Result<PathBuf, &'static str> {
    windows_path_of_bytes(bytes)
}

/// What the decoded path of a `file:` URI names on Windows: a drive's path (`/C:/work` is `C:\work`).
#[cfg_attr(not(windows), allow(dead_code))]
fn windows_path_of_bytes(bytes: Vec<u8>) -> Result<PathBuf, &'static str> {
    let text = String::from_utf8(bytes).map_err(|_| "its path is not UTF-8 (percent-encoded UTF-8 is expected)")?;
    let path =
        agent_read::windows_path_of_uri_path(&text).ok_or("names no drive (file:///C:/path is expected on Windows)")?;
    Ok(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(version: ProtocolVersion, roots: bool) -> RequestMetaObject {
        let builder = rmcp::model::ClientCapabilities::builder();
        let capabilities = if roots { builder.enable_roots().build() } else { builder.build() };
        RequestMetaObject::with_client_context(version, rmcp::model::Implementation::new("c", "1"), capabilities)
    }

    #[test]
    fn only_a_2026_call_from_a_client_offering_roots_brings_them_or_must_ask() {
        let responses: rmcp::model::InputResponses =
            [(ROOTS_INPUT.to_string(), serde_json::json!({"roots": [{"uri": "file:///w"}]}))].into_iter().collect();
        let modern = ProtocolVersion::V_2026_07_28;
        assert_eq!(in_call_with(&meta(ProtocolVersion::V_2025_11_25, true), None), Ok(InCall::Silent));
        assert_eq!(in_call_with(&RequestMetaObject::default(), Some(&responses)), Ok(InCall::Silent));
        assert_eq!(in_call_with(&meta(modern.clone(), false), Some(&responses)), Ok(InCall::Silent));
        assert_eq!(in_call_with(&meta(modern.clone(), true), None), Ok(InCall::Offered));
        let other: rmcp::model::InputResponses = [("x".to_string(), serde_json::json!({}))].into_iter().collect();
        assert_eq!(in_call_with(&meta(modern.clone(), true), Some(&other)), Ok(InCall::Offered));
        let given = in_call_with(&meta(modern.clone(), true), Some(&responses));
        assert_eq!(given, Ok(InCall::Given(vec!["file:///w".to_string()])));
    }

    #[test]
    fn roots_given_in_another_shape_are_refused_with_the_shape_expected() {
        let bad: rmcp::model::InputResponses =
            [(ROOTS_INPUT.to_string(), serde_json::json!({"roots": "file:///w"}))].into_iter().collect();
        let error = in_call_with(&meta(ProtocolVersion::V_2026_07_28, true), Some(&bad)).unwrap_err();
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("inputResponses.roots is not a roots/list result"), "{}", error.message);
    }

    #[test]
    fn the_question_is_one_roots_list_request_under_the_key_the_answer_is_read_from() {
        let CallToolResponse::InputRequired(asked) = ask() else { panic!("not input_required") };
        let json = serde_json::to_value(&asked).unwrap();
        assert_eq!(json["inputRequests"][ROOTS_INPUT]["method"], "roots/list", "{json}");
        assert_eq!(json["inputRequests"].as_object().map(|o| o.len()), Some(1), "{json}");
    }

    #[test]
    fn empty_authority_and_localhost_name_the_same_local_path() {
        assert_eq!(local_path("file:///home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
        assert_eq!(local_path("file://localhost/home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
        assert_eq!(local_path("FILE://LocalHost/home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
        assert_eq!(local_path("file:/home/u/proj"), Ok(PathBuf::from("/home/u/proj")));
    }

    #[test]
    fn windows_uris_name_a_drive() {
        assert_eq!(windows_path_of_bytes(b"/C:/work".to_vec()), Ok(PathBuf::from(r"C:\work")));
        assert_eq!(windows_path_of_bytes(b"/c:/My Work/x".to_vec()), Ok(PathBuf::from(r"C:\My Work\x")));
        assert_eq!(
            windows_path_of_bytes(b"/work".to_vec()),
            Err("names no drive (file:///C:/path is expected on Windows)")
        );
        assert!(windows_path_of_bytes(b"/C:/caf\xe9".to_vec()).is_err());
    }

    #[test]
    #[cfg(unix)]
    fn escapes_decode_to_exact_bytes_even_when_not_utf8() {
        assert_eq!(local_path("file:///a%20b/c%23d"), Ok(PathBuf::from("/a b/c#d")));
        let latin1 = local_path("file:///caf%E9").unwrap();
        use std::os::unix::ffi::OsStringExt as _;
        assert_eq!(latin1.into_os_string().into_vec(), b"/caf\xe9");
    }

    #[test]
    fn other_hosts_schemes_and_shapes_are_refused_with_the_reason() {
        assert_eq!(local_path("file://server/share"), Err("names another host; only local directories can be roots"));
        assert_eq!(local_path("https://example.com/x"), Err("not a file:// URI"));
        assert_eq!(local_path("/plain/path"), Err("not a file:// URI"));
        assert_eq!(local_path("file:relative"), Err("not a file:// URI with an absolute path (file:///path)"));
        assert_eq!(local_path("file://"), Err("has no path"));
        assert_eq!(local_path("file:///a%00b"), Err("its path holds a NUL byte"));
    }

    #[test]
    fn client_roots_narrow_the_configured_ones_and_a_refusal_is_said_with_the_roots_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::fs::write(ws.join("f.txt"), "x").unwrap();
        let configured = Arc::new(Reader::new(agent_read::Config::with_roots([&ws])).unwrap());
        let uri = |p: &std::path::Path| format!("file://{}", p.display());
        let uris = [uri(&ws.join("sub")), "file:///".into(), uri(&ws.join("f.txt")), "https://x".into()];
        let (reader, notice) = adopt(&configured, &uris, false, Who::default());
        assert_eq!(reader.root_paths(), [ws.join("sub").as_path()]);
        let notice = notice.unwrap();
        let expected = format!(
            "client roots refused: file:/// (outside the configured roots), {} (not an existing directory), \
             https://x (not a file:// URI); reading beneath the client's roots taken: {}",
            uris[2],
            ws.join("sub").display()
        );
        assert_eq!(notice, expected);
        let (reader, notice) = adopt(&configured, &["file:///etc".into()], false, Who::default());
        assert!(Arc::ptr_eq(&reader, &configured), "none taken: the configured roots");
        assert!(notice.unwrap().ends_with(&format!("reading beneath the configured roots: {}", ws.display())));
        let (_, notice) = adopt(&configured, &[uri(&ws)], false, Who::default());
        assert_eq!(notice, None, "nothing refused, nothing said");
    }
}
