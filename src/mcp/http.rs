//! The MCP face over streamable HTTP: `agent-read mcp --http ADDR` serves the tool at `http://ADDR/mcp`.
//!
//! Loopback by default: a bare port listens on 127.0.0.1, and only loopback `Host` headers are accepted (DNS
//! rebinding protection) unless `--allow-host` names more. In session mode (the default) each client gets a session
//! with its own roots; `--stateless` answers every request on its own, with plain JSON responses, so any number of
//! instances can sit behind any load balancer.

use super::{ReadServer, idle_trim, multi_thread_runtime};
use agent_read::{Config, SessionSettings};
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Where the HTTP path is mounted.
pub const MCP_PATH: &str = "/mcp";

/// `Host` headers accepted whatever `--allow-host` says.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// How to serve over HTTP, as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `HOST:PORT` or a bare port (which listens on 127.0.0.1).
    pub listen: String,
    /// More `Host` header values to accept (`*` accepts any).
    pub allowed_hosts: Vec<String>,
    /// Serve without sessions.
    pub stateless: bool,
}

/// Serves the tools over streamable HTTP until interrupted (Ctrl-C or SIGTERM).
pub fn serve_http(config: Config, mut settings: SessionSettings, options: &HttpOptions) -> Result<(), String> {
    let address = listen_address(&options.listen)?;
    if options.stateless {
        // Every request stands alone: no session lives long enough to hold a ledger or a budget.
        if settings.budget_tokens.is_some() {
            return Err("a token budget needs a session, and --stateless has none; drop the budget (--budget-tokens \
                        or [session] budget_tokens), or serve HTTP with sessions"
                .to_string());
        }
        settings.repeat_read_stubs = false;
    }
    idle_trim::pin_trim_threshold();
    let base = ReadServer::new(config, settings)?;
    // Requests arriving and reads finishing both keep the server from trimming.
    let activity = base.activity.clone();
    let http_config = http_config(options);
    let stop = http_config.cancellation_token.clone();
    multi_thread_runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}; choose another address or port"))?;
        let bound = listener.local_addr().map_err(|e| format!("cannot read the listening address: {e}"))?;
        let service: StreamableHttpService<ReadServer, LocalSessionManager> = StreamableHttpService::new(
            move || base.for_new_client().map_err(std::io::Error::other),
            Arc::new(LocalSessionManager::default()),
            http_config,
        );
        tokio::spawn(activity.clone().trim_when_quiet());
        let router = axum::Router::new().nest_service(MCP_PATH, Tracked { inner: service, activity });
        warn_if_unreachable(bound, options);
        let mode = if options.stateless { "stateless" } else { "sessions" };
        eprintln!("agent-read: serving MCP over streamable HTTP at http://{bound}{MCP_PATH} ({mode})");
        // Without TCP_NODELAY a streamed answer (headers, then the event) waits on the client's delayed ACK: 40 ms.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                interrupted().await;
                // Ends open sessions and their event streams, so the shutdown does not wait on idle clients.
                stop.cancel();
            })
            .await
            .map_err(|e| format!("the HTTP server stopped: {e}"))
    })
}

/// rmcp's service with two additions: every request counts as activity for the idle trim, and a session's end is
/// answered 204. A plain wrapper rather than axum middleware: in a burst of 1,000 requests, two `from_fn` layers cost
/// a server that answered from memory about 40 µs of CPU per request (BENCHMARKS.md, "The floor").
#[derive(Clone)]
struct Tracked {
    inner: StreamableHttpService<ReadServer, LocalSessionManager>,
    activity: idle_trim::Activity,
}

impl tower_service::Service<Request> for Tracked {
    type Response =
        <StreamableHttpService<ReadServer, LocalSessionManager> as tower_service::Service<Request>>::Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower_service::Service::<Request>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.activity.record();
        let is_delete = request.method() == Method::DELETE;
        let answer = self.inner.call(request);
        Box::pin(async move {
            let mut response = answer.await?;
            session_ended_is_204(is_delete, &mut response);
            Ok(response)
        })
    }
}

/// rmcp answers a session's DELETE with 202 Accepted; the session is gone by then, and clients (the Python SDK)
/// expect 200 or 204 — anything else they log as a failed termination. Say 204 No Content.
fn session_ended_is_204<B>(is_delete: bool, response: &mut axum::http::Response<B>) {
    if is_delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
}

/// The socket address to listen on: `HOST:PORT`, `localhost:PORT`, or a bare port on 127.0.0.1.
pub fn listen_address(listen: &str) -> Result<SocketAddr, String> {
    let loopback = |port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    if let Ok(port) = listen.parse::<u16>() {
        return Ok(loopback(port));
    }
    if let Some(port) = listen.strip_prefix("localhost:").and_then(|port| port.parse::<u16>().ok()) {
        return Ok(loopback(port));
    }
    listen.parse::<SocketAddr>().map_err(|_| {
        format!("--http expects IP:PORT (127.0.0.1:8080, [::1]:8080), localhost:PORT or a port number; got `{listen}`")
    })
}

fn http_config(options: &HttpOptions) -> StreamableHttpServerConfig {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
    if options.allowed_hosts.iter().any(|host| host == "*") {
        return config.disable_allowed_hosts();
    }
    let hosts = LOOPBACK_HOSTS.iter().map(|host| host.to_string()).chain(options.allowed_hosts.iter().cloned());
    config.with_allowed_hosts(hosts)
}

/// A server listening beyond loopback that accepts only loopback `Host` headers refuses every remote client: say so.
fn warn_if_unreachable(bound: SocketAddr, options: &HttpOptions) {
    if !bound.ip().is_loopback() && options.allowed_hosts.is_empty() {
        eprintln!(
            "agent-read: listening on {bound}, but only loopback Host headers are accepted; add --allow-host NAME \
             for each name remote clients use (the server has no authentication: expose it only behind one)"
        );
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_ports_and_localhost_listen_on_loopback() {
        assert_eq!(listen_address("8080").unwrap(), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(listen_address("localhost:0").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(listen_address("[::1]:9000").unwrap(), "[::1]:9000".parse().unwrap());
        assert_eq!(listen_address("0.0.0.0:80").unwrap(), "0.0.0.0:80".parse().unwrap());
    }

    #[test]
    fn malformed_addresses_say_what_is_expected() {
        for bad in ["", "host", "example.com:80", "127.0.0.1", "70000", "localhost:x"] {
            let err = listen_address(bad).unwrap_err();
            assert!(err.contains("--http expects IP:PORT"), "{bad}: {err}");
        }
    }

    #[test]
    fn allowed_hosts_extend_loopback_and_star_accepts_any() {
        let options = HttpOptions { allowed_hosts: vec!["example.com".into()], ..HttpOptions::default() };
        assert_eq!(http_config(&options).allowed_hosts, ["localhost", "127.0.0.1", "::1", "example.com"]);
        let any = HttpOptions { allowed_hosts: vec!["*".into()], ..HttpOptions::default() };
        assert!(http_config(&any).allowed_hosts.is_empty());
    }

    #[test]
    fn only_a_deletes_accepted_answer_becomes_204() {
        let answer = |status| axum::http::Response::builder().status(status).body(()).unwrap();
        let mut ended = answer(StatusCode::ACCEPTED);
        session_ended_is_204(true, &mut ended);
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        for (is_delete, status) in [(false, StatusCode::ACCEPTED), (true, StatusCode::NOT_FOUND)] {
            let mut other = answer(status);
            session_ended_is_204(is_delete, &mut other);
            assert_eq!(other.status(), status);
        }
    }

    #[tokio::test]
    async fn every_request_counts_as_activity_whatever_its_answer() {
        use tower_service::Service as _;
        let root = tempfile::tempdir().unwrap();
        let config = Config { roots: vec![root.path().to_path_buf()], ..Config::default() };
        let base = ReadServer::new(config, SessionSettings::default()).unwrap();
        let activity = base.activity.clone();
        let inner = StreamableHttpService::new(
            move || base.for_new_client().map_err(std::io::Error::other),
            Arc::new(LocalSessionManager::default()),
            http_config(&HttpOptions::default()),
        );
        let mut tracked = Tracked { inner, activity: activity.clone() };
        // The clock counts whole milliseconds from the activity's creation: let one pass.
        std::thread::sleep(std::time::Duration::from_millis(3));
        let before = activity.last_ms();
        // A foreign Host header is refused, and still counts.
        let request =
            Request::builder().uri("/").header("host", "example.com").body(axum::body::Body::empty()).unwrap();
        let answer = tracked.call(request).await.unwrap();
        assert!(answer.status().is_client_error(), "{}", answer.status());
        assert!(activity.last_ms() > before);
    }

    #[test]
    fn stateless_mode_drops_sessions_and_answers_json() {
        let config = http_config(&HttpOptions { stateless: true, ..HttpOptions::default() });
        assert!(!config.legacy_session_mode && config.json_response);
        let config = http_config(&HttpOptions::default());
        assert!(config.legacy_session_mode && !config.json_response);
    }
}
