//! What the server answers for a message it cannot take, on either transport, as JSON-RPC 2.0 says, with the
//! request's `id` whenever it can be read (so that no client waits forever on a request the server could not take):
//!
//! - bytes that are not UTF-8 JSON: `-32700` (parse error);
//! - a JSON value that is not a valid request: `-32600` (invalid request), naming the field at fault, or the key it
//!   names twice (see [`duplicates`]);
//! - a known method whose `params` do not fit it: `-32602` (invalid params) with the reason, and an unknown method
//!   `-32601` pointing to the tool methods ([`unfit_method`], answered by the handler: rmcp parses both as a
//!   `CustomRequest`); MCP's methods for what this server does not offer (resources, prompts, completion)
//!   get the same `-32601` ([`not_served!`]);
//! - a notification or a response: never answered, however malformed (JSON-RPC forbids it).

use super::duplicates::{self, Kind, Screened};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorCode, ErrorData, GetExtensions, InitializeRequestParams, JsonRpcMessage,
    PaginatedRequestParams, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;

/// What a line (or an HTTP body) held.
#[derive(Debug)]
pub(super) enum Decoded {
    /// A message for the service.
    Message(RxJsonRpcMessage<RoleServer>),
    /// An error the client is owed in place of a message.
    Answer(TxJsonRpcMessage<RoleServer>),
    /// Nothing to pass on or answer: a blank line, or a malformed notification or response.
    Skipped,
}

/// How messages arrive, which the advice for a malformed one names.
#[derive(Debug, Clone, Copy)]
pub(super) enum Framing {
    /// One message per line (stdio).
    Line,
    /// One message per HTTP request body.
    Body,
}

impl Framing {
    /// What holds one message.
    fn noun(self) -> &'static str {
        match self {
            Framing::Line => "line",
            Framing::Body => "body",
        }
    }

    /// Where each message goes, as advice.
    fn each_message(self) -> &'static str {
        match self {
            Framing::Line => "on a line of its own",
            Framing::Body => "in a request of its own",
        }
    }
}

/// Reads one message: a line (its line feed and a carriage return before it allowed) or an HTTP body, a UTF-8
/// byte-order mark allowed.
pub(super) fn decode(line: &[u8], framing: Framing) -> Decoded {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skipped;
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => screened(message, duplicates::screen(line)),
        // rmcp refuses some keys named twice itself (`id`, `method`): the answer names the key all the same.
        Err(why) => match duplicates::screen(line) {
            Screened::Refused(refusal) if refusal.kind == Kind::Request => {
                Decoded::Answer(JsonRpcMessage::error(refusal.error, refusal.id))
            }
            _ => diagnose(line, &why, framing),
        },
    }
}

/// A message that parsed, as its keys named twice (if any) have it: passed on (a call marked for its arguments), or
/// refused (see [`duplicates`]).
fn screened(message: RxJsonRpcMessage<RoleServer>, screen: Screened) -> Decoded {
    match (message, screen) {
        (JsonRpcMessage::Request(request), screen) => {
            let (id, mut request) = (request.id, request.request);
            match screen {
                Screened::Refused(refusal) => return Decoded::Answer(JsonRpcMessage::error(refusal.error, refusal.id)),
                Screened::Arguments(mark) => _ = request.extensions_mut().insert(mark),
                Screened::Clean => {}
            }
            match request {
                // rmcp would answer it as a request that skipped initialize: say what is wrong with its params.
                ClientRequest::CustomRequest(custom) if custom.method == "initialize" => {
                    let error = unfit_method(&custom.method, custom.params.as_ref());
                    Decoded::Answer(JsonRpcMessage::error(error, Some(id)))
                }
                other => Decoded::Message(JsonRpcMessage::request(other, id)),
            }
        }
        (message, Screened::Clean | Screened::Arguments(_)) => Decoded::Message(message),
        // Never answered, as JSON-RPC says; a response fails the request it answers, so that nothing waits on it.
        (_, Screened::Refused(refusal)) => {
            eprintln!("agent-read: a message from the client was dropped: {}", refusal.error.message);
            match (refusal.kind, refusal.id) {
                (Kind::Response, Some(id)) => Decoded::Message(JsonRpcMessage::error(refusal.error, Some(id))),
                _ => Decoded::Skipped,
            }
        }
    }
}

/// The error for a request rmcp could not match to a method it knows (its `CustomRequest`): a known method whose
/// params do not fit it (rmcp would call the method unknown), or an unknown method.
pub(super) fn unfit_method(method: &str, params: Option<&Value>) -> ErrorData {
    let params_missing = params.is_none();
    let params = params.cloned().unwrap_or(Value::Null);
    let (why, example) = match method {
        "tools/call" => (
            serde_json::from_value::<CallToolRequestParams>(params).err(),
            r#"{"name": "read", "arguments": {"path": "src/main.rs"}}"#,
        ),
        "initialize" => (
            serde_json::from_value::<InitializeRequestParams>(params).err(),
            r#"{"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "me", "version": "1"}}"#,
        ),
        "tools/list" => (serde_json::from_value::<PaginatedRequestParams>(params).err(), "{}"),
        _ => return method_not_served(method),
    };
    let why = match why {
        _ if params_missing => "`params` is missing".to_string(),
        Some(e) => e.to_string(),
        None => "they do not fit it".to_string(),
    };
    let message = format!("invalid params for `{method}`: {why}; send e.g. {example}");
    ErrorData::new(ErrorCode::INVALID_PARAMS, message, None)
}

/// `-32601` for a method this server does not serve, naming the ones it does.
pub(super) fn method_not_served(method: &str) -> ErrorData {
    let message = format!("method `{method}` not found; this server serves tools: tools/list, tools/call");
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
}

/// Handlers, inside `impl ServerHandler`, for MCP methods of capabilities this server does not offer, each
/// answered with [`method_not_served`]: rmcp's own answer to them names only the method, with no way on, and
/// some clients ask every server for its resources and prompts, whatever it offers.
macro_rules! not_served {
    ($($handler:ident($params:ty) -> $result:ty = $method:literal;)*) => {$(
        async fn $handler(&self, _: $params, _: RequestContext<RoleServer>) -> Result<$result, ErrorData> {
            Err(malformed::method_not_served($method))
        }
    )*};
}
pub(super) use not_served;

/// The start of rmcp's answer to a request sent before `initialize` without the protocol version and capabilities in
/// its `_meta` (which the newest protocol allows).
const META_MISSING: &str = "request _meta is missing";

/// Adds the next step to rmcp's answer to a request sent before `initialize`: rmcp names only the newest protocol's
/// way, and clients of the versions before it need to send `initialize` first.
pub(super) fn explain(message: &mut TxJsonRpcMessage<RoleServer>) {
    if let JsonRpcMessage::Error(error) = message
        && error.error.message.starts_with(META_MISSING)
    {
        let message = error.error.message.to_mut();
        message.push_str(
            "; send initialize first (protocol versions up to 2025-11-25), or name both in this request's _meta \
             (2026-07-28)",
        );
    }
}

/// The answer owed for a line that is not a valid message, if any.
fn diagnose(line: &[u8], why: &serde_json::Error, framing: Framing) -> Decoded {
    let (noun, each) = (framing.noun(), framing.each_message());
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(_) if std::str::from_utf8(line).is_err() => {
            // The id may still be readable from the rest of the line.
            let id = serde_json::from_str::<Value>(&String::from_utf8_lossy(line)).ok().and_then(|v| readable_id(&v));
            let message = format!("parse error: the {noun} is not UTF-8; send each message as UTF-8 JSON {each}");
            return Decoded::Answer(error(ErrorCode::PARSE_ERROR, message, id));
        }
        Err(e) => {
            let message = format!("parse error: the {noun} is not valid JSON ({e}); send each message as JSON {each}");
            return Decoded::Answer(error(ErrorCode::PARSE_ERROR, message, None));
        }
    };
    let Value::Object(fields) = &value else {
        let message = match value {
            Value::Array(_) => format!("invalid request: a batch (JSON array); send each message {each}"),
            _ => "invalid request: a message is a JSON object".to_string(),
        };
        return Decoded::Answer(error(ErrorCode::INVALID_REQUEST, message, None));
    };
    let is_request = fields.contains_key("id") && !fields.contains_key("result") && !fields.contains_key("error");
    if !is_request && (fields.contains_key("method") || fields.contains_key("result") || fields.contains_key("error")) {
        // A notification or a response: never answered, whatever is wrong with it.
        return Decoded::Skipped;
    }
    let id = readable_id(&value);
    let fault = if !fields.contains_key("id") {
        "no `method` and no `id`".to_string()
    } else if id.is_none() && fields.get("id").is_some_and(is_integer_beyond_i64) {
        "`id` is an integer beyond the signed 64-bit range this server takes; count ids from 0, or use strings"
            .to_string()
    } else if id.is_none() {
        "`id` must be a string or an integer".to_string()
    } else if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        "`jsonrpc` must be \"2.0\"".to_string()
    } else if !fields.get("method").is_some_and(Value::is_string) {
        "`method` must be a string".to_string()
    } else if fields.get("params").is_some_and(|params| !params.is_object()) {
        "`params` must be an object".to_string()
    } else {
        why.to_string()
    };
    Decoded::Answer(error(ErrorCode::INVALID_REQUEST, format!("invalid request: {fault}"), id))
}

/// A message's `id`, when it is one a request may have: a string, or an integer within 64 bits.
pub(super) fn readable_id(message: &Value) -> Option<RequestId> {
    match message.get("id")? {
        Value::String(text) => Some(RequestId::String(text.as_str().into())),
        Value::Number(number) => number.as_i64().map(RequestId::Number),
        _ => None,
    }
}

/// Whether `id` is a whole number that a signed 64-bit integer cannot hold (JSON has no such limit; rmcp has).
fn is_integer_beyond_i64(id: &Value) -> bool {
    let Value::Number(number) = id else { return false };
    // serde_json keeps an integer beyond u64, or below i64, as a float (and `1.0` too, which is within range).
    const BEYOND: f64 = 9_223_372_036_854_775_808.0; // 2^63
    number.as_i64().is_none() && number.as_f64().is_some_and(|float| float.fract() == 0.0 && float.abs() >= BEYOND)
}

/// An error answer.
fn error(code: ErrorCode, message: String, id: Option<RequestId>) -> TxJsonRpcMessage<RoleServer> {
    JsonRpcMessage::error(ErrorData::new(code, message, None), id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The answer `decode` owes for `line`, as JSON.
    fn answer(line: &[u8]) -> Value {
        match decode(line, Framing::Line) {
            Decoded::Answer(answer) => serde_json::to_value(answer).unwrap(),
            other => panic!("{} was not answered: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    fn code_id_message(answer: &Value) -> (i64, Value, String) {
        let message = answer["error"]["message"].as_str().unwrap().to_string();
        (answer["error"]["code"].as_i64().unwrap(), answer.get("id").cloned().unwrap_or(Value::Null), message)
    }

    #[test]
    fn the_advice_names_how_messages_arrive_a_line_over_stdio_and_a_request_body_over_http() {
        let cases: [(&[u8], &str); 3] =
            [(b"{\"id\":", "not valid JSON"), (b"\"\xff\"", "not UTF-8"), (b"[{}]", "a batch")];
        for (input, fault) in cases {
            let message = |framing| match decode(input, framing) {
                Decoded::Answer(answer) => serde_json::to_value(answer).unwrap()["error"]["message"].to_string(),
                other => panic!("{other:?}"),
            };
            let (line, body) = (message(Framing::Line), message(Framing::Body));
            assert!(line.contains(fault) && line.contains("on a line of its own"), "{line}");
            assert!(body.contains(fault) && body.contains("in a request of its own"), "{body}");
            assert!(!body.contains("the line") && !body.contains("on a line"), "{body}");
        }
    }

    #[test]
    fn each_malformed_request_is_answered_with_its_code_its_id_when_readable_and_the_fault() {
        let cases: [(&[u8], i64, Value, &str); 12] = [
            (br#"{"jsonrpc":"2.0","id":1,"method":"#, -32700, Value::Null, "not valid JSON"),
            (b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"x\":\"\xff\"}", -32700, json!(2), "not UTF-8"),
            (b"42", -32600, Value::Null, "a message is a JSON object"),
            (br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, -32600, Value::Null, "a batch"),
            (br#"{"id":4,"method":"ping"}"#, -32600, json!(4), "`jsonrpc` must be \"2.0\""),
            (br#"{"jsonrpc":"2.0","id":"five","method":7}"#, -32600, json!("five"), "`method` must be a string"),
            (
                br#"{"jsonrpc":"2.0","id":6,"method":"ping","params":[1]}"#,
                -32600,
                json!(6),
                "`params` must be an object",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                -32600,
                Value::Null,
                "`id` must be a string or an integer",
            ),
            (br#"{}"#, -32600, Value::Null, "no `method` and no `id`"),
            (
                br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
                -32600,
                Value::Null,
                "`id` is an integer beyond the signed 64-bit range",
            ),
            (
                br#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}"#,
                -32600,
                Value::Null,
                "`id` is an integer beyond the signed 64-bit range",
            ),
            (br#"{"jsonrpc":"2.0","id":11,"method":"initialize"}"#, -32602, json!(11), "`params` is missing"),
        ];
        for (line, code, id, fault) in cases {
            let (got_code, got_id, message) = code_id_message(&answer(line));
            let shown = String::from_utf8_lossy(line);
            assert_eq!((got_code, &got_id), (code, &id), "{shown}: {message}");
            assert!(message.contains(fault), "{shown}: {message}");
        }
    }

    #[test]
    fn valid_messages_pass_and_notifications_responses_and_blank_lines_are_never_answered() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\r\n",
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            assert!(matches!(decode(line, Framing::Line), Decoded::Message(_)), "{}", String::from_utf8_lossy(line));
        }
        for line in [
            &b""[..],
            b"  \t\r\n",
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#,
            br#"{"jsonrpc":"1.0","id":5,"result":"no"}"#,
            br#"{"jsonrpc":"2.0","id":6,"error":"no"}"#,
        ] {
            assert!(matches!(decode(line, Framing::Line), Decoded::Skipped), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn unfit_params_of_a_known_method_are_invalid_params_and_other_methods_are_not_found() {
        let missing = unfit_method("tools/call", None);
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert!(missing.message.contains("`params` is missing; send e.g. {\"name\": \"read\""), "{}", missing.message);
        let unnamed = unfit_method("tools/call", Some(&json!({"arguments": {}})));
        assert_eq!(unnamed.code, ErrorCode::INVALID_PARAMS);
        assert!(unnamed.message.contains("missing field `name`"), "{}", unnamed.message);
        let initialize = unfit_method("initialize", Some(&json!({"protocolVersion": 5})));
        assert_eq!(initialize.code, ErrorCode::INVALID_PARAMS);
        let unknown = unfit_method("files/write", None);
        assert_eq!(unknown.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(unknown.message.contains("`files/write` not found"), "{}", unknown.message);
    }

    #[test]
    fn a_request_sent_before_initialize_is_told_to_send_initialize_first() {
        let meta = ErrorData::new(ErrorCode::INVALID_PARAMS, format!("{META_MISSING} or malformed"), None);
        let mut answer = JsonRpcMessage::error(meta, Some(RequestId::Number(1)));
        explain(&mut answer);
        let text = serde_json::to_string(&answer).unwrap();
        assert!(text.contains("; send initialize first (protocol versions up to 2025-11-25)"), "{text}");
        let other = ErrorData::new(ErrorCode::INVALID_PARAMS, "something else", None);
        let mut untouched = JsonRpcMessage::error(other, Some(RequestId::Number(2)));
        explain(&mut untouched);
        assert!(!serde_json::to_string(&untouched).unwrap().contains("initialize"));
    }
}
