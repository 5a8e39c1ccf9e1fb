//! The stdio transport: one JSON-RPC message per line in each direction, as MCP's stdio transport defines it.
//!
//! Ours rather than rmcp's so that no line a client sends goes unanswered when an answer is due: rmcp's transport
//! skips a line that is not JSON without a word, answers a malformed request without its `id` (so the client's
//! request never settles) and drops an overlong line silently. Here each line is read by [`malformed::decode`], and
//! a line over [`MAX_LINE_BYTES`] is dropped and answered `-32600`, without an `id` (it was not read).
//!
//! Answers a client is owed are buffered before they are written, so that a receive cancelled half-way (rmcp polls
//! it beside its other work) loses none and tears none.
//!
//! What the client is owed is bounded (see [`super::backlog`]): while too many requests (or bytes of them) await
//! their answers, or too many bytes of answers wait to be written, no further line is read.
//!
//! Once an answer cannot be written (the client closed its end of standard output), the transport ends as at the end
//! of its input: rmcp would otherwise log the failed answer and go on reading requests whose answers go nowhere, for
//! as long as the client keeps standard input open.

use super::backlog::Backlog;
use super::malformed::{self, Decoded, Framing};
use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, watch};

/// The longest line read as a message (16 MiB, rmcp's own bound); a longer one is dropped and answered.
pub(super) const MAX_LINE_BYTES: usize = 16 << 20;

/// The largest first guess of an answer's size (see [`LineTransport::last_answer_len`]): an image's answer is no
/// reason to give every answer after it megabytes.
const MAX_GUESSED_ANSWER: usize = 256 << 10;

/// A line-delimited JSON-RPC transport over `R` (the client's messages) and `W` (the server's).
pub(super) struct LineTransport<R, W> {
    input: BufReader<R>,
    /// The line being read; kept across a cancelled receive, which resumes it.
    line: Vec<u8>,
    /// Skipping the rest of an overlong line, already answered.
    skipping: bool,
    output: Arc<Mutex<Output<W>>>,
    /// Becomes `true` when an answer could not be written: the client can no longer hear the server.
    output_gone: watch::Receiver<bool>,
    /// An answer to a malformed line, kept here until it is in the output buffer.
    owed: Option<Vec<u8>>,
    /// Whether the output buffer holds an answer of ours not yet written out.
    flush_owed: bool,
    /// Whether the request that starts the lifecycle has been passed on: `initialize`, or (protocol 2026-07-28 and
    /// later, which has no `initialize`) the first call carrying its protocol version and client capabilities. Before
    /// it, rmcp takes any notification or response for a failed start and stops, so those are skipped.
    lifecycle_started: bool,
    /// What the client is owed; reading stops while it is too much.
    backlog: Backlog,
    /// The size of the last answer encoded, as the next one's first guess (spares growing its buffer step by step).
    last_answer_len: usize,
}

/// The server's side of the pipe, with the bytes not yet written.
struct Output<W> {
    sink: W,
    unwritten: Vec<u8>,
    /// Set when a write fails (see [`LineTransport::output_gone`]).
    gone: watch::Sender<bool>,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes out everything buffered. Cancellation-safe: what a cancelled call did not write stays buffered, and
    /// the next call writes it first. The first failure is logged and ends the transport's input.
    async fn write_out(&mut self) -> io::Result<()> {
        let written = self.try_write_out().await;
        if let Err(e) = &written
            && !self.gone.send_replace(true)
        {
            eprintln!(
                "agent-read: writing to standard output failed ({e}): the client cannot receive answers; stopping"
            );
        }
        written
    }

    /// [`Output::write_out`] without the bookkeeping of failures.
    async fn try_write_out(&mut self) -> io::Result<()> {
        while !self.unwritten.is_empty() {
            let written = self.sink.write(&self.unwritten).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.unwritten.drain(..written);
        }
        self.sink.flush().await?;
        Ok(())
    }

    /// Adds one encoded message to what is to be written.
    fn push(&mut self, bytes: &[u8]) {
        self.unwritten.extend_from_slice(bytes);
    }

    /// Adds one encoded message to what is to be written, taking its buffer when nothing else waits.
    fn push_owned(&mut self, bytes: Vec<u8>) {
        if self.unwritten.is_empty() {
            self.unwritten = bytes;
        } else {
            self.unwritten.extend_from_slice(&bytes);
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    /// A transport reading the client's messages from `input` and writing the server's to `output`.
    pub fn new(input: R, output: W) -> Self {
        let (gone, output_gone) = watch::channel(false);
        let output = Output { sink: output, unwritten: Vec::new(), gone };
        LineTransport {
            input: BufReader::new(input),
            line: Vec::new(),
            skipping: false,
            output: Arc::new(Mutex::new(output)),
            output_gone,
            owed: None,
            flush_owed: false,
            lifecycle_started: false,
            backlog: Backlog::default(),
            last_answer_len: 0,
        }
    }

    /// The same transport, keeping what the client is owed in `backlog` (shared with the server, which starts no
    /// read while answers wait to be written).
    pub fn with_backlog(self, backlog: Backlog) -> Self {
        LineTransport { backlog, ..self }
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
                // A last message without its line feed is still a message.
                let unfinished = !self.line.is_empty() && !std::mem::take(&mut self.skipping);
                return Ok(if unfinished { LineRead::Line } else { LineRead::End });
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

    /// Encodes the message at once, so that what waits to be written is counted in bytes (see [`Backlog`]), then
    /// writes it in turn.
    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        malformed::explain(&mut item);
        let answers = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let mut bytes = Vec::with_capacity(self.last_answer_len.min(MAX_GUESSED_ANSWER));
        let encoded = encode_into(&mut bytes, &item).map(|()| bytes);
        drop(item);
        self.last_answer_len = encoded.as_ref().map_or(0, Vec::len);
        let queued = self.backlog.queued(self.last_answer_len, answers);
        let output = self.output.clone();
        async move {
            let bytes = encoded?;
            let mut output = output.lock().await;
            output.push_owned(bytes);
            let written = output.write_out().await;
            drop(queued);
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.answer_owed().await {
                return None;
            }
            let mut output_gone = self.output_gone.clone();
            // Backpressure: while the client is owed too much, its next request stays in the pipe.
            tokio::select! {
                biased;
                _ = output_gone.wait_for(|gone| *gone) => return None,
                () = self.backlog.room_for_requests() => {}
            }
            let read = tokio::select! {
                biased;
                _ = output_gone.wait_for(|gone| *gone) => return None,
                read = self.read_line() => read,
            };
            match read {
                Ok(LineRead::Line) => {}
                Ok(LineRead::Overlong) => {
                    let why = format!("a message longer than {} MiB was dropped", MAX_LINE_BYTES >> 20);
                    eprintln!("agent-read: {why} unread");
                    let answer = JsonRpcMessage::error(ErrorData::new(ErrorCode::INVALID_REQUEST, why, None), None);
                    self.owed = encode(&answer).ok();
                    continue;
                }
                Ok(LineRead::End) => return None,
                Err(e) => {
                    eprintln!("agent-read: reading standard input failed ({e}); stopping");
                    return None;
                }
            }
            let decoded = malformed::decode(&self.line, Framing::Line);
            let received = self.line.len();
            self.line.clear();
            match decoded {
                Decoded::Message(JsonRpcMessage::Request(request)) => {
                    self.backlog.taken(request.id.clone(), received);
                    // Checked until serving starts only: the check reads the request's `_meta`.
                    if !self.lifecycle_started {
                        self.lifecycle_started = starts_lifecycle(&request.request);
                    }
                    return Some(JsonRpcMessage::Request(request));
                }
                Decoded::Message(message) if self.lifecycle_started => {
                    if let Some(id) = cancelled_request(&message) {
                        // rmcp drops the answer to a cancelled request: nothing more is owed for it.
                        self.backlog.settled(id);
                    }
                    return Some(message);
                }
                Decoded::Message(_) => {}
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

/// Whether rmcp starts serving at `request`, as it does (`serve_server`): at `initialize`, or at the first request
/// other than `ping` and `server/discover` whose `_meta` names a protocol version it speaks and the client's
/// capabilities. Anything else before it is answered and leaves the start pending.
fn starts_lifecycle(request: &ClientRequest) -> bool {
    use rmcp::model::{GetMeta, ProtocolVersion};
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            let complete = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty();
            complete
                && meta.protocol_version().is_some_and(|version| ProtocolVersion::KNOWN_VERSIONS.contains(&version))
        }
    }
}

/// The request a client's `notifications/cancelled` cancels, if `message` is one.
fn cancelled_request(message: &RxJsonRpcMessage<RoleServer>) -> Option<&rmcp::model::RequestId> {
    match message {
        JsonRpcMessage::Notification(notification) => match &notification.notification {
            rmcp::model::ClientNotification::CancelledNotification(cancelled) => cancelled.params.request_id.as_ref(),
            _ => None,
        },
        _ => None,
    }
}

/// One message as a line: its JSON and a line feed.
fn encode(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    encode_into(&mut bytes, message)?;
    Ok(bytes)
}

/// Appends one message as a line to `buffer`; on failure, `buffer` is as it was, so nothing of a message that could
/// not be encoded goes out.
///
/// `sonic_rs` writes the same JSON as `serde_json` (the same serde calls, compact, keys in order) and escapes strings
/// a vector at a time, which is most of an answer's encoding: a file's text travels twice in it. Where it refuses a
/// value that `serde_json` takes (a float that is not finite, which `serde_json` writes as `null`), `serde_json`
/// encodes the message instead.
fn encode_into(buffer: &mut Vec<u8>, message: &TxJsonRpcMessage<RoleServer>) -> io::Result<()> {
    let start = buffer.len();
    if sonic_rs::to_writer(&mut *buffer, message).is_err() {
        buffer.truncate(start);
        if let Err(e) = serde_json::to_writer(&mut *buffer, message) {
            buffer.truncate(start);
            return Err(io::Error::other(e));
        }
    }
    buffer.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CallToolResult, ContentBlock, Notification, NumberOrString, ProgressNotificationParam, ProgressToken,
        RequestId, ServerNotification, ServerResult,
    };
    use serde_json::Value;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    type In = tokio::io::ReadHalf<tokio::io::DuplexStream>;
    type Out = tokio::io::WriteHalf<tokio::io::DuplexStream>;
    type Answers = tokio::io::Lines<tokio::io::BufReader<In>>;

    /// A transport on one end of an in-memory pipe, and the client's ends: its writer, and its reader of answers.
    fn connected() -> (LineTransport<In, Out>, Out, Answers) {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_in, server_out) = tokio::io::split(server);
        let (client_in, client_out) = tokio::io::split(client);
        let transport = LineTransport::new(server_in, server_out);
        (transport, client_out, tokio::io::BufReader::new(client_in).lines())
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
        let answer = next_answer(&mut answers).await;
        assert_eq!((&answer["error"]["code"], answer.get("id")), (&Value::from(-32600), None));
        let message = answer["error"]["message"].as_str().unwrap();
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

    #[tokio::test]
    async fn a_last_message_without_its_line_feed_is_still_read() {
        let (mut transport, mut client, _answers) = connected();
        client.write_all(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).await.unwrap();
        client.shutdown().await.unwrap();
        let message = transport.receive().await.expect("the unfinished line");
        assert!(matches!(message, JsonRpcMessage::Request(request) if request.id == RequestId::Number(9)));
        assert!(transport.receive().await.is_none());
    }

    #[tokio::test]
    async fn an_answer_that_cannot_be_written_ends_the_input_though_the_client_keeps_it_open() {
        // Two pipes, so that the client can close the one it reads answers from and keep the one it writes on.
        let (mut client_out, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::new(server_in, server_out);
        client_out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
        transport.receive().await.expect("the ping");
        drop(client_in);
        let answer = transport.send(JsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1)));
        let waited = std::time::Duration::from_secs(10);
        let (received, sent) = tokio::join!(tokio::time::timeout(waited, transport.receive()), answer);
        assert!(sent.is_err(), "nobody reads the answer");
        assert!(received.expect("the receive ends, not waits on the open input").is_none());
        client_out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n").await.unwrap();
        let later = tokio::time::timeout(waited, transport.receive()).await;
        assert!(later.expect("a later receive ends too").is_none(), "no request is taken once answers cannot go out");
    }

    /// A tool's answer holding `text` twice, as the read tool's answers do.
    fn answer_with(text: &str) -> TxJsonRpcMessage<RoleServer> {
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(serde_json::json!({"output": text, "size": u64::MAX, "ratio": 0.25}));
        JsonRpcMessage::response(ServerResult::CallToolResult(result), RequestId::Number(i64::MIN))
    }

    proptest::proptest! {
        #[test]
        fn an_answer_is_encoded_exactly_as_serde_json_encodes_it(text in "\\PC*|[\\x00-\\x7F]*") {
            let message = answer_with(&text);
            let mut encoded = Vec::new();
            encode_into(&mut encoded, &message).unwrap();
            let mut expected = serde_json::to_vec(&message).unwrap();
            expected.push(b'\n');
            proptest::prop_assert_eq!(encoded, expected);
        }
    }

    #[test]
    fn a_text_with_every_kind_of_escape_is_encoded_as_serde_json_encodes_it() {
        let text = "quote \" backslash \\ controls \u{0}\u{1f}\u{7f} line\nfeed\ttab \u{2028} é 😀 </script>";
        let mut encoded = Vec::new();
        encode_into(&mut encoded, &answer_with(text)).unwrap();
        assert_eq!(encoded, [serde_json::to_vec(&answer_with(text)).unwrap(), b"\n".to_vec()].concat());
    }

    #[test]
    fn a_float_that_is_not_finite_is_encoded_as_serde_json_encodes_it() {
        let progress = ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(1)), f64::NAN);
        let message =
            JsonRpcMessage::notification(ServerNotification::ProgressNotification(Notification::new(progress)));
        let mut encoded = b"kept".to_vec();
        encode_into(&mut encoded, &message).unwrap();
        let line: Value = serde_json::from_slice(&encoded[4..]).unwrap();
        assert_eq!((&encoded[..4], &line["params"]["progress"]), (&b"kept"[..], &Value::Null));
    }

    #[tokio::test]
    async fn on_protocol_2026_07_28_notifications_pass_once_a_call_with_its_version_and_capabilities_has() {
        let (mut transport, mut client, _answers) = connected();
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let lines = [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"_meta":{meta}}}}}"#),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{"_meta":{meta}}}}}"#),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#.to_string(),
        ];
        client.write_all(format!("{}\n", lines.join("\n")).as_bytes()).await.unwrap();
        let ids: Vec<RequestId> = [1, 2, 3].map(RequestId::Number).to_vec();
        for id in ids {
            let message = transport.receive().await.expect("a request");
            assert!(matches!(message, JsonRpcMessage::Request(request) if request.id == id));
        }
        // The discover and the call without capabilities start nothing: their notifications were skipped.
        let message = transport.receive().await.expect("the notification after the call that starts serving");
        let JsonRpcMessage::Notification(notification) = message else { panic!("not a notification: {message:?}") };
        let json = serde_json::to_value(&notification).unwrap();
        assert_eq!(json["params"]["requestId"], 3, "{json}");
    }

    #[tokio::test]
    async fn notifications_and_responses_before_initialize_are_skipped() {
        let (mut transport, mut client, _answers) = connected();
        let lines = [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ];
        client.write_all(format!("{}\n", lines.join("\n")).as_bytes()).await.unwrap();
        let first = transport.receive().await.expect("initialize");
        assert!(matches!(first, JsonRpcMessage::Request(request) if request.id == RequestId::Number(1)));
        let second = transport.receive().await.expect("the notification after initialize");
        assert!(matches!(second, JsonRpcMessage::Notification(_)));
    }
}
