//! What the HTTP face answers where rmcp's own answers leave a client without its next step: a body that is not a
//! JSON-RPC message (rmcp: `415` with plain text, although the content type was right), a refused `Host` or `Origin`
//! (rmcp: a bare `403` that names neither the value nor `--allow-host`), and the end of a session that does not
//! exist (rmcp: accepted, as if it had been ended); and, on a server with a token budget, a client that asks for
//! protocol 2026-07-28 (rmcp: `Unsupported protocol version`, without the reason: the budget needs a session).
//! A body that names a key twice is screened here too, while its bytes are at hand (see [`duplicates`]).
//!
//! [`Asked`] is what a request asked, taken before it goes to rmcp; [`amend`] then corrects rmcp's answer to it.

use super::duplicates::{self, Refusal, Screened};
use super::malformed::{self, Decoded, Framing};
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::model::{ErrorCode, ErrorData, JsonRpcMessage};
use rmcp::transport::common::server_side_http::SessionId;

/// The largest request body read, which rmcp is configured to accept too (its own default).
pub(super) const MAX_BODY_BYTES: usize = 4 << 20;

/// The answers rmcp's service gives, whose body type every answer here must have.
pub(super) type Answer = axum::http::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>>;

/// What a request asked, as far as the corrections need it.
#[derive(Debug, Default)]
pub(super) struct Asked {
    /// The session a `DELETE` means to end.
    pub ending: Option<SessionId>,
    /// Whether that session did not exist when the request arrived (set by the caller, who holds the sessions).
    pub unknown_session: bool,
    /// The `Host` header as sent, or else the authority of the request's URI (HTTP/2, absolute-form requests).
    pub host: Option<HeaderValue>,
    /// The `Origin` header, as sent.
    pub origin: Option<HeaderValue>,
    /// The body of a `POST` that says it is JSON, kept to say what is wrong with it.
    pub json_body: Option<Bytes>,
    /// Whether that body was over [`MAX_BODY_BYTES`] (or could not be read whole): rmcp then gets an empty one, to
    /// check Host and Origin before the answer says so.
    pub body_unread: Option<String>,
    /// A body refused for a key it names twice (see [`duplicates`]): rmcp gets an empty one, as for `body_unread`.
    pub refused: Option<Refusal>,
}

impl Asked {
    /// What `request` asks, and the request to pass on: a JSON `POST` body is read whole (at most
    /// [`MAX_BODY_BYTES`]) and put back, without a UTF-8 byte-order mark (which JSON allows a reader to skip and rmcp
    /// refuses).
    pub async fn of(request: Request) -> (Asked, Request) {
        let headers = request.headers();
        let authority = || request.uri().authority().and_then(|a| HeaderValue::from_str(a.as_str()).ok());
        let host = headers.get(header::HOST).cloned().or_else(authority);
        let mut asked = Asked { host, origin: headers.get(header::ORIGIN).cloned(), ..Asked::default() };
        if request.method() == Method::DELETE {
            asked.ending = headers.get("mcp-session-id").and_then(|id| id.to_str().ok()).map(SessionId::from);
        }
        if request.method() != Method::POST || !says_json(headers) {
            return (asked, request);
        }
        let (mut parts, body) = request.into_parts();
        let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
            Ok(bytes) => {
                let bytes = if bytes.starts_with(BOM) { bytes.slice(BOM.len()..) } else { bytes };
                asked.json_body = Some(bytes.clone());
                match duplicates::screen(&bytes) {
                    Screened::Clean => bytes,
                    // rmcp hands the HTTP request's parts on to the handler, this mark with them.
                    Screened::Arguments(mark) => {
                        parts.extensions.insert(mark);
                        bytes
                    }
                    Screened::Refused(refusal) => {
                        asked.refused = Some(refusal);
                        Bytes::new()
                    }
                }
            }
            Err(e) => {
                asked.body_unread = Some(e.to_string());
                Bytes::new()
            }
        };
        (asked, Request::from_parts(parts, axum::body::Body::from(body)))
    }
}

/// A UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Whether the `Content-Type` is JSON (rmcp answers any other `415`, rightly).
fn says_json(headers: &HeaderMap) -> bool {
    let essence =
        |value: &str| value.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json");
    headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).is_some_and(essence)
}

/// The answer to a `DELETE` of a session that does not exist: `404`, as for any other request naming it.
fn unknown_session() -> Answer {
    plain(StatusCode::NOT_FOUND, "no such session: it ended, or it never began; start a new one with initialize")
}

/// rmcp's `answer` to what was `asked`, corrected where it falls short (see the module's documentation);
/// `sessions_required` when the server serves only protocols with sessions (it keeps a token budget).
pub(super) async fn amend(asked: &Asked, answer: Answer, sessions_required: bool) -> Answer {
    // A refusal comes first: nothing else is said to a client refused for its Host or Origin.
    if answer.status() == StatusCode::FORBIDDEN {
        return refused(asked, answer).await;
    }
    if let Some(why) = &asked.body_unread {
        let why = format!(
            "the request body could not be read whole ({why}); a message is at most {} MiB",
            MAX_BODY_BYTES >> 20
        );
        return plain(StatusCode::PAYLOAD_TOO_LARGE, why);
    }
    if let Some(refusal) = &asked.refused {
        let error = JsonRpcMessage::<(), (), ()>::error(refusal.error.clone(), refusal.id.clone());
        return json_error(StatusCode::BAD_REQUEST, &error).unwrap_or(answer);
    }
    match answer.status() {
        // rmcp answers a session's end 202 Accepted; the session is gone by then, and clients (the Python SDK)
        // expect 200 or 204, logging anything else as a failed termination.
        StatusCode::ACCEPTED if asked.unknown_session => unknown_session(),
        StatusCode::ACCEPTED if asked.ending.is_some() => with_status(answer, StatusCode::NO_CONTENT),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => match &asked.json_body {
            Some(body) => malformed_body(body).unwrap_or(answer),
            None => answer,
        },
        StatusCode::BAD_REQUEST if sessions_required => explain_refused_version(answer).await,
        _ => answer,
    }
}

/// rmcp's refusal of protocol 2026-07-28 (or newer) on a server that requires sessions, with its reason and the
/// way on added; any other answer as it was.
async fn explain_refused_version(answer: Answer) -> Answer {
    let (parts, body) = answer.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let rebuilt = |body: Bytes| Answer::from_parts(parts, http_body_util::Full::new(body).boxed());
    let Ok(mut message) = serde_json::from_slice::<serde_json::Value>(&body) else { return rebuilt(body) };
    let error = &mut message["error"];
    let sessionless = error["data"]["requested"].as_str().is_some_and(|version| version >= SESSIONLESS_FROM);
    if error["code"] != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0 || !sessionless {
        return rebuilt(body);
    }
    error["message"] = format!(
        "Unsupported protocol version: this server keeps a token budget (--budget-tokens), which needs a session, \
         and protocol {SESSIONLESS_FROM} has none over HTTP; connect with a version that starts with initialize \
         (listed in `data.supported`), or run the server without a budget"
    )
    .into();
    match serde_json::to_vec(&message) {
        Ok(json) => {
            let mut answer = rebuilt(Bytes::from(json));
            answer.headers_mut().remove(header::CONTENT_LENGTH);
            answer
        }
        Err(_) => rebuilt(body),
    }
}

/// The first protocol version without sessions over HTTP (versions are dates, so later ones compare greater).
const SESSIONLESS_FROM: &str = "2026-07-28";

/// `answer` with another status.
fn with_status(mut answer: Answer, status: StatusCode) -> Answer {
    *answer.status_mut() = status;
    answer
}

/// `400` with the JSON-RPC error a body that is not a message is owed; `None` when the body is a message after all.
fn malformed_body(body: &[u8]) -> Option<Answer> {
    let error = match malformed::decode(body, Framing::Body) {
        Decoded::Message(_) => return None,
        Decoded::Answer(error) => error,
        Decoded::Skipped => {
            let message = "invalid request: the body is no JSON-RPC request, notification or response of MCP";
            JsonRpcMessage::error(ErrorData::new(ErrorCode::INVALID_REQUEST, message, None), None)
        }
    };
    json_error(StatusCode::BAD_REQUEST, &error)
}

/// An answer of `status` whose body is the JSON-RPC `error`.
fn json_error(status: StatusCode, error: &impl serde::Serialize) -> Option<Answer> {
    let json = serde_json::to_vec(error).ok()?;
    let answer = axum::http::Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(http_body_util::Full::new(Bytes::from(json)).boxed());
    answer.ok()
}

/// A refusal that names what was refused and how to admit it.
async fn refused(asked: &Asked, answer: Answer) -> Answer {
    let said = match answer.into_body().collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(never) => match never {},
    };
    let text = |value: &Option<HeaderValue>| {
        value.as_ref().map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()).unwrap_or_default()
    };
    let why = if said.contains("Host") {
        let host = text(&asked.host);
        format!(
            "Forbidden: the host `{host}` is not accepted (only loopback names, against DNS rebinding); if \
             clients reach this server by that name, start it with --allow-host {}",
            host_name(&host)
        )
    } else if said.contains("Origin") {
        let origin = text(&asked.origin);
        format!(
            "Forbidden: the Origin `{origin}` is not accepted: browser pages may connect only from loopback or from a \
             host named with --allow-host"
        )
    } else {
        said
    };
    plain(StatusCode::FORBIDDEN, why)
}

/// A `Host` header's name without its port (`files.internal:8080` → `files.internal`, `[::1]:80` → `[::1]`).
fn host_name(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port))
            if port.bytes().all(|b| b.is_ascii_digit()) && (!name.contains(':') || name.ends_with(']')) =>
        {
            name
        }
        _ => host,
    }
}

/// A plain-text answer.
fn plain(status: StatusCode, text: impl Into<String>) -> Answer {
    let mut answer = axum::http::Response::new(http_body_util::Full::new(Bytes::from(text.into())).boxed());
    *answer.status_mut() = status;
    answer.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_name_loses_its_port_and_keeps_its_brackets() {
        assert_eq!(host_name("files.internal:8080"), "files.internal");
        assert_eq!(host_name("files.internal"), "files.internal");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("::1"), "::1");
    }

    #[test]
    fn a_json_body_that_is_a_message_keeps_rmcps_answer() {
        assert!(malformed_body(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        let answer = malformed_body(b"").expect("an empty body is owed an answer");
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    }
}
