//! Helpers shared by the MCP-over-HTTP test files: the server as a child process, rmcp's client connected to it,
//! and raw HTTP/1.1 exchanges for what a real client would never send.

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// A running `agent-read mcp --http` child, killed when dropped.
pub struct HttpServer {
    pub child: Child,
    pub url: String,
    /// Everything the server wrote on standard error so far (read on by a thread).
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts the server on a free loopback port and waits for the line that names its address.
    pub fn start(root: &Path, extra: &[&str]) -> HttpServer {
        Self::start_on("127.0.0.1:0", root, extra)
    }

    /// [`HttpServer::start`] with `env` added to the server's environment.
    pub fn start_with_env(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agent-read"));
        command.args(["mcp", "--http", "127.0.0.1:0"]).envs(env.iter().copied());
        Self::spawn(&mut command, root, extra)
    }

    /// Starts the server listening on `listen` and waits for the line that names its address.
    pub fn start_on(listen: &str, root: &Path, extra: &[&str]) -> HttpServer {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_agent-read")).args(["mcp", "--http", listen]), root, extra)
    }

    /// Starts the server on a free loopback port, allowed to open at most `files` file descriptors (soft and hard).
    #[cfg(unix)]
    pub fn start_with_files_limit(root: &Path, extra: &[&str], files: u64) -> HttpServer {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_agent-read"));
        command.args(["mcp", "--http", "127.0.0.1:0"]);
        let limit = libc::rlimit { rlim_cur: files as libc::rlim_t, rlim_max: files as libc::rlim_t };
        // SAFETY: between fork and exec only setrlimit runs, which is async-signal-safe.
        unsafe {
            command.pre_exec(move || match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            });
        }
        Self::spawn(&mut command, root, extra)
    }

    /// Starts `command` (a server listening on a free port), confined to `root`, and waits for the line that names its
    /// address.
    pub fn spawn(command: &mut Command, root: impl AsRef<std::ffi::OsStr>, extra: &[&str]) -> HttpServer {
        let mut child = command
            .args(extra)
            .arg("--root")
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-read mcp --http");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("the server ended before it named its address: {said}");
            }
            said.push_str(&line);
            if let Some(url) = line.split_whitespace().find(|word| word.starts_with("http://")) {
                break url.to_string();
            }
        };
        let collected = Arc::new(Mutex::new(said));
        let sink = collected.clone();
        // Keep draining standard error so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        HttpServer { child, url, stderr: collected }
    }

    pub async fn connect(&self) -> RunningService<RoleClient, ()> {
        ().serve(client_transport(&self.url)).await.expect("initialize over HTTP")
    }

    /// rmcp's client, sending `Authorization: Bearer TOKEN` with every request.
    pub async fn connect_with_token(&self, token: &str) -> RunningService<RoleClient, ()> {
        ().serve(client_transport_with_token(&self.url, token)).await.expect("initialize over HTTP with a token")
    }

    /// The `host:port` the server listens on.
    pub fn authority(&self) -> &str {
        self.url.trim_start_matches("http://").trim_end_matches("/mcp")
    }

    /// What the server has written on standard error so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether the server writes `needle` on standard error within 5 seconds (its lines reach the test through a
    /// thread, a moment after the server wrote them).
    pub fn says_soon(&self, needle: &str) -> bool {
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(5) {
            if self.stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 exchange; returns the whole response (what arrived before the server closed the connection).
/// A server may answer and close before a large body is sent whole, so a failed write still reads the answer.
pub fn raw_exchange(authority: &str, head: &str, body: &str) -> String {
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let request = format!("{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let _ = stream.write_all(request.as_bytes());
    let mut response = Vec::new();
    let mut chunk = [0u8; 65536];
    while let Ok(n @ 1..) = stream.read(&mut chunk) {
        response.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&response).into_owned()
}

pub fn raw_post(authority: &str, host_header: &str, body: &str) -> String {
    raw_post_with(authority, host_header, "", body)
}

/// A raw JSON `POST /mcp` with `Host: host_header` and the header lines `extra` (each ending in CRLF).
pub fn raw_post_with(authority: &str, host_header: &str, extra: &str, body: &str) -> String {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}"
    );
    raw_exchange(authority, &head, body)
}

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// rmcp's HTTP client transport to `url`.
pub fn client_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    install_client_crypto();
    StreamableHttpClientTransport::from_uri(url)
}

/// rmcp's HTTP client transport to `url`, sending `Authorization: Bearer TOKEN` with every request.
pub fn client_transport_with_token(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    install_client_crypto();
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url).auth_header(token))
}

/// The crypto of the test process's HTTP clients: reqwest is built without one of its own, as the server is (ring,
/// installed where the server needs it), and sets up TLS even for `http://` addresses.
fn install_client_crypto() {
    // An `Err`: installed by an earlier client of this process.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
