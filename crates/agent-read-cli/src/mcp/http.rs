//! The MCP face over streamable HTTP: `agent-read mcp --http ADDR` serves the tool at `http://ADDR/mcp`.
//!
//! Loopback by default: a bare port listens on 127.0.0.1, and only loopback `Host` headers are accepted (DNS
//! rebinding protection) unless `--allow-host` names more. In session mode (the default) each client gets a session
//! with its own roots; `--stateless` answers every request on its own, with plain JSON responses, so any number of
//! instances can sit behind any load balancer.
//!
//! Clients authenticate with a bearer token when a token file or OAuth is configured (see [`http_auth`]); serving
//! beyond loopback, or for any `Host`, without either is refused unless `--insecure-no-auth` says so. Every connection
//! is bounded in time and number (see [`http_serve`]), a request's body in time (`[http] body_timeout_ms`), and
//! sessions and their calls in number (see [`http_sessions`]).

use super::http_auth::Gate;
use super::http_edges::{self, Answer, Asked};
use super::http_serve::{self, ConnectionLimits};
use super::http_sessions::{self, CappedSessions, Refused};
use super::{ReadServer, ServeError, multi_thread_runtime};
use agent_read::{Config, SessionSettings};
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Where the HTTP path is mounted.
pub const MCP_PATH: &str = "/mcp";

/// `Host` headers accepted whatever `--allow-host` says.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Seconds a client refused by a cap is asked to wait before it tries again.
const RETRY_AFTER_SECS: &str = "1";

/// How to serve over HTTP, as given on the command line (the rest is the configuration's `[http]` table).
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `HOST:PORT` or a bare port (which listens on 127.0.0.1).
    pub listen: String,
    /// More `Host` header values to accept (`*` accepts any).
    pub allowed_hosts: Vec<String>,
    /// Serve without sessions.
    pub stateless: bool,
}

/// Serves the tools over streamable HTTP until interrupted (Ctrl-C or SIGTERM), as `config.http` configures.
pub fn serve_http(config: Config, mut settings: SessionSettings, options: &HttpOptions) -> Result<(), ServeError> {
    let address = listen_address(&options.listen)?;
    options.allowed_hosts.iter().try_for_each(|host| check_allowed_host(host))?;
    let http = config.http.clone();
    http.validate().map_err(|e| e.to_string())?;
    let gate = Gate::from_config(&http)?.map(Arc::new);
    check_exposure(address, options, gate.is_some(), http.insecure_no_auth)?;
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
    let limits = ConnectionLimits {
        head_timeout: Duration::from_millis(http.head_timeout_ms),
        idle_timeout: Duration::from_millis(http.idle_timeout_ms),
        max_connections: http_serve::fit_descriptor_limit(http.max_connections),
    };
    // A budget needs a session, which protocol 2026-07-28 has not over HTTP: clients are steered to `initialize`.
    let sessions_required = settings.budget_tokens.is_some();
    let transport = if options.stateless { "http-stateless" } else { "http" };
    let base = ReadServer { sessions_required, transport, ..ReadServer::new(config, settings)? };
    let counting = base.counting.clone();
    let http_config = http_config(options);
    let stop = http_config.cancellation_token.clone();
    multi_thread_runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}; choose another address or port"))?;
        let bound = listener.local_addr().map_err(|e| format!("cannot read the listening address: {e}"))?;
        let sessions = Arc::new(CappedSessions::new(http.max_sessions, http.max_calls_per_session));
        let service: StreamableHttpService<ReadServer, CappedSessions> = StreamableHttpService::new(
            move || base.for_new_client().map_err(std::io::Error::other),
            sessions.clone(),
            http_config,
        );
        // Stateless mode keeps no sessions: rmcp answers every DELETE there itself.
        let sessions = (!options.stateless).then_some(sessions);
        let body_timeout = Duration::from_millis(http.body_timeout_ms);
        let tracked =
            Tracked { inner: Arc::new(service), sessions, sessions_required, gate: gate.clone(), body_timeout };
        let router = routes(tracked, gate.as_deref());
        warn_if_unreachable(bound, options);
        let mode = if options.stateless { "stateless" } else { "sessions" };
        let auth = if gate.is_some() { "bearer tokens required" } else { "no authentication" };
        eprintln!("agent-read: serving MCP over streamable HTTP at http://{bound}{MCP_PATH} ({mode}; {auth})");
        http_serve::serve(listener, router, limits, async move {
            interrupted().await;
            // Ends open sessions and their event streams, so the shutdown does not wait on idle clients.
            stop.cancel();
        })
        .await;
        // The runtime waits for its blocking pool when dropped: a count in progress must end first.
        counting.stop();
        Ok(())
    })
}

/// The routes: the MCP path, and the protected resource metadata when OAuth is configured.
fn routes(tracked: Tracked, gate: Option<&Gate>) -> axum::Router {
    let mut router = axum::Router::new().nest_service(MCP_PATH, tracked);
    if let Some(metadata) = gate.and_then(Gate::metadata) {
        for path in &metadata.paths {
            let document = metadata.document.clone();
            router = router.route(path, axum::routing::get(move || std::future::ready(metadata_answer(&document))));
        }
    }
    router
}

/// The protected resource metadata document: any page may read it (clients in browsers look it up).
fn metadata_answer(document: &Bytes) -> Answer {
    let mut answer = axum::http::Response::new(http_body_util::Full::new(document.clone()).boxed());
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    answer
}

/// Refuses to serve, without authentication, where anyone may connect: on an address beyond loopback, or for any
/// `Host` (`--allow-host '*'`, which also lets any web page's requests through). `--insecure-no-auth` serves anyway,
/// with a warning, for a server behind something else that authenticates.
fn check_exposure(
    address: SocketAddr,
    options: &HttpOptions,
    authenticated: bool,
    insecure: bool,
) -> Result<(), String> {
    let any_host = options.allowed_hosts.iter().any(|host| host == "*");
    let exposed = if !address.ip().is_loopback() {
        format!("on {address}, beyond loopback")
    } else if any_host {
        "for any Host (--allow-host '*')".to_string()
    } else {
        return Ok(());
    };
    if authenticated {
        return Ok(());
    }
    if insecure {
        eprintln!(
            "agent-read: WARNING: serving {exposed} without authentication (--insecure-no-auth): anyone who can \
             reach this server can read every file under its roots"
        );
        return Ok(());
    }
    Err(format!(
        "refusing to serve {exposed} without authentication: anyone who can reach the server could read every file \
         under its roots; give --auth-token-file FILE (or configure [http.oauth]), or, if something in front of this \
         server authenticates its clients, --insecure-no-auth"
    ))
}

/// rmcp's service with its additions: authentication first (see [`http_auth`]), then a time limit on the request's
/// body; answers where rmcp's fall short are corrected (see [`http_edges`]), and the refusals of the caps (see
/// [`http_sessions`]) are answered as such. A plain wrapper rather than axum middleware: one service call per request,
/// with no boxed layer between it and rmcp.
#[derive(Clone)]
struct Tracked {
    /// Shared rather than cloned per request: its configuration holds the lists of accepted hosts and origins.
    inner: Arc<StreamableHttpService<ReadServer, CappedSessions>>,
    /// The sessions, to tell an unknown one's `DELETE` (none in stateless mode).
    sessions: Option<Arc<CappedSessions>>,
    /// Whether only protocols with sessions are served (a token budget needs one).
    sessions_required: bool,
    /// Who may use the server (none: anyone who reaches it).
    gate: Option<Arc<Gate>>,
    /// How long a request's body may take to arrive.
    body_timeout: Duration,
}

impl tower_service::Service<Request> for Tracked {
    type Response = Answer;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // rmcp's service is always ready: its `handle` serves any number of requests at once.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        use rmcp::transport::streamable_http_server::SessionManager;
        let this = self.clone();
        Box::pin(async move {
            if let Some(gate) = &this.gate {
                match gate.admit(request.headers()).await {
                    Ok(who) => _ = request.extensions_mut().insert(who),
                    Err(refusal) => return Ok(refusal),
                }
            }
            let Ok((mut asked, request)) = tokio::time::timeout(this.body_timeout, Asked::of(request)).await else {
                return Ok(body_too_slow(this.body_timeout));
            };
            // Asked before rmcp ends it; acted on only after rmcp has checked Host and Origin (see `amend`).
            if let (Some(id), Some(sessions)) = (&asked.ending, &this.sessions) {
                asked.unknown_session = !sessions.has_session(id).await.unwrap_or(true);
            }
            let (answer, refused) = http_sessions::noting_refusals(this.inner.handle(request)).await;
            if let Some(refused) = refused {
                return Ok(cap_reached(refused));
            }
            Ok(http_edges::amend(&asked, answer, this.sessions_required).await)
        })
    }
}

/// `408` for a body that did not arrive in time; the connection closes after it.
fn body_too_slow(limit: Duration) -> Answer {
    let text = format!(
        "the request body did not arrive within {} ms ([http] body_timeout_ms); send it whole, promptly",
        limit.as_millis()
    );
    let mut answer = text_answer(StatusCode::REQUEST_TIMEOUT, text);
    answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

/// `503` (no room for a session) or `429` (too many calls in the session), with `Retry-After`.
fn cap_reached(refused: Refused) -> Answer {
    let (status, text) = match refused {
        Refused::NoRoomForASession => (
            StatusCode::SERVICE_UNAVAILABLE,
            "no room for another session: the server holds its most sessions ([http] max_sessions) and every one \
             has a call under way; try again shortly",
        ),
        Refused::TooManyCalls => (
            StatusCode::TOO_MANY_REQUESTS,
            "too many calls under way in this session ([http] max_calls_per_session); wait for an answer before \
             sending more",
        ),
    };
    let mut answer = text_answer(status, text);
    answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
    answer
}

/// A plain-text answer.
fn text_answer(status: StatusCode, text: impl Into<String>) -> Answer {
    let mut answer = axum::http::Response::new(http_body_util::Full::new(Bytes::from(text.into())).boxed());
    *answer.status_mut() = status;
    answer.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    answer
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
             for each name remote clients use"
        );
    }
}

/// Resolves on Ctrl-C (on Windows, also Ctrl-Break and a console closed), or SIGTERM on Unix.
async fn interrupted() {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(windows)]
    let terminate = async {
        let (Ok(mut brk), Ok(mut close)) = (tokio::signal::windows::ctrl_break(), tokio::signal::windows::ctrl_close())
        else {
            return std::future::pending::<()>().await;
        };
        tokio::select! {
            _ = brk.recv() => {}
            _ = close.recv() => {}
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

    #[test]
    fn stateless_mode_drops_sessions_and_answers_json() {
        let config = http_config(&HttpOptions { stateless: true, ..HttpOptions::default() });
        assert!(!config.legacy_session_mode && config.json_response);
        let config = http_config(&HttpOptions::default());
        assert!(config.legacy_session_mode && !config.json_response);
    }
}
