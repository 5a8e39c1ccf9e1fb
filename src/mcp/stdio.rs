//! The stdio transport: one JSON-RPC message per line in each direction, as MCP's stdio transport defines it.
//!
//! Ours rather than rmcp's so that no line a client sends goes unanswered when an answer is due. rmcp's transport
//! skips a line that is not JSON without a word, answers a malformed request without its `id` (so the client's
//! request never settles) and drops an overlong line silently; its service answers `tools/call` with unfit params as
//! an unknown method. Here (see [`decode`]):
//!
//! - a line that is not UTF-8 JSON is answered `-32700` (parse error), with the request's `id` when it can be read;
//! - a JSON value that is not a valid request is answered `-32600` (invalid request), naming the field at fault, with
//!   its `id` when that is a string or an integer;
//! - a known method whose `params` do not fit is answered `-32602` (invalid params) with the reason, an unknown method
//!   `-32601` pointing to the tool methods;
//! - a line over [`MAX_LINE_BYTES`] is dropped and answered `-32600`, without an `id` (it was not read);
//! - notifications and responses are never answered, however malformed (JSON-RPC forbids it): they are skipped.
//!
//! Answers a client is owed are buffered before they are written, so that a receive cancelled half-way (rmcp polls
//! it beside its other work) loses none and tears none.

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorCode, ErrorData, InitializeRequestParams, JsonRpcMessage,
    PaginatedRequestParams, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read as a message (16 MiB, rmcp's own bound); a longer one is dropped and answered.
pub(super) const MAX_LINE_BYTES: usize = 16 << 20;

/// A line-delimited JSON-RPC transport over `R` (the client's messages) and `W` (the server's).
pub(super) struct LineTransport<R, W> {
    input: BufReader<R>,
    /// The line being read; kept across a cancelled receive, which resumes it.
    line: Vec<u8>,
    /// Skipping the rest of an overlong line, already answered.
    skipping: bool,
    output: Arc<Mutex<Output<W>>>,
    /// An answer to a malformed line, kept here until it is in the output buffer.
    owed: Option<Vec<u8>>,
    /// Whether the output buffer holds an answer of ours not yet written out.
    flush_owed: bool,
}

/// The server's side of the pipe, with the bytes not yet written.
struct Output<W> {
    sink: W,
    unwritten: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes out everything buffered. Cancellation-safe: what a cancelled call did not write stays buffered, and
    /// the next call writes it first.
    async fn write_out(&mut self) -> io::Result<()> {
        while !self.unwritten.is_empty() {
            let written = self.sink.write(&self.unwritten).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.unwritten.drain(..written);
        }
        self.sink.flush().await
    }

    /// Adds one encoded message to what is to be written.
    fn push(&mut self, bytes: &[u8]) {
        self.unwritten.extend_from_slice(bytes);
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    /// A transport reading the client's messages from `input` and writing the server's to `output`.
    pub fn new(input: R, output: W) -> Self {
        LineTransport {
            input: BufReader::new(input),
            line: Vec::new(),
            skipping: false,
            output: Arc::new(Mutex::new(Output { sink: output, unwritten: Vec::new() })),
            owed: None,
            flush_owed: false,
        }
    }

    /// Puts an owed answer in the output buffer and writes it out; `false` when the client's side is gone.
    async fn answer_owed(&mut self) -> bool {
        if self.owed.is_none() && !self.flush_owed {
            return true;
        }
        let mut output = self.output.lock().await;
        if let Some(bytes) = self.owed.take() {
            output.push(&bytes);
            self.flush_owed = true;
        }
        if self.flush_owed {
            if output.write_out().await.is_err() {
                return false;
            }
            self.flush_owed = false;
        }
        true
    }

    /// Reads up to the next line feed into `self.line`, never holding more than [`MAX_LINE_BYTES`] of it.
    /// Cancellation-safe: bytes taken from the reader are in `self.line` (or skipped) before the next await.
    async fn read_line(&mut self) -> io::Result<LineRead> {
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                return Ok(LineRead::End);
            }
            let end = memchr::memchr(b'\n', available);
            let taken = end.map_or(available.len(), |at| at + 1);
            let overlong = !self.skipping && self.line.len() + taken > MAX_LINE_BYTES;
            if !self.skipping && !overlong {
                self.line.extend_from_slice(&available[..taken]);
            }
            self.input.consume(taken);
            if overlong {
                self.line = Vec::new();
                self.skipping = end.is_none();
                return Ok(LineRead::Overlong);
            }
            if end.is_some() {
                if std::mem::take(&mut self.skipping) {
                    continue;
                }
                return Ok(LineRead::Line);
            }
        }
    }
}

/// What one [`LineTransport::read_line`] found.
enum LineRead {
    Line,
    Overlong,
    End,
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let output = self.output.clone();
        async move {
            let mut output = output.lock().await;
            // Encoded straight into the output buffer, whose capacity stays from one answer to the next.
            let start = output.unwritten.len();
            if let Err(e) = serde_json::to_writer(&mut output.unwritten, &item) {
                // Nothing of a message that could not be encoded goes out.
                output.unwritten.truncate(start);
                return Err(io::Error::other(e));
            }
            output.unwritten.push(b'\n');
            output.write_out().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.answer_owed().await {
                return None;
            }
            match self.read_line().await {
                Ok(LineRead::Line) => {}
                Ok(LineRead::Overlong) => {
                    let why = format!("a message longer than {} MiB was dropped", MAX_LINE_BYTES >> 20);
                    eprintln!("agent-read: {why} unread");
                    self.owed = encode(&error(ErrorCode::INVALID_REQUEST, why, None)).ok();
                    continue;
                }
                Ok(LineRead::End) => return None,
                Err(e) => {
                    eprintln!("agent-read: reading standard input failed ({e}); stopping");
                    return None;
                }
            }
            let decoded = decode(&self.line);
            self.line.clear();
            match decoded {
                Decoded::Message(message) => return Some(message),
                Decoded::Answer(answer) => self.owed = encode(&answer).ok(),
                Decoded::Skipped => {}
            }
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        let mut output = self.output.lock().await;
        output.write_out().await?;
        output.sink.shutdown().await
    }
}

/// One message as a line: its JSON and a line feed.
fn encode(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// What a line held.
#[derive(Debug)]
pub(super) enum Decoded {
    /// A message for the service.
    Message(RxJsonRpcMessage<RoleServer>),
    /// An error the client is owed in place of a message.
    Answer(TxJsonRpcMessage<RoleServer>),
    /// Nothing to pass on or answer: a blank line, or a malformed notification or response.
    Skipped,
}

/// Reads one line (its line feed and a carriage return before it allowed, a UTF-8 byte-order mark too).
pub(super) fn decode(line: &[u8]) -> Decoded {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skipped;
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(JsonRpcMessage::Request(request)) => match &request.request {
            ClientRequest::CustomRequest(custom) => {
                Decoded::Answer(unfit_method(&custom.method, custom.params.as_ref(), request.id))
            }
            _ => Decoded::Message(JsonRpcMessage::Request(request)),
        },
        Ok(message) => Decoded::Message(message),
        Err(why) => diagnose(line, &why),
    }
}

/// The answer to a request rmcp could not match to a method it knows: a known method whose params do not fit it
/// (rmcp would call the method unknown), or an unknown method.
fn unfit_method(method: &str, params: Option<&Value>, id: RequestId) -> TxJsonRpcMessage<RoleServer> {
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
        _ => {
            let message = format!("method `{method}` not found; this server serves tools: tools/list, tools/call");
            return error(ErrorCode::METHOD_NOT_FOUND, message, Some(id));
        }
    };
    let why = match why {
        _ if params_missing => "`params` is missing".to_string(),
        Some(e) => e.to_string(),
        None => "they do not fit it".to_string(),
    };
    let message = format!("invalid params for `{method}`: {why}; send e.g. {example}");
    error(ErrorCode::INVALID_PARAMS, message, Some(id))
}

/// The answer owed for a line that is not a valid message, if any.
fn diagnose(line: &[u8], why: &serde_json::Error) -> Decoded {
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(_) if std::str::from_utf8(line).is_err() => {
            // The id may still be readable from the rest of the line.
            let id = serde_json::from_str::<Value>(&String::from_utf8_lossy(line)).ok().and_then(|v| readable_id(&v));
            let message = "parse error: the line is not UTF-8; send each message as UTF-8 JSON on one line";
            return Decoded::Answer(error(ErrorCode::PARSE_ERROR, message.to_string(), id));
        }
        Err(e) => {
            let message =
                format!("parse error: the line is not valid JSON ({e}); send each message as JSON on one line");
            return Decoded::Answer(error(ErrorCode::PARSE_ERROR, message, None));
        }
    };
    let Value::Object(fields) = &value else {
        let message = match value {
            Value::Array(_) => "invalid request: a batch (JSON array); send each message on a line of its own",
            _ => "invalid request: a message is a JSON object",
        };
        return Decoded::Answer(error(ErrorCode::INVALID_REQUEST, message.to_string(), None));
    };
    let is_request = fields.contains_key("id") && !fields.contains_key("result") && !fields.contains_key("error");
    if !is_request && (fields.contains_key("method") || fields.contains_key("result") || fields.contains_key("error")) {
        // A notification or a response: never answered, whatever is wrong with it.
        return Decoded::Skipped;
    }
    let id = readable_id(&value);
    let fault = if !fields.contains_key("id") {
        "no `method` and no `id`".to_string()
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
fn readable_id(message: &Value) -> Option<RequestId> {
    match message.get("id")? {
        Value::String(text) => Some(RequestId::String(text.as_str().into())),
        Value::Number(number) => number.as_i64().map(RequestId::Number),
        _ => None,
    }
}

/// An error answer.
fn error(code: ErrorCode, message: String, id: Option<RequestId>) -> TxJsonRpcMessage<RoleServer> {
    JsonRpcMessage::error(ErrorData::new(code, message, None), id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    /// The answer `decode` owes for `line`, as JSON.
    fn answer(line: &[u8]) -> Value {
        match decode(line) {
            Decoded::Answer(answer) => serde_json::to_value(answer).unwrap(),
            other => panic!("{} was not answered: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    fn code_id_message(answer: &Value) -> (i64, Value, String) {
        let message = answer["error"]["message"].as_str().unwrap().to_string();
        (answer["error"]["code"].as_i64().unwrap(), answer.get("id").cloned().unwrap_or(Value::Null), message)
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
            (br#"{"jsonrpc":"2.0","id":8,"method":"tools/call"}"#, -32602, json!(8), "`params` is missing"),
            (
                br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}"#,
                -32602,
                json!(9),
                "missing field `name`",
            ),
            (br#"{"jsonrpc":"2.0","id":10,"method":"files/write"}"#, -32601, json!(10), "`files/write` not found"),
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
            assert!(matches!(decode(line), Decoded::Message(_)), "{}", String::from_utf8_lossy(line));
        }
        for line in [
            &b""[..],
            b"  \t\r\n",
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#,
            br#"{"jsonrpc":"1.0","id":5,"result":"no"}"#,
            br#"{"jsonrpc":"2.0","id":6,"error":"no"}"#,
        ] {
            assert!(matches!(decode(line), Decoded::Skipped), "{}", String::from_utf8_lossy(line));
        }
    }

    type In = tokio::io::ReadHalf<tokio::io::DuplexStream>;
    type Out = tokio::io::WriteHalf<tokio::io::DuplexStream>;
    type Answers = tokio::io::Lines<tokio::io::BufReader<In>>;

    /// A transport on one end of an in-memory pipe, and the client's ends: its writer, and its reader of answers.
    fn connected() -> (LineTransport<In, Out>, Out, Answers) {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_in, server_out) = tokio::io::split(server);
        let (client_in, client_out) = tokio::io::split(client);
        (LineTransport::new(server_in, server_out), client_out, tokio::io::BufReader::new(client_in).lines())
    }

    async fn next_answer(answers: &mut Answers) -> Value {
        serde_json::from_str(&answers.next_line().await.unwrap().expect("an answer")).unwrap()
    }

    #[tokio::test]
    async fn a_malformed_line_is_answered_and_the_next_message_still_arrives() {
        let (mut transport, mut client, mut answers) = connected();
        client.write_all(b"{oops\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
        let message = transport.receive().await.expect("the ping");
        assert!(matches!(message, JsonRpcMessage::Request(request) if request.id == RequestId::Number(1)));
        assert_eq!(next_answer(&mut answers).await["error"]["code"], -32700);
        transport
            .send(JsonRpcMessage::error(ErrorData::internal_error("x", None), Some(RequestId::Number(1))))
            .await
            .unwrap();
        assert_eq!(next_answer(&mut answers).await["id"], 1);
    }

    #[tokio::test]
    async fn an_overlong_line_is_dropped_answered_and_reading_goes_on() {
        let (mut transport, mut client, mut answers) = connected();
        let writer = tokio::spawn(async move {
            let mut line = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
            line.resize(MAX_LINE_BYTES + 10, b'a');
            line.extend_from_slice(b"\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
            client.write_all(&line).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let message = transport.receive().await.expect("the second ping");
        assert!(matches!(message, JsonRpcMessage::Request(request) if request.id == RequestId::Number(2)));
        let (code, id, message) = code_id_message(&next_answer(&mut answers).await);
        assert_eq!((code, id), (-32600, Value::Null));
        assert!(message.contains("longer than 16 MiB"), "{message}");
        writer.await.unwrap();
        assert!(transport.receive().await.is_none(), "the client closed its side");
    }

    #[tokio::test]
    async fn a_receive_cancelled_mid_line_resumes_it() {
        let (mut transport, mut client, _answers) = connected();
        client.write_all(br#"{"jsonrpc":"2.0","id":7,"#).await.unwrap();
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), transport.receive()).await;
        assert!(waited.is_err(), "half a line is not a message");
        client.write_all(b"\"method\":\"ping\"}\n").await.unwrap();
        let message = transport.receive().await.expect("the whole line");
        assert!(matches!(message, JsonRpcMessage::Request(request) if request.id == RequestId::Number(7)));
    }
}
