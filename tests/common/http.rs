//! A running `agent-read mcp --http` child for the HTTP test files, with what it wrote on standard error.

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// A running `agent-read mcp --http` child, killed when dropped.
pub struct HttpServer {
    pub child: Child,
    pub url: String,
    /// Everything the server wrote on standard error after its start-up line.
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts the server on a free loopback port and waits for the line that names its address.
    pub fn start(root: &Path, extra: &[&str]) -> HttpServer {
        HttpServer::start_with_env(root, extra, &[])
    }

    /// [`HttpServer::start`] with `env` added to the server's environment.
    pub fn start_with_env(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-read"))
            .args(["mcp", "--http", "127.0.0.1:0"])
            .args(extra)
            .envs(env.iter().copied())
            .arg("--root")
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-read mcp --http");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in the start-up line: {line:?}"))
            .to_string();
        // Keep draining standard error so the server never blocks on a full pipe, keeping what it says.
        let kept = Arc::new(Mutex::new(String::new()));
        let sink = kept.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        HttpServer { child, url, stderr: kept }
    }

    pub async fn connect(&self) -> RunningService<RoleClient, ()> {
        ().serve(StreamableHttpClientTransport::from_uri(self.url.as_str())).await.expect("initialize over HTTP")
    }

    /// The `host:port` the server listens on.
    pub fn authority(&self) -> &str {
        self.url.trim_start_matches("http://").trim_end_matches("/mcp")
    }

    /// What the server has written on standard error since it started listening.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
