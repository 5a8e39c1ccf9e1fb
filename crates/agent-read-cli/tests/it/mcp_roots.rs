//! Client roots never widen the operator's roots, on every face: stdio, HTTP with sessions and stateless HTTP, through
//! `roots/list` and through protocol 2026-07-28's roots given within a call. Tried as an attacker would: `file:///`, a
//! parent, siblings, `..` in the URI (plain and percent-encoded), links inside the root leading out (relative and
//! absolute, and one swapped back and forth while the client asks), and a root the policy denies. Every run checks that
//! nothing outside the configured root — `/etc/passwd` or a marker file — ever reaches an answer, that each refusal is
//! said on standard error and in the audit log, and that the model is told the roots in force.
#![cfg(unix)] // Symbolic links inside the root leading out, and /etc/passwd as the secret.

use crate::common::http::{HttpServer, client_transport, client_transport_with_token};
use crate::common::mcp::{RootsClient, protocol_2026};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientServiceExt, ServiceExt};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Content of the files outside the configured root; never in any answer, log line or audit line.
const MARKER: &str = "OUTSIDE-MARKER-7f3a";
/// How `/etc/passwd` starts on every Linux system.
const PASSWD: &str = "root:x:0:0";

type Client = RunningService<RoleClient, RootsClient>;
type Roots = Arc<Mutex<Vec<String>>>;

/// `<tmp>/ws` is the configured root: `notes.txt`, `sub/inside.txt`, `secrets/token.txt`, `.ssh/config`, and links
/// `out -> ../outside`, `abs_out -> <tmp>/outside`. Outside it: `<tmp>/outside/marker.txt` and
/// `<tmp>/ws_sibling/marker.txt`, both holding the marker.
struct Layout {
    _dir: tempfile::TempDir,
    tmp: PathBuf,
    ws: PathBuf,
    audit: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().canonicalize().unwrap();
        let ws = tmp.join("ws");
        let files = [
            ("ws/notes.txt", "ws notes\n".to_string()),
            ("ws/sub/inside.txt", "inside sub\n".to_string()),
            ("ws/secrets/token.txt", format!("{MARKER} token\n")),
            ("ws/.ssh/config", format!("{MARKER} ssh\n")),
            ("outside/marker.txt", format!("{MARKER}\n")),
            ("ws_sibling/marker.txt", format!("{MARKER}\n")),
        ];
        for (path, text) in files {
            std::fs::create_dir_all(tmp.join(path).parent().unwrap()).unwrap();
            std::fs::write(tmp.join(path), text).unwrap();
        }
        std::os::unix::fs::symlink("../outside", ws.join("out")).unwrap();
        std::os::unix::fs::symlink(tmp.join("outside"), ws.join("abs_out")).unwrap();
        let audit = tmp.join("audit.jsonl");
        Layout { _dir: dir, tmp, ws, audit }
    }

    fn uri(&self, path: &str) -> String {
        format!("file://{}/{path}", self.tmp.display())
    }

    /// Roots a client may try to read beyond `ws` with: each is refused.
    fn attacks(&self) -> Vec<String> {
        vec![
            "file:///".to_string(),
            "file://localhost/".to_string(),
            "file:///etc".to_string(),
            format!("file://{}", self.tmp.display()),
            self.uri("outside"),
            self.uri("ws_sibling"),
            self.uri("ws/../outside"),
            self.uri("ws/%2e%2e/outside"),
            self.uri("ws/sub/%2E%2E/%2e%2e/outside"),
            self.uri("ws/out"),
            self.uri("ws/abs_out"),
            format!("file:{}/ws/../..", self.tmp.display()),
        ]
    }

    /// Reads that would reach outside `ws` if a client root had widened it.
    fn probes(&self) -> Vec<String> {
        let outside = self.tmp.join("outside/marker.txt").display().to_string();
        let sibling = self.tmp.join("ws_sibling/marker.txt").display().to_string();
        let list = self.tmp.join("outside").display().to_string();
        vec!["/etc/passwd".into(), outside, sibling, list, "marker.txt".into(), "../outside/marker.txt".into()]
    }

    /// The roots lines of the audit log.
    fn audited(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.audit).unwrap_or_default();
        assert_no_leak(&text, "the audit log");
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|l| l["event"] == "roots").collect()
    }
}

/// Fails if `text` holds anything from outside the configured root.
fn assert_no_leak(text: &str, what: &str) {
    assert!(!text.contains(MARKER) && !text.contains(PASSWD), "LEAK in {what}:\n{text}");
}

/// Reads `path`: whether it was read, and its text (checked for leaks).
async fn read(client: &Client, path: &str) -> (bool, String) {
    let Value::Object(arguments) = json!({"path": path}) else { unreachable!() };
    let result = client.call_tool(CallToolRequestParams::new("read").with_arguments(arguments)).await.expect("call");
    let structured = result.structured_content.expect("structuredContent");
    let text = structured["output"].as_str().unwrap_or_default().to_string();
    assert_no_leak(&structured.to_string(), path);
    (structured["ok"] == true, text)
}

/// Offers `uris` as the client's roots and waits (bounded) until reads show them in force: `probe` readable (or, for
/// `None`, `notes.txt` readable, the configured root being in force) and `inside.txt` not (so the change was made).
/// Meanwhile, every read of `probes` (outside the configured root) must fail. Returns every answer seen.
async fn offer(client: &Client, roots: &Roots, uris: Vec<String>, notify: bool, probe: Option<&str>) -> Vec<String> {
    let probes = uris.first().map_or(Vec::new(), |_| PROBES.with(|p| p.borrow().clone()));
    *roots.lock().unwrap() = uris;
    if notify {
        client.notify_roots_list_changed().await.expect("notify");
    }
    let mut seen = Vec::new();
    for _ in 0..200 {
        for outside in &probes {
            let (read_it, text) = read(client, outside).await;
            assert!(!read_it, "{outside} was read: {text}");
            seen.push(text);
        }
        let (ok, text) = read(client, probe.unwrap_or("notes.txt")).await;
        seen.push(text);
        let (inside, text) = read(client, "inside.txt").await;
        seen.push(text);
        if ok && (probe.is_some() || !inside) {
            return seen;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the offered roots never took effect; answers: {seen:?}");
}

thread_local! {
    /// The reads [`offer`] tries while roots change (see [`Layout::probes`]); set by [`attack`].
    static PROBES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The whole attack on one client: every outward root, one beside a good one, roots the policy denies, a narrowing,
/// withdrawing them; `notify` says whether the client must say its roots changed (every protocol but 2026-07-28
/// over HTTP, which asks in each call).
async fn attack(layout: &Layout, client: &Client, roots: &Roots, notify: bool) {
    PROBES.with(|p| *p.borrow_mut() = layout.probes());
    // Every outward root at once: all refused, the configured root serves, and the model is told.
    let seen = offer(client, roots, layout.attacks(), notify, None).await;
    let told = seen.iter().find(|text| text.contains("client roots refused: file:/// (outside the configured roots)"));
    let told = told.unwrap_or_else(|| panic!("the model was never told: {seen:?}"));
    assert!(told.contains(&format!("reading beneath the configured roots: {}", layout.ws.display())), "{told}");
    // Outward roots beside a good one: the good one alone is taken.
    let mut mixed = layout.attacks();
    mixed.push(layout.uri("ws/sub"));
    offer(client, roots, mixed, notify, Some("inside.txt")).await;
    // Roots the policy denies are refused, and their files stay denied however they are asked for.
    offer(client, roots, vec![layout.uri("ws/secrets"), layout.uri("ws/.ssh")], notify, None).await;
    for path in ["token.txt", "config", "secrets/token.txt", ".ssh/config"] {
        assert!(!read(client, path).await.0, "{path}");
    }
    // An accepted narrowing: beneath `sub` only, and an `OUTSIDE_ROOT` names the roots in force.
    offer(client, roots, vec![layout.uri("ws/sub")], notify, Some("inside.txt")).await;
    assert!(!read(client, "notes.txt").await.0, "notes.txt lies outside the narrowed root");
    let (_, above) = read(client, layout.ws.join("notes.txt").to_str().unwrap()).await;
    assert!(
        above.starts_with("OUTSIDE_ROOT") && above.contains(&layout.ws.join("sub").display().to_string()),
        "{above}"
    );
    // Withdrawing every root: the configured root serves again.
    offer(client, roots, vec![], notify, None).await;
}

/// Checks the standard error of a server after [`attack`]: a line for each refused root, no leak.
fn assert_refusals_logged(layout: &Layout, stderr: &str) {
    assert_no_leak(stderr, "standard error");
    for uri in layout.attacks() {
        let line = format!("agent-read: client root {uri} refused: outside the configured roots");
        assert!(stderr.contains(&line), "no line for {uri}:\n{stderr}");
    }
    let denied =
        format!("client root {} refused: denied by the read policy (rule `secrets/`)", layout.uri("ws/secrets"));
    assert!(stderr.contains(&denied), "{stderr}");
    assert!(stderr.contains(&format!("roots in force: {}", layout.ws.display())), "{stderr}");
}

/// Checks the audit log after [`attack`]: one line per change, saying who, with every refusal and its reason.
fn assert_changes_audited(layout: &Layout, transport: &str, with_session: bool) {
    let changes = layout.audited();
    assert!(changes.len() >= 5, "one line per change: {changes:#?}");
    for change in &changes {
        assert_eq!(change["transport"], transport, "{change}");
        assert_eq!(change["client"], "roots-test", "{change}");
        assert_eq!(change["session"].is_string(), with_session, "{change}");
    }
    let refusing = changes.iter().find(|c| c["refused"].as_array().is_some_and(|r| r.len() == layout.attacks().len()));
    let refusing = refusing.unwrap_or_else(|| panic!("no change refusing every attack: {changes:#?}"));
    for (refused, uri) in refusing["refused"].as_array().unwrap().iter().zip(layout.attacks()) {
        assert_eq!(refused["root"], uri.as_str());
        assert!(refused["why"].as_str().unwrap().starts_with("outside the configured roots"), "{refused}");
    }
    assert_eq!(refusing["accepted"], json!([]));
    assert_eq!(refusing["in_force"], json!([layout.ws.display().to_string()]));
    let narrowed = changes.iter().find(|c| c["accepted"] == json!([layout.ws.join("sub").display().to_string()]));
    assert!(narrowed.is_some(), "no change taking sub: {changes:#?}");
}

/// `agent-read mcp` over stdio for `handler`, confined to `ws`, auditing; its standard error goes to a file.
async fn stdio_client(layout: &Layout, handler: RootsClient, modern: bool, extra: &[&str]) -> (Client, PathBuf) {
    let log = layout.tmp.join("stderr.log");
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-read")).configure(|cmd| {
        cmd.arg("mcp").arg("--root").arg(&layout.ws).arg("--audit-log").arg(&layout.audit).args(extra);
    });
    let (server, _) = TokioChildProcess::builder(command).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let client = if modern {
        handler.serve_with_lifecycle(server, protocol_2026()).await.expect("discover")
    } else {
        handler.serve(server).await.expect("initialize")
    };
    (client, log)
}

fn roots_client() -> (RootsClient, Roots) {
    let roots: Roots = Arc::new(Mutex::new(Vec::new()));
    (RootsClient::new(roots.clone()), roots)
}

#[tokio::test]
async fn stdio_client_roots_from_roots_list_only_narrow_the_configured_root() {
    let layout = Layout::new();
    let (handler, roots) = roots_client();
    let (client, log) = stdio_client(&layout, handler, false, &[]).await;
    attack(&layout, &client, &roots, true).await;
    client.cancel().await.unwrap();
    assert_refusals_logged(&layout, &std::fs::read_to_string(log).unwrap());
    assert_changes_audited(&layout, "stdio", false);
}

#[tokio::test]
async fn stdio_client_roots_given_in_a_call_only_narrow_the_configured_root() {
    let layout = Layout::new();
    let (handler, roots) = roots_client();
    let (client, log) = stdio_client(&layout, handler, true, &[]).await;
    attack(&layout, &client, &roots, true).await;
    client.cancel().await.unwrap();
    assert_refusals_logged(&layout, &std::fs::read_to_string(log).unwrap());
    assert_changes_audited(&layout, "stdio", false);
}

#[tokio::test]
async fn http_session_client_roots_from_roots_list_only_narrow_the_configured_root() {
    let layout = Layout::new();
    let audit = layout.audit.display().to_string();
    let server = HttpServer::start(&layout.ws, &["--audit-log", &audit]);
    let (handler, roots) = roots_client();
    let transport = client_transport(&server.url);
    let client = handler.serve(transport).await.expect("initialize");
    attack(&layout, &client, &roots, true).await;
    client.cancel().await.unwrap();
    assert_refusals_logged(&layout, &server.stderr());
    assert_changes_audited(&layout, "http", true);
}

#[tokio::test]
async fn http_client_roots_given_in_each_call_only_narrow_the_configured_root_with_or_without_sessions() {
    for (flags, transport) in [(&[][..], "http"), (&["--stateless"][..], "http-stateless")] {
        let layout = Layout::new();
        let audit = layout.audit.display().to_string();
        let server = HttpServer::start(&layout.ws, &[flags, &["--audit-log", &audit]].concat());
        let (handler, roots) = roots_client();
        let transport_client = client_transport(&server.url);
        let client = handler.serve_with_lifecycle(transport_client, protocol_2026()).await.expect("discover");
        attack(&layout, &client, &roots, false).await;
        client.cancel().await.unwrap();
        assert_refusals_logged(&layout, &server.stderr());
        // Every call stands alone on protocol 2026-07-28 over HTTP: no session id.
        assert_changes_audited(&layout, transport, false);
    }
}

/// A link inside the root swapped back and forth between a directory inside and one outside while a client keeps
/// giving it as its root: whichever it points at when the server opens it, nothing outside is ever read.
#[tokio::test]
async fn a_root_link_swapped_to_lead_outside_never_reads_outside() {
    let layout = Layout::new();
    let server = HttpServer::start(&layout.ws, &["--stateless"]);
    let (handler, roots) = roots_client();
    *roots.lock().unwrap() = vec![layout.uri("ws/flip")];
    let transport = client_transport(&server.url);
    let client = handler.serve_with_lifecycle(transport, protocol_2026()).await.expect("discover");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (ws, flag) = (layout.ws.clone(), stop.clone());
    let swapper = std::thread::spawn(move || {
        let mut flips = 0u64;
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            let target = if flips.is_multiple_of(2) { "sub" } else { "../outside" };
            let _ = std::fs::remove_file(ws.join("flip.new"));
            std::os::unix::fs::symlink(target, ws.join("flip.new")).unwrap();
            std::fs::rename(ws.join("flip.new"), ws.join("flip")).unwrap();
            flips += 1;
        }
        flips
    });
    let mut inside = 0;
    for _ in 0..150 {
        // Relative: beneath the client's root if taken, else beneath `ws` (where neither file is).
        inside += usize::from(read(&client, "inside.txt").await.0);
        assert!(!read(&client, "marker.txt").await.0, "the outside marker was read");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 10, "the link was hardly swapped");
    assert_no_leak(&server.stderr(), "standard error");
    eprintln!("{inside} of 150 reads found the link pointing inside");
}

#[tokio::test]
async fn trusting_client_roots_is_an_explicit_choice_that_lets_a_stdio_client_beyond() {
    let layout = Layout::new();
    let (handler, roots) = roots_client();
    std::fs::write(layout.tmp.join("outside/beyond.txt"), "beyond the configured root\n").unwrap();
    let (client, _log) = stdio_client(&layout, handler, false, &["--trust-client-roots"]).await;
    offer(&client, &roots, vec![layout.uri("outside")], true, Some("beyond.txt")).await;
    client.cancel().await.unwrap();
    let changes: Vec<Value> = std::fs::read_to_string(&layout.audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|line: &Value| line["event"] == "roots")
        .collect();
    let beyond = layout.tmp.join("outside").display().to_string();
    assert!(changes.iter().any(|c| c["accepted"] == json!([beyond])), "{changes:#?}");
}

/// Over HTTP, trusting client roots needs authentication: with a token file, a client that presents a token may
/// choose a root beyond the configured one.
#[tokio::test]
async fn trusting_client_roots_over_http_lets_an_authenticated_client_beyond() {
    use std::os::unix::fs::PermissionsExt;
    let layout = Layout::new();
    std::fs::write(layout.tmp.join("outside/beyond.txt"), "beyond the configured root\n").unwrap();
    let token = "t0ken-of-the-operator-0123456789abcdef";
    let tokens = layout.tmp.join("tokens");
    std::fs::write(&tokens, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    let audit = layout.audit.display().to_string();
    let flags = ["--auth-token-file", tokens.to_str().unwrap(), "--trust-client-roots", "--audit-log", &audit];
    let server = HttpServer::start(&layout.ws, &flags);
    let (handler, roots) = roots_client();
    let client = handler.serve(client_transport_with_token(&server.url, token)).await.expect("initialize");
    offer(&client, &roots, vec![layout.uri("outside")], true, Some("beyond.txt")).await;
    client.cancel().await.unwrap();
    // The audit log says who chose: the token the client presented (by its place in the file, never its value).
    let text = std::fs::read_to_string(&layout.audit).unwrap();
    let change = text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()).find(|l| l["event"] == "roots");
    let change = change.expect("a change of roots audited");
    assert_eq!(change["authenticated"], "static token 1", "{change}");
    assert!(!text.contains(token), "the audit log holds the token");
}

#[test]
fn trusting_client_roots_over_http_is_refused_at_start_up_until_there_is_authentication() {
    let layout = Layout::new();
    let config = layout.tmp.join("config.toml");
    std::fs::write(&config, "trust_client_roots = true\n").unwrap();
    let config = config.display().to_string();
    for flags in [&["--trust-client-roots"][..], &["--stateless", "--trust-client-roots"], &["--config", &config]] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"))
            .args(["mcp", "--http", "127.0.0.1:0", "--root"])
            .arg(&layout.ws)
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains("--trust-client-roots") && stderr.contains("needs authentication"), "{stderr}");
    }
}
