//! The MCP face over streamable HTTP: `agent-read mcp --http ADDR` serves the tool at `http://ADDR/mcp`.
//!
//! Loopback by default: a bare port listens on 127.0.0.1, and only loopback `Host` headers are accepted (DNS
//! rebinding protection) unless `--allow-host` names more. In session mode (the default) each client gets a session
//! with its own roots; `--stateless` answers every request on its own, with plain JSON responses, so any number of
//! instances can sit behind any load balancer.

use super::http_edges::{self, Asked};
use super::{ReadServer, ServeError, idle_trim, multi_thread_runtime};
use agent_read::{Config, SessionSettings};
use axum::extract::Request;
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
pub fn serve_http(config: Config, mut settings: SessionSettings, options: &HttpOptions) -> Result<(), ServeError> {
    let address = listen_address(&options.listen)?;
    options.allowed_hosts.iter().try_for_each(|host| check_allowed_host(host))?;
    if options.stateless {
        // Every request stands alone: no session lives long enough to hold a ledger or a budget.
        if settings.budget_tokens.is_some() {
            return Err("a token budget needs a session, and --stateless has none; drop the budget (--budget-tokens \
                        or [session] budget_tokens), or serve HTTP with sessions"
                .to_string()
                .into());
        }
        settings.repeat_read_stubs = false;
    }
    idle_trim::pin_trim_threshold();
    // A budget needs a session, which protocol 2026-07-28 has not over HTTP: clients are steered to `initialize`.
    let sessions_required = settings.budget_tokens.is_some();
    let transport = if options.stateless { "http-stateless" } else { "http" };
    let base = ReadServer { sessions_required, transport, ..ReadServer::new(config, settings)? };
    // Requests arriving and reads finishing both keep the server from trimming.
    let activity = base.activity.clone();
    let http_config = http_config(options);
    let stop = http_config.cancellation_token.clone();
    multi_thread_runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}; choose another address or port"))?;
        let bound = listener.local_addr().map_err(|e| format!("cannot read the listening address: {e}"))?;
        let sessions = Arc::new(LocalSessionManager::default());
        let service: StreamableHttpService<ReadServer, LocalSessionManager> = StreamableHttpService::new(
            move || base.for_new_client().map_err(std::io::Error::other),
            sessions.clone(),
            http_config,
        );
        tokio::spawn(activity.clone().trim_when_quiet());
        // Stateless mode keeps no sessions: rmcp answers every DELETE there itself.
        let sessions = (!options.stateless).then_some(sessions);
        let tracked = Tracked { inner: Arc::new(service), activity, sessions, sessions_required };
        let router = axum::Router::new().nest_service(MCP_PATH, tracked);
        warn_if_unreachable(bound, options);
        let mode = if options.stateless { "stateless" } else { "sessions" };
        eprintln!("agent-read: serving MCP over streamable HTTP at http://{bound}{MCP_PATH} ({mode})");
        // Without TCP_NODELAY a streamed answer (headers, then the event) waits on the client's delayed ACK: 40 ms.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        // Made into a service once: served as it is, a router rebuilds its table of routes for every connection.
        axum::serve(listener, router.into_make_service())
            .with_graceful_shutdown(async move {
                interrupted().await;
                // Ends open sessions and their event streams, so the shutdown does not wait on idle clients.
                stop.cancel();
            })
            .await
            .map_err(|e| ServeError::Failed(format!("the HTTP server stopped: {e}")))
    })
}

/// rmcp's service with two additions: every request counts as activity for the idle trim, and answers where rmcp's
/// fall short are corrected (see [`http_edges`]). A plain wrapper rather than axum middleware: in a burst of 1,000
/// requests, two `from_fn` layers cost a server that answered from memory about 40 µs of CPU per request
/// (BENCHMARKS.md, "The floor").
#[derive(Clone)]
struct Tracked {
    /// Shared rather than cloned per request: its configuration holds the lists of accepted hosts and origins.
    inner: Arc<StreamableHttpService<ReadServer, LocalSessionManager>>,
    activity: idle_trim::Activity,
    /// The sessions, to tell an unknown one's `DELETE` (none in stateless mode).
    sessions: Option<Arc<LocalSessionManager>>,
    /// Whether only protocols with sessions are served (a token budget needs one).
    sessions_required: bool,
}

impl tower_service::Service<Request> for Tracked {
    type Response = http_edges::Answer;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // rmcp's service is always ready: its `handle` serves any number of requests at once.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        use rmcp::transport::streamable_http_server::SessionManager;
        self.activity.record();
        let (inner, sessions, sessions_required) = (self.inner.clone(), self.sessions.clone(), self.sessions_required);
        Box::pin(async move {
            let (mut asked, request) = Asked::of(request).await;
            // Asked before rmcp ends it; acted on only after rmcp has checked Host and Origin (see `amend`).
            if let (Some(id), Some(sessions)) = (&asked.ending, &sessions) {
                asked.unknown_session = !sessions.has_session(id).await.unwrap_or(true);
            }
            let answer = inner.handle(request).await;
            Ok(http_edges::amend(&asked, answer, sessions_required).await)
        })
    }
}

/// An `--allow-host` value: `*`, or a host name, an IPv4 address or an IPv6 address (bare, or in brackets), with an
/// optional port — a value a `Host` header can name (anything else would never match, silently).
fn check_allowed_host(host: &str) -> Result<(), String> {
    let port_ok = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    let name_ok =
        |name: &str| !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    let valid = match host.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        Some((address, rest)) => {
            address.parse::<std::net::Ipv6Addr>().is_ok()
                && (rest.is_empty() || rest.strip_prefix(':').is_some_and(port_ok))
        }
        None if host.parse::<std::net::Ipv6Addr>().is_ok() => true,
        None => match host.split_once(':') {
            Some((name, port)) => name_ok(name) && port_ok(port),
            None => host == "*" || name_ok(host),
        },
    };
    if valid {
        return Ok(());
    }
    Err(format!(
        "--allow-host expects a host as clients send it in the Host header (files.internal, files.internal:8080, \
         [::1]:8080) or `*` for any; got `{host}`"
    ))
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

/// rmcp's configuration: the mode, and the `Host` and `Origin` values accepted — loopback names and those of
/// `--allow-host`; browser pages may connect from the same hosts, on any port, and clients that send no `Origin`
/// (any but a browser) are not asked for one.
fn http_config(options: &HttpOptions) -> StreamableHttpServerConfig {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless)
        .with_max_request_body_bytes(http_edges::MAX_BODY_BYTES);
    if options.allowed_hosts.iter().any(|host| host == "*") {
        return config.disable_allowed_hosts().disable_allowed_origins();
    }
    let hosts: Vec<String> =
        LOOPBACK_HOSTS.iter().map(|host| host.to_string()).chain(options.allowed_hosts.iter().cloned()).collect();
    let origins = hosts.iter().flat_map(|host| ["http", "https"].map(|scheme| origin_pattern(scheme, host)));
    config.with_allowed_origins(origins.collect::<Vec<_>>()).enforce_origin_validation().with_allowed_hosts(hosts)
}

/// The origins a page served from `host` has, under `scheme`: any port unless the host names one (`name:port`);
/// an IPv6 address in brackets.
fn origin_pattern(scheme: &str, host: &str) -> String {
    let bracketed = if host.parse::<std::net::Ipv6Addr>().is_ok() { format!("[{host}]") } else { host.to_string() };
    let has_port = bracketed.rsplit_once(':').is_some_and(|(name, port)| {
        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && (!name.contains(':') || name.ends_with(']'))
    });
    if has_port { format!("{scheme}://{bracketed}") } else { format!("{scheme}://{bracketed}:*") }
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
        let config = http_config(&options);
        assert_eq!(config.allowed_hosts, ["localhost", "127.0.0.1", "::1", "example.com"]);
        assert!(config.allowed_origins.contains(&"https://example.com:*".to_string()), "{:?}", config.allowed_origins);
        assert!(config.allowed_origins.contains(&"http://[::1]:*".to_string()), "{:?}", config.allowed_origins);
        let any = HttpOptions { allowed_hosts: vec!["*".into()], ..HttpOptions::default() };
        let config = http_config(&any);
        assert!(config.allowed_hosts.is_empty() && config.allowed_origins.is_empty());
    }

    #[test]
    fn allowed_hosts_are_host_header_values_or_star() {
        for good in ["*", "files.internal", "files.internal:8080", "[::1]:8080", "::1", "10.0.0.2"] {
            assert!(check_allowed_host(good).is_ok(), "{good}");
        }
        for bad in ["evil.com:*", "a b", "http://x", "*.example.com", "", "user@host", "[::1]x"] {
            let err = check_allowed_host(bad).expect_err(bad);
            assert!(err.contains("--allow-host expects a host"), "{bad}: {err}");
        }
    }

    #[test]
    fn an_allowed_host_with_a_port_allows_pages_from_that_port_only() {
        assert_eq!(origin_pattern("https", "files.internal:8443"), "https://files.internal:8443");
        assert_eq!(origin_pattern("http", "files.internal"), "http://files.internal:*");
        assert_eq!(origin_pattern("http", "::1"), "http://[::1]:*");
        assert_eq!(origin_pattern("http", "[::1]:80"), "http://[::1]:80");
    }

    #[tokio::test]
    async fn every_request_counts_as_activity_whatever_its_answer() {
        use tower_service::Service as _;
        let root = tempfile::tempdir().unwrap();
        let config = Config { roots: vec![root.path().to_path_buf()], ..Config::default() };
        let base = ReadServer::new(config, SessionSettings::default()).unwrap();
        let activity = base.activity.clone();
        let inner = Arc::new(StreamableHttpService::new(
            move || base.for_new_client().map_err(std::io::Error::other),
            Arc::new(LocalSessionManager::default()),
            http_config(&HttpOptions::default()),
        ));
        let mut tracked = Tracked { inner, activity: activity.clone(), sessions: None, sessions_required: false };
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
