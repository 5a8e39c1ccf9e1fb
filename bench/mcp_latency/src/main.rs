//! MCP latency measured with as little client as possible, over stdio and over streamable HTTP. The Python load client
//! (bench/mcp_load.py) adds 70–100 µs of its own to every request, and under a burst its own CPU competes with the
//! server's on a two-core machine; this one adds about 12 µs of CPU per burst read over stdio, 25–45 over HTTP (most of
//! it the kernel's TCP work, which any client pays; `client_burst_cpu_us` in the raw figures), so what remains is the
//! servers.
//!
//! Three phases per server and repetition:
//! - `ping`: sequential pings, the protocol floor (no file is touched);
//! - `read`: sequential reads: one blocking write of a request, one blocking read of its answer;
//! - `burst`: BURST reads in flight at once. A writer thread writes them back to back (noting when each went out)
//!   while this thread takes the answers as they come, in any order; a request's latency runs from its write to its
//!   answer's arrival, as in bench/mcp_load.py's `conc` phase.
//!
//! With IDLE_BEFORE=SECONDS in the environment, each repetition begins with every server idle that long, and each
//! server's phases begin with one more burst, timed as `burst after idle`: what a burst costs a server that has just
//! been quiet (a server may give memory back or let its threads exit while quiet, and pay for them again in the next
//! burst). The `burst` phase then follows within the same busy period, so it is the burst of a server under load.
//!
//! With THINK_MS=LO-HI, each sequential call (ping and read) waits a pause of LO to HI milliseconds after the answer
//! before it, as a model's turn would (the pause is not timed); BURST=0 leaves the bursts out. With RSS_AFTER=SECONDS,
//! each server's resident memory is shown after the last repetition and that many seconds quiet.
//!
//! Stdio servers get newline-delimited JSON-RPC on their standard input, the burst all on the one pipe.
//!
//! HTTP servers (streamable HTTP, `POST /mcp` on 127.0.0.1, HTTP/1.1): the client starts the process, waits until the
//! port accepts connections, then sends `initialize` and `notifications/initialized`. Session mode or stateless is the
//! server's choice: when the answer to `initialize` carries an `Mcp-Session-Id`, every later request carries it (and
//! every request after `initialize` carries `MCP-Protocol-Version`). Pings and sequential reads go one after another
//! on one keep-alive connection; for a burst, BURST connections are opened before the phase (in session mode all on
//! the one session), then one POST is written on each, back to back, and the connections are closed after it. An
//! answer is a JSON body or an SSE stream (Content-Length, chunked, or up to the connection's end); a request is timed
//! to its whole JSON body, or to the SSE event carrying its response. The server's CPU is read from /proc as for the
//! stdio servers, over the timed part only (not while the burst's connections open).
//!
//! All servers run side by side for the whole run, on the same files, the order rotating every repetition. Every read
//! answer is checked after its time is taken: a result, not `isError`, and the file's content (Node: the text equals
//! the file; agent-read: `meta.total_lines` equals the file's line count). Any other answer, or none (an HTTP error
//! status, a connection lost, no answer to a burst read within 300 s), counts as an error; the first few are shown.
//!
//! Usage: mcp-latency FILES_DIR N REPS [BURST] -- SERVER [-- SERVER]...
//!   where SERVER is `NAME TOOL CMD ARGS...` (stdio) or `NAME TOOL --http PORT CMD ARGS...` (HTTP: the command must
//!   listen on 127.0.0.1:PORT; PORT `auto` picks a free one, and `{port}` anywhere in ARGS is replaced by the port).
//!   `NAME TOOL --protocol 2026-07-28 [--http PORT] CMD ARGS...` speaks that protocol: `server/discover` instead of
//!   `initialize`, and every request carries its version and capabilities in `_meta` (over HTTP also in headers).
//!   `NAME TOOL --ref ...` makes that server the reference of the ratios for the servers on its transport (stdio or
//!   HTTP); a row with no reference on its transport is set against the last server.
//! Prints a markdown table of medians with those ratios; raw figures per repetition go to standard error as JSON
//! lines.

use mio::{Events, Interest, Poll, Token};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const PROTOCOL_VERSION: &str = "2025-11-25";
/// How long a burst's reads may stay unanswered before they count as errors.
const BURST_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a sequential HTTP call may wait for its answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an HTTP server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Errors shown per server (all are counted).
const ERRORS_SHOWN: u64 = 5;

/// One server under test: a long-lived child process.
struct Server {
    name: String,
    tool: String,
    child: Child,
    transport: Transport,
    next_id: u64,
    errors: u64,
    /// The `_meta` every request carries on a protocol without `initialize` (`--protocol 2026-07-28`).
    meta: Option<Value>,
    /// Whether the ratios of the servers on this one's transport are taken against it (`--ref`).
    reference: bool,
}

enum Transport {
    /// Newline-delimited JSON-RPC on the child's standard input and output.
    Stdio { input: BufWriter<ChildStdin>, output: BufReader<ChildStdout> },
    /// Streamable HTTP.
    Http(Http),
}

/// What a burst brought back.
struct BurstOutcome {
    /// Per request, in order: its latency (µs) and answer, or why there is none.
    answers: Vec<Result<(f64, Value), String>>,
    /// From the first write to the last answer, in seconds.
    span: f64,
    /// The server's CPU time over the same span, in seconds.
    cpu: f64,
    /// This client's, over the same span (both threads).
    client_cpu: f64,
}

impl Server {
    /// `stdio` or `HTTP`.
    fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http(_) => "HTTP",
        }
    }

    fn start(name: &str, tool: &str, spec: &[String]) -> Result<Server, String> {
        let (reference, spec) = match spec {
            [flag, rest @ ..] if flag == "--ref" => (true, rest),
            _ => (false, spec),
        };
        let (protocol, spec) = match spec {
            [flag, version, rest @ ..] if flag == "--protocol" => (Some(version.clone()), rest),
            _ => (None, spec),
        };
        let (port, command) = match spec {
            [flag, port, command @ ..] if flag == "--http" => (Some(port.as_str()), command),
            _ => (None, spec),
        };
        let (program, args) = command.split_first().ok_or(format!("{name}: no command"))?;
        let mut process = Command::new(program);
        process.stderr(Stdio::null());
        let address = match port {
            None => {
                process.args(args).stdin(Stdio::piped()).stdout(Stdio::piped());
                None
            }
            Some(port) => {
                let port = if port == "auto" {
                    free_port()?
                } else {
                    port.parse().map_err(|_| format!("{name}: --http expects a port or `auto`, not `{port}`"))?
                };
                let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
                if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                    return Err(format!("{name}: something already listens on {address}"));
                }
                process.args(args.iter().map(|a| a.replace("{port}", &port.to_string())));
                process.stdin(Stdio::null()).stdout(Stdio::null());
                Some(address)
            }
        };
        let mut child = process.spawn().map_err(|e| format!("{name}: cannot start {program}: {e}"))?;
        let transport = match address {
            None => Transport::Stdio {
                input: BufWriter::new(child.stdin.take().ok_or("no stdin")?),
                output: BufReader::new(child.stdout.take().ok_or("no stdout")?),
            },
            Some(address) => Transport::Http(Http::new(address)),
        };
        // From here on, dropping the server kills the child.
        let meta = protocol.as_ref().map(|version| {
            json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {},
                   "io.modelcontextprotocol/clientInfo": {"name": "mcp-latency", "version": "1"}})
        });
        let mut server = Server {
            name: name.into(),
            tool: tool.into(),
            child,
            transport,
            next_id: 0,
            errors: 0,
            meta: meta.clone(),
            reference,
        };
        if let Some(address) = address {
            server.wait_until_listening(address)?;
        }
        if let Some(version) = protocol {
            // No `initialize`: `server/discover`, then every request carries its version and capabilities (and over
            // HTTP the headers that repeat them: MCP-Protocol-Version, Mcp-Method, Mcp-Name).
            if let Transport::Http(http) = &mut server.transport {
                http.version = Some(version.clone());
                http.standard_headers = true;
            }
            let (answer, _) = server.call("server/discover", json!({}))?;
            let supported = answer["result"]["supportedVersions"].as_array().cloned().unwrap_or_default();
            if !supported.contains(&json!(version)) {
                return Err(format!("{name}: server/discover does not offer {version}: {answer}"));
            }
            return Ok(server);
        }
        let init = json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                          "clientInfo": {"name": "mcp-latency", "version": "1"}});
        let (answer, _) = server.call("initialize", init)?;
        let Some(result) = answer.get("result") else {
            return Err(format!("{name}: initialize failed: {answer}"));
        };
        if let Transport::Http(http) = &mut server.transport {
            http.version = Some(result["protocolVersion"].as_str().unwrap_or(PROTOCOL_VERSION).to_string());
        }
        server.notify("notifications/initialized")?;
        Ok(server)
    }

    fn wait_until_listening(&mut self, address: SocketAddr) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{}: exited ({status}) before listening on {address}", self.name));
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!("{}: not listening on {address} after {START_TIMEOUT:?}", self.name));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `params` with the request's `_meta`, when the protocol wants one.
    fn with_meta(&self, mut params: Value) -> Value {
        if let (Some(meta), Some(object)) = (&self.meta, params.as_object_mut()) {
            object.insert("_meta".into(), meta.clone());
        }
        params
    }

    fn notify(&mut self, method: &str) -> Result<(), String> {
        let message = json!({"jsonrpc": "2.0", "method": method}).to_string();
        let name = &self.name;
        match &mut self.transport {
            Transport::Stdio { input, .. } => input
                .write_all(message.as_bytes())
                .and_then(|()| input.write_all(b"\n"))
                .and_then(|()| input.flush())
                .map_err(|e| format!("{name}: {e}")),
            Transport::Http(http) => {
                let (_, reply) = http.exchange(message.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
                match reply.status {
                    200..=299 => Ok(()),
                    status => Err(format!("{name}: {method}: HTTP {status}: {}", snippet(&reply.body))),
                }
            }
        }
    }

    /// Sends one request and waits for its answer; returns the answer and the round trip in microseconds. An HTTP
    /// answer without the response (an error status...) comes back as `{"error": why}`, to be counted by the caller.
    fn call(&mut self, method: &str, params: Value) -> Result<(Value, f64), String> {
        self.next_id += 1;
        let id = self.next_id;
        let params = self.with_meta(params);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let name = &self.name;
        match &mut self.transport {
            Transport::Stdio { input, output } => {
                let marker = format!("\"id\":{id}");
                let mut line = String::new();
                let started = Instant::now();
                input
                    .write_all(request.as_bytes())
                    .and_then(|()| input.write_all(b"\n"))
                    .and_then(|()| input.flush())
                    .map_err(|e| format!("{name}: {e}"))?;
                loop {
                    line.clear();
                    if output.read_line(&mut line).map_err(|e| format!("{name}: {e}"))? == 0 {
                        return Err(format!("{name}: the server closed its output"));
                    }
                    if line.contains(&marker) {
                        break;
                    }
                }
                let micros = started.elapsed().as_secs_f64() * 1e6;
                let answer: Value = serde_json::from_str(&line).map_err(|e| format!("{name}: bad JSON: {e}"))?;
                if answer.get("id") != Some(&json!(id)) {
                    return Err(format!("{name}: answer to another request: {line}"));
                }
                Ok((answer, micros))
            }
            Transport::Http(http) => {
                let (sent, reply) = http.exchange(request.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
                if http.session.is_none() {
                    http.session = reply.session.clone();
                }
                match reply.answer(id) {
                    Ok((at, answer)) => Ok((answer, micros(sent, at))),
                    Err(why) => Ok((json!({ "error": why }), micros(sent, reply.done.unwrap_or(sent)))),
                }
            }
        }
    }

    /// Counts an error, and shows the first few.
    fn error(&mut self, why: &str) {
        self.errors += 1;
        if self.errors <= ERRORS_SHOWN {
            eprintln!("mcp-latency: {}: error: {why}", self.name);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn micros(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1e6
}

/// A port on 127.0.0.1 that nothing listens on now.
fn free_port() -> Result<u16, String> {
    for _ in 0..100 {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("cannot pick a free port: {e}"))?
            .port();
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            return Ok(port);
        }
    }
    Err("cannot pick a free port".into())
}

/// The first bytes of a body, for a message.
fn snippet(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// A streamable HTTP server at `http://ADDRESS/mcp`.
struct Http {
    address: SocketAddr,
    /// The keep-alive connection of sequential calls, and the bytes read from it and not yet parsed.
    connection: Option<TcpStream>,
    buffer: Vec<u8>,
    /// The session the server gave on `initialize` (none when stateless).
    session: Option<String>,
    /// The protocol version agreed on `initialize`, sent with every later request.
    version: Option<String>,
    /// Whether every request repeats its method (and a call its tool) in headers (SEP-2243, protocol 2026-07-28).
    standard_headers: bool,
}

impl Http {
    fn new(address: SocketAddr) -> Http {
        Http { address, connection: None, buffer: Vec::new(), session: None, version: None, standard_headers: false }
    }

    /// The bytes of a POST carrying `body`.
    fn request(&self, body: &[u8]) -> Vec<u8> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.address,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        if let Some(version) = &self.version {
            head.push_str(&format!("MCP-Protocol-Version: {version}\r\n"));
        }
        if self.standard_headers {
            let message: Value = serde_json::from_slice(body).unwrap_or_default();
            if let Some(method) = message["method"].as_str() {
                head.push_str(&format!("Mcp-Method: {method}\r\n"));
            }
            if let Some(name) = message["params"]["name"].as_str() {
                head.push_str(&format!("Mcp-Name: {name}\r\n"));
            }
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }

    fn connect(&self) -> Result<TcpStream, String> {
        let stream =
            TcpStream::connect(self.address).map_err(|e| format!("cannot connect to {}: {e}", self.address))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(stream)
    }

    /// One request on the keep-alive connection; returns when it was written and its whole reply. When the
    /// connection ends before any byte of an answer (the server closed it while idle), the request is sent again once
    /// on a new connection.
    fn exchange(&mut self, body: &[u8]) -> Result<(Instant, Reply), String> {
        let request = self.request(body);
        let mut last_error = String::new();
        for _ in 0..2 {
            if self.connection.is_none() {
                let stream = self.connect()?;
                stream.set_read_timeout(Some(CALL_TIMEOUT)).map_err(|e| e.to_string())?;
                self.connection = Some(stream);
            }
            let stream = self.connection.as_mut().expect("just opened");
            match exchange_on(stream, &mut self.buffer, &request) {
                Ok((sent, reply)) => {
                    if reply.close {
                        self.connection = None;
                    }
                    return Ok((sent, reply));
                }
                Err((retry, why)) => {
                    self.connection = None;
                    last_error = why;
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(last_error)
    }

    /// Opens one connection per request, then writes each request on its own connection, back to back (in another
    /// thread), while this thread takes the replies as they come.
    fn burst(&self, bodies: &[String], first_id: u64, pid: u32) -> Result<BurstOutcome, String> {
        let n = bodies.len();
        let requests: Vec<Vec<u8>> = bodies.iter().map(|body| self.request(body.as_bytes())).collect();
        let mut poll = Poll::new().map_err(|e| format!("cannot poll: {e}"))?;
        let mut connections = Vec::with_capacity(n);
        for i in 0..n {
            let stream = self.connect().map_err(|e| format!("connection {} of {n}: {e}", i + 1))?;
            stream.set_nonblocking(true).map_err(|e| e.to_string())?;
            let mut stream = mio::net::TcpStream::from_std(stream);
            poll.registry().register(&mut stream, Token(i), Interest::READABLE).map_err(|e| format!("poll: {e}"))?;
            connections.push(stream);
        }
        let (cpu, client_cpu) = (cpu_seconds(pid)?, own_cpu_seconds());
        let (written, replies) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                let mut sent = Vec::with_capacity(n);
                let mut failed = Vec::new();
                for (i, (connection, request)) in connections.iter().zip(&requests).enumerate() {
                    sent.push(Instant::now());
                    if let Err(e) = write_all_nonblocking(connection, request) {
                        // The reader then sees the connection end, and stops waiting for its answer.
                        let _ = connection.shutdown(Shutdown::Both);
                        failed.push((i, format!("cannot send: {e}")));
                    }
                }
                (sent, failed)
            });
            let replies = read_replies(&mut poll, &connections);
            (writer.join(), replies)
        });
        let (cpu, client_cpu) = (cpu_seconds(pid)? - cpu, own_cpu_seconds() - client_cpu);
        drop(connections);
        let (sent, failed) = written.map_err(|_| "the writer thread panicked")?;
        let mut last = sent[0];
        let mut answers: Vec<Result<(f64, Value), String>> = Vec::with_capacity(n);
        for (i, reply) in replies.into_iter().enumerate() {
            let answer = reply.and_then(|reply| reply.answer(first_id + i as u64));
            answers.push(answer.map(|(at, answer)| {
                last = last.max(at);
                (micros(sent[i], at), answer)
            }));
        }
        for (i, why) in failed {
            answers[i] = Err(why);
        }
        let span = last.duration_since(sent[0]).as_secs_f64();
        Ok(BurstOutcome { answers, span, cpu, client_cpu })
    }
}

/// One request and its reply on a blocking connection. On failure, says whether nothing of a reply came (so that the
/// request may be sent again) and why.
fn exchange_on(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    request: &[u8],
) -> Result<(Instant, Reply), (bool, String)> {
    let mut reply = Reply::default();
    let mut chunk = [0u8; 1 << 16];
    buffer.clear();
    let sent = Instant::now();
    stream.write_all(request).map_err(|e| (true, format!("cannot send: {e}")))?;
    let mut received = false;
    while reply.done.is_none() {
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err((!received, format!("no answer: {e}"))),
        };
        let at = Instant::now();
        received |= n > 0;
        reply.feed_more(buffer, &chunk[..n], at, n == 0).map_err(|why| (!received, why))?;
    }
    if !buffer.is_empty() {
        return Err((false, format!("bytes after the answer: {}", snippet(buffer))));
    }
    Ok((sent, reply))
}

fn write_all_nonblocking(mut connection: &mio::net::TcpStream, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match connection.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(k) => bytes = &bytes[k..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads every connection's reply as its bytes come, until all are whole, failed, or the time is up.
fn read_replies(poll: &mut Poll, connections: &[mio::net::TcpStream]) -> Vec<Result<Reply, String>> {
    let n = connections.len();
    let mut replies: Vec<Reply> = (0..n).map(|_| Reply::default()).collect();
    let mut failures: Vec<Option<String>> = vec![None; n];
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(); n];
    let mut scratch = vec![0u8; 1 << 16];
    let mut events = Events::with_capacity(1024);
    let mut open = n;
    let deadline = Instant::now() + BURST_TIMEOUT;
    while open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        if let Err(e) = poll.poll(&mut events, Some(left)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            for (reply, failure) in replies.iter().zip(&mut failures) {
                if reply.done.is_none() && failure.is_none() {
                    *failure = Some(format!("poll: {e}"));
                }
            }
            break;
        }
        for event in events.iter() {
            let i = event.token().0;
            if replies[i].done.is_some() || failures[i].is_some() {
                continue;
            }
            let ended = event.is_read_closed() || event.is_error();
            if let Err(why) = read_reply(&connections[i], ended, &mut scratch, &mut buffers[i], &mut replies[i]) {
                failures[i] = Some(why);
            }
            if replies[i].done.is_some() || failures[i].is_some() {
                open -= 1;
            }
        }
    }
    replies
        .into_iter()
        .zip(failures)
        .map(|(reply, failure)| match (failure, reply.done) {
            (Some(why), _) => Err(why),
            (None, Some(_)) => Ok(reply),
            (None, None) => Err(format!("no answer within {BURST_TIMEOUT:?}")),
        })
        .collect()
}

/// Reads what a non-blocking connection holds now into its reply (`pending`: bytes the reply could not take yet);
/// `ended`: the readiness event said the peer has closed (or the connection failed).
fn read_reply(
    mut connection: &mio::net::TcpStream,
    ended: bool,
    scratch: &mut [u8],
    pending: &mut Vec<u8>,
    reply: &mut Reply,
) -> Result<(), String> {
    let at = Instant::now();
    loop {
        match connection.read(scratch) {
            Ok(0) => return reply.feed_more(pending, &[], at, true),
            Ok(k) => {
                reply.feed_more(pending, &scratch[..k], at, false)?;
                // A short read emptied the socket: no need for the read that would say so, since epoll reports
                // every later arrival (and the end, unless the event already said so: then read on to see it).
                if reply.done.is_some() || (k < scratch.len() && !ended) {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("connection lost: {e}")),
        }
    }
}

/// How the rest of a response is delimited, as far as it has been read.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Framing {
    #[default]
    Head,
    Length(usize),
    ChunkSize,
    ChunkData(usize),
    ChunkEnd,
    Trailers,
    UntilClose,
    Done,
}

/// One HTTP/1.1 response, parsed as its bytes come. A JSON body is kept whole; an SSE body is cut into events as each
/// is complete, noting when.
#[derive(Default)]
struct Reply {
    framing: Framing,
    status: u16,
    session: Option<String>,
    sse: bool,
    close: bool,
    /// The body (JSON), or the part of an SSE stream after its last complete event (carriage returns dropped).
    body: Vec<u8>,
    /// The data of every SSE event with any, and when the event was complete.
    events: Vec<(Instant, Vec<u8>)>,
    /// When the last byte of the response came.
    done: Option<Instant>,
}

impl Reply {
    /// Takes `new` bytes (read at `at`; `eof`: the connection has ended), after the `pending` ones it could not take
    /// before, which keep what it still cannot.
    fn feed_more(&mut self, pending: &mut Vec<u8>, new: &[u8], at: Instant, eof: bool) -> Result<(), String> {
        if pending.is_empty() {
            let used = self.feed(new, at, eof)?;
            pending.extend_from_slice(&new[used..]);
        } else {
            pending.extend_from_slice(new);
            let used = self.feed(pending, at, eof)?;
            pending.drain(..used);
        }
        Ok(())
    }

    /// Takes what it can from the front of `input`; returns how many bytes it took.
    fn feed(&mut self, input: &[u8], at: Instant, eof: bool) -> Result<usize, String> {
        let mut pos = 0;
        while self.done.is_none() {
            let rest = &input[pos..];
            match self.framing {
                Framing::Head => {
                    let Some(end) = find(rest, b"\r\n\r\n") else { break };
                    self.head(&rest[..end], at)?;
                    pos += end + 4;
                }
                Framing::Length(left) => {
                    let take = left.min(rest.len());
                    if take == 0 {
                        break;
                    }
                    self.take(&rest[..take], at);
                    pos += take;
                    if take == left {
                        self.finish(at);
                    } else {
                        self.framing = Framing::Length(left - take);
                    }
                }
                Framing::ChunkSize => {
                    let Some(end) = find(rest, b"\r\n") else { break };
                    let line = String::from_utf8_lossy(&rest[..end]);
                    let digits = line.split(';').next().unwrap_or("").trim();
                    let size =
                        usize::from_str_radix(digits, 16).map_err(|_| format!("bad chunk size line `{line}`"))?;
                    pos += end + 2;
                    self.framing = if size == 0 { Framing::Trailers } else { Framing::ChunkData(size) };
                }
                Framing::ChunkData(left) => {
                    let take = left.min(rest.len());
                    if take == 0 {
                        break;
                    }
                    self.take(&rest[..take], at);
                    pos += take;
                    self.framing = if take == left { Framing::ChunkEnd } else { Framing::ChunkData(left - take) };
                }
                Framing::ChunkEnd => {
                    if rest.len() < 2 {
                        break;
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(format!("no CR LF after a chunk: {}", snippet(rest)));
                    }
                    pos += 2;
                    self.framing = Framing::ChunkSize;
                }
                Framing::Trailers => {
                    let Some(end) = find(rest, b"\r\n") else { break };
                    pos += end + 2;
                    if end == 0 {
                        self.finish(at);
                    }
                }
                Framing::UntilClose => {
                    self.take(rest, at);
                    pos = input.len();
                    break;
                }
                Framing::Done => break,
            }
        }
        if eof && self.done.is_none() {
            if self.framing != Framing::UntilClose {
                return Err(format!("the connection ended before the answer did ({:?})", self.framing));
            }
            self.finish(at);
        }
        Ok(pos)
    }

    fn head(&mut self, head: &[u8], at: Instant) -> Result<(), String> {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|status| status.parse().ok())
            .ok_or(format!("bad status line `{status_line}`"))?;
        if (100..200).contains(&status) {
            return Ok(()); // an interim response: the real head follows
        }
        self.status = status;
        let (mut length, mut chunked) = (None, false);
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().map_err(|_| format!("bad Content-Length `{value}`"))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.split(',').any(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
            } else if name.eq_ignore_ascii_case("content-type") {
                self.sse = value.get(..17).is_some_and(|kind| kind.eq_ignore_ascii_case("text/event-stream"));
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                self.session = Some(value.to_string());
            } else if name.eq_ignore_ascii_case("connection") {
                self.close = value.eq_ignore_ascii_case("close");
            }
        }
        self.framing = match length {
            _ if chunked => Framing::ChunkSize,
            Some(0) => Framing::Done,
            Some(length) => {
                self.body.reserve_exact(length);
                Framing::Length(length)
            }
            None if status == 204 || status == 304 => Framing::Done,
            None => Framing::UntilClose,
        };
        if self.framing == Framing::Done {
            self.finish(at);
        }
        Ok(())
    }

    fn take(&mut self, bytes: &[u8], at: Instant) {
        if !self.sse {
            self.body.extend_from_slice(bytes);
            return;
        }
        // Lines may end in LF or CR LF (a bare CR is not taken as a line end); JSON holds no raw CR.
        let mut from = self.body.len().saturating_sub(1); // an event's end may straddle two reads
        if memchr::memchr(b'\r', bytes).is_none() {
            self.body.extend_from_slice(bytes);
        } else {
            self.body.extend(bytes.iter().filter(|&&b| b != b'\r'));
        }
        while let Some(end) = find(&self.body[from..], b"\n\n") {
            self.event(from + end, at);
            from = 0;
        }
    }

    /// Takes the SSE event that ends at `end` in the body.
    fn event(&mut self, end: usize, at: Instant) {
        let event = &self.body[..end];
        let mut data = Vec::new();
        let mut start = 0;
        let mut lines = 0;
        for stop in memchr::memchr_iter(b'\n', event).chain([end]) {
            if let Some(value) = event[start..stop].strip_prefix(b"data:") {
                if lines > 0 {
                    data.push(b'\n');
                }
                lines += 1;
                data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
            }
            start = stop + 1;
        }
        self.body.drain(..(end + 2).min(self.body.len()));
        if data.iter().any(|b| !b.is_ascii_whitespace()) {
            self.events.push((at, data));
        }
    }

    fn finish(&mut self, at: Instant) {
        if self.sse && !self.body.is_empty() {
            self.event(self.body.len(), at); // a last event without its blank line
        }
        self.framing = Framing::Done;
        self.done = Some(at);
    }

    /// The JSON-RPC response to request `id`, and when it came: the whole JSON body, or the SSE event carrying it.
    fn answer(&self, id: u64) -> Result<(Instant, Value), String> {
        let content = if self.sse { "an event stream" } else { "JSON" };
        if !(200..300).contains(&self.status) {
            return Err(format!("HTTP {} ({content}): {}", self.status, snippet(&self.body)));
        }
        let done = self.done.ok_or("an incomplete answer")?;
        let parse = |at: Instant, data: &[u8]| -> Result<Option<(Instant, Value)>, String> {
            let message: Value = serde_json::from_slice(data)
                .map_err(|e| format!("bad JSON in the answer to {id}: {e}: {}", snippet(data)))?;
            let right = message.get("id") == Some(&json!(id)) && message.get("method").is_none();
            Ok(right.then_some((at, message)))
        };
        if self.sse {
            for (at, data) in &self.events {
                if let Some(found) = parse(*at, data)? {
                    return Ok(found);
                }
            }
        } else if let Some(found) = parse(done, &self.body)? {
            return Ok(found);
        }
        Err(format!(
            "HTTP {} ({content}, {} events) without the response to request {id}: {}",
            self.status,
            self.events.len(),
            snippet(self.events.first().map_or(&self.body, |(_, data)| data))
        ))
    }
}

/// A file the servers read, with what its answer must show.
struct File {
    path: PathBuf,
    content: String,
    lines: u64,
}

fn load_files(dir: &Path) -> Result<Vec<File>, String> {
    let mut paths = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).map_err(|e| format!("{}: {e}", next.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                pending.push(path)
            } else {
                paths.push(path)
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let content = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let lines = content.lines().count() as u64;
            Ok(File { path, content, lines })
        })
        .collect()
}

/// What is wrong with a read's answer, if anything: it must be a successful read showing the file.
fn read_problem(tool: &str, answer: &Value, file: &File) -> Option<String> {
    let path = file.path.display();
    if let Some(error) = answer.get("error") {
        return Some(format!("{path}: {error}"));
    }
    let result = &answer["result"];
    if result.get("isError") == Some(&json!(true)) {
        return Some(format!("{path}: isError: {}", result["content"]));
    }
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    if tool == "read_text_file" {
        return (text != file.content)
            .then(|| format!("{path}: {} chars, not the file's {}", text.len(), file.content.len()));
    }
    let total = &result["structuredContent"]["meta"]["total_lines"];
    (text.is_empty() || *total != json!(file.lines))
        .then(|| format!("{path}: total_lines {total}, not the file's {} (text of {} chars)", file.lines, text.len()))
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * fraction).round() as usize]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A model's turn between calls (THINK_MS=LO-HI in the environment, milliseconds): each sequential call waits a
/// pause drawn evenly from that range after the answer before it, not counted in its latency. `None` without it.
#[derive(Clone)]
struct Think {
    lo_ms: f64,
    hi_ms: f64,
    /// xorshift state: the same pauses in every run and for every server.
    state: u64,
}

impl Think {
    fn from_env() -> Result<Option<Think>, String> {
        let Ok(value) = std::env::var("THINK_MS") else { return Ok(None) };
        let bad = || format!("THINK_MS={value:?}: give a range of milliseconds, e.g. 1-5");
        let (lo, hi) = value.split_once('-').unwrap_or((&value, &value));
        let lo: f64 = lo.trim().parse().map_err(|_| bad())?;
        let hi: f64 = hi.trim().parse().map_err(|_| bad())?;
        if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi) {
            return Err(bad());
        }
        Ok(Some(Think { lo_ms: lo, hi_ms: hi, state: 0x9E37_79B9_7F4A_7C15 }))
    }

    /// Sleeps one pause.
    fn pause(&mut self) {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let unit = (self.state >> 11) as f64 / (1u64 << 53) as f64;
        std::thread::sleep(Duration::from_secs_f64((self.lo_ms + unit * (self.hi_ms - self.lo_ms)) / 1e3));
    }
}

/// Measures `n` calls of one kind, with a pause before each when `think` is given; returns (p50, p99).
fn phase(
    server: &mut Server,
    kind: &str,
    n: usize,
    files: &[File],
    mut think: Option<&mut Think>,
) -> Result<(f64, f64), String> {
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        if let Some(think) = think.as_deref_mut() {
            think.pause();
        }
        if kind == "ping" {
            let (answer, micros) = server.call("ping", json!({}))?;
            if answer.get("result").is_none() {
                server.error(&format!("ping answered {}", snippet(answer.to_string().as_bytes())));
            }
            latencies.push(micros);
        } else {
            let file = &files[i % files.len()];
            let params = json!({"name": server.tool, "arguments": {"path": file.path}});
            let (answer, micros) = server.call("tools/call", params)?;
            if let Some(why) = read_problem(&server.tool, &answer, file) {
                server.error(&why);
            }
            latencies.push(micros);
        }
    }
    latencies.sort_by(f64::total_cmp);
    Ok((percentile(&latencies, 0.5), percentile(&latencies, 0.99)))
}

/// Sends `n` reads at once and waits for every answer; returns (p50, p99, reads per second, CPU seconds of the
/// server, and of this client).
fn burst(server: &mut Server, n: usize, files: &[File]) -> Result<(f64, f64, f64, f64, f64), String> {
    let first_id = server.next_id + 1;
    server.next_id += n as u64;
    let bodies: Vec<String> = (0..n)
        .map(|i| {
            let path = &files[i % files.len()].path;
            let params = server.with_meta(json!({"name": server.tool, "arguments": {"path": path}}));
            json!({"jsonrpc": "2.0", "id": first_id + i as u64, "method": "tools/call", "params": params}).to_string()
        })
        .collect();
    let pid = server.child.id();
    let name = &server.name;
    let outcome = match &mut server.transport {
        Transport::Stdio { input, output } => burst_stdio(name, input, output, &bodies, first_id, pid)?,
        Transport::Http(http) => http.burst(&bodies, first_id, pid).map_err(|e| format!("{name}: {e}"))?,
    };
    let mut latencies = Vec::with_capacity(n);
    for (i, answer) in outcome.answers.into_iter().enumerate() {
        match answer {
            Ok((micros, answer)) => {
                if let Some(why) = read_problem(&server.tool, &answer, &files[i % files.len()]) {
                    server.error(&why);
                }
                latencies.push(micros);
            }
            Err(why) => server.error(&format!("burst read {i}: {why}")),
        }
    }
    if latencies.is_empty() {
        return Err(format!("{}: no read of the burst was answered", server.name));
    }
    let throughput = latencies.len() as f64 / outcome.span;
    latencies.sort_by(f64::total_cmp);
    Ok((percentile(&latencies, 0.5), percentile(&latencies, 0.99), throughput, outcome.cpu, outcome.client_cpu))
}

/// All the requests written back to back on the one pipe (newline-delimited), the answers read as they come.
fn burst_stdio(
    name: &str,
    input: &mut BufWriter<ChildStdin>,
    output: &mut BufReader<ChildStdout>,
    bodies: &[String],
    first_id: u64,
    pid: u32,
) -> Result<BurstOutcome, String> {
    let n = bodies.len();
    let requests: Vec<String> = bodies.iter().map(|body| format!("{body}\n")).collect();
    let (cpu, client_cpu) = (cpu_seconds(pid)?, own_cpu_seconds());
    let (sent, arrived) = std::thread::scope(|scope| {
        // Written from another thread: a server answering while we still write would otherwise fill its output
        // pipe, stop reading its input, and both sides would wait forever.
        let writer = scope.spawn(|| -> Result<Vec<Instant>, String> {
            let mut sent = Vec::with_capacity(n);
            for request in &requests {
                sent.push(Instant::now());
                input.write_all(request.as_bytes()).and_then(|()| input.flush()).map_err(|e| format!("{name}: {e}"))?;
            }
            Ok(sent)
        });
        let mut arrived = Vec::with_capacity(n);
        while arrived.len() < n {
            let mut line = String::new();
            match output.read_line(&mut line) {
                Ok(0) => return (writer.join(), Err(format!("{name}: the server closed its output"))),
                Ok(_) => arrived.push((Instant::now(), line)),
                Err(e) => return (writer.join(), Err(format!("{name}: {e}"))),
            }
        }
        (writer.join(), Ok(arrived))
    });
    let (cpu, client_cpu) = (cpu_seconds(pid)? - cpu, own_cpu_seconds() - client_cpu);
    let sent = sent.map_err(|_| "the writer thread panicked")??;
    let arrived = arrived?;
    let mut answers: Vec<Result<(f64, Value), String>> = (0..n).map(|_| Err("no answer".to_string())).collect();
    for (at, line) in &arrived {
        let answer: Value = serde_json::from_str(line).map_err(|e| format!("{name}: bad JSON: {e}"))?;
        let Some(i) = answer["id"].as_u64().and_then(|id| id.checked_sub(first_id)).map(|i| i as usize) else {
            return Err(format!("{name}: answer without a burst id: {line}"));
        };
        if i >= n {
            return Err(format!("{name}: answer to another request: {line}"));
        }
        answers[i] = Ok((micros(sent[i], *at), answer));
    }
    let last = arrived.iter().map(|(at, _)| *at).max().unwrap_or(sent[0]);
    Ok(BurstOutcome { answers, span: last.duration_since(sent[0]).as_secs_f64(), cpu, client_cpu })
}

/// CPU time (user + system) the process has used so far, in seconds, from /proc (10 ms ticks: Linux's USER_HZ is
/// 100 everywhere). Steadier than latency on a noisy machine, since it does not depend on where threads are woken.
fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the command name (which may hold spaces) close with ')': state is the 3rd field, utime the 14th.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<f64>().ok()).ok_or("unreadable /proc stat");
    Ok((ticks(14)? + ticks(15)?) / 100.0)
}

/// CPU time (user + system) this process has used so far, in seconds (microsecond resolution).
fn own_cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value, and getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Makes room for `needed` open files (a burst over HTTP holds one connection per read), up to the hard limit.
/// The servers, started after, inherit the limit.
fn raise_open_files(needed: u64) -> Result<(), String> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given, and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!("getrlimit: {}", std::io::Error::last_os_error()));
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    if limit.rlim_max < needed {
        return Err(format!("a burst over HTTP needs {needed} open files; the hard limit is {}", limit.rlim_max));
    }
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: setrlimit reads the struct it is given, and nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(format!("setrlimit: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The figures of one server over the repetitions, in the table's column order.
const FIGURES: [&str; 10] = [
    "ping_p50_us",
    "ping_p99_us",
    "read_p50_us",
    "read_p99_us",
    "read_cpu_us",
    "burst_p50_us",
    "burst_p99_us",
    "burst_reads_per_s",
    "burst_cpu_us",
    "idle_burst_p50_us",
];

/// Seconds every server is left idle at the start of each repetition (IDLE_BEFORE; 0, the default, for none).
fn idle_before() -> Result<f64, String> {
    match std::env::var("IDLE_BEFORE") {
        Err(_) => Ok(0.0),
        Ok(value) => value
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| format!("IDLE_BEFORE={value:?}: give a number of seconds, 0 or more")),
    }
}

/// Seconds to leave every server quiet after the last repetition before its resident memory is shown (RSS_AFTER;
/// none without it).
fn rss_after() -> Result<Option<f64>, String> {
    match std::env::var("RSS_AFTER") {
        Err(_) => Ok(None),
        Ok(value) => value
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Some)
            .ok_or_else(|| format!("RSS_AFTER={value:?}: give a number of seconds, 0 or more")),
    }
}

/// A process's resident memory (VmRSS), in KiB.
fn resident_kib(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:"));
    line.and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("{path}: no VmRSS"))
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: mcp-latency FILES_DIR N REPS [BURST] -- NAME TOOL [--ref] [--protocol VERSION] \
                 [--http PORT|auto] CMD ARGS... [-- NAME TOOL ...]";
    let split = args.iter().position(|a| a == "--").ok_or(usage)?;
    let (numbers, rest) = args.split_at(split);
    let (dir, n, reps, burst_size) = match numbers {
        [dir, n, reps] => (dir, n, reps, "1000"),
        [dir, n, reps, burst] => (dir, n, reps, burst.as_str()),
        _ => return Err(usage.into()),
    };
    let n: usize = n.parse().map_err(|_| usage)?;
    let reps: usize = reps.parse().map_err(|_| usage)?;
    let burst_size: usize = burst_size.parse().map_err(|_| usage)?;
    let files = load_files(Path::new(dir))?;
    if files.is_empty() || n == 0 || reps == 0 {
        return Err(format!("nothing to measure: {} files, N={n}, REPS={reps}, BURST={burst_size}", files.len()));
    }
    let specs: Vec<&[String]> = rest.split(|a| a == "--").filter(|s| !s.is_empty()).collect();
    if specs.iter().any(|spec| spec.iter().any(|a| a == "--http")) {
        raise_open_files(burst_size as u64 + 256)?;
    }
    let mut servers = Vec::new();
    for spec in specs {
        let [name, tool, command @ ..] = spec else { return Err(usage.into()) };
        servers.push(Server::start(name, tool, command)?);
    }
    for server in &mut servers {
        phase(server, "read", 2 * files.len(), &files, None)?; // warm-up: page cache, allocator, JIT
        if burst_size > 0 {
            burst(server, burst_size, &files)?;
        }
    }
    let idle = idle_before()?;
    // Each server meets the same pauses: the sequence starts over for every phase.
    let think_range = Think::from_env()?;
    let mut samples: Vec<[Vec<f64>; 10]> = servers.iter().map(|_| Default::default()).collect();
    for rep in 0..reps {
        std::thread::sleep(Duration::from_secs_f64(idle));
        for k in 0..servers.len() {
            let s = (k + rep) % servers.len();
            let pid = servers[s].child.id();
            let idle_burst50 = if idle > 0.0 && burst_size > 0 { burst(&mut servers[s], burst_size, &files)?.0 } else { f64::NAN };
            // Protocol 2026-07-28 has no `ping` (rmcp answers it -32601): that row shows none.
            let (ping50, ping99) = if servers[s].meta.is_some() {
                (f64::NAN, f64::NAN)
            } else {
                phase(&mut servers[s], "ping", n, &files, think_range.clone().as_mut())?
            };
            let cpu = cpu_seconds(pid)?;
            let (read50, read99) = phase(&mut servers[s], "read", n, &files, think_range.clone().as_mut())?;
            let read_cpu = (cpu_seconds(pid)? - cpu) * 1e6 / n as f64;
            let (burst50, burst99, rate, cpu, client_cpu) = match burst_size {
                0 => (f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN),
                _ => burst(&mut servers[s], burst_size, &files)?,
            };
            let burst_cpu = cpu * 1e6 / burst_size as f64;
            let figures = [ping50, ping99, read50, read99, read_cpu, burst50, burst99, rate, burst_cpu, idle_burst50];
            let client_cpu = client_cpu * 1e6 / burst_size as f64;
            let mut line = json!({"server": servers[s].name, "rep": rep, "client_burst_cpu_us": client_cpu});
            for (name, value) in FIGURES.iter().zip(figures) {
                line[name] = json!(value);
            }
            eprintln!("{line}");
            for (slot, value) in samples[s].iter_mut().zip(figures) {
                slot.push(value);
            }
        }
    }
    let medians: Vec<[f64; 10]> = samples.into_iter().map(|sample| sample.map(median)).collect();
    let references: Vec<usize> = (0..servers.len()).map(|k| reference_of(&servers, k)).collect();
    println!(
        "| server | ping p50 (µs) | ping p99 (µs) | read p50 (µs) | read p99 (µs) | read p50 ÷ ref \
         | CPU per read (µs) | burst p50 (ms) | burst p99 (ms) | burst reads/s | burst p50 ÷ ref \
         | CPU per burst read (µs) | burst after idle p50 (ms) | burst after idle ÷ ref | errors |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (k, server) in servers.iter().enumerate() {
        let [p50, p99, r50, r99, rcpu, b50, b99, rate, bcpu, i50] = medians[k];
        let reference = &medians[references[k]];
        let shown = |value: f64| if value.is_nan() { "–".to_string() } else { format!("{value:.1}") };
        let (p50, p99) = (shown(p50), shown(p99));
        let (idle_p50, idle_ratio) = if idle > 0.0 {
            (format!("{:.1}", i50 / 1e3), format!("{:.2}×", i50 / reference[9]))
        } else {
            ("–".to_string(), "–".to_string())
        };
        let b_ratio = if b50.is_nan() { "–".to_string() } else { format!("{:.2}×", b50 / reference[5]) };
        let (b50, b99) = (shown(b50 / 1e3), shown(b99 / 1e3));
        let (rate, bcpu) = if rate.is_nan() { ("–".into(), "–".into()) } else { (format!("{rate:.0}"), format!("{bcpu:.0}")) };
        println!(
            "| {} | {p50} | {p99} | {r50:.1} | {r99:.1} | {:.2}× | {rcpu:.0} | {b50} | {b99} | {rate} | {b_ratio} \
             | {bcpu} | {idle_p50} | {idle_ratio} | {} |",
            server.name,
            r50 / reference[2],
            server.errors
        );
    }
    let mut shown: Vec<usize> = references.clone();
    shown.sort_unstable();
    shown.dedup();
    let against: Vec<String> = shown
        .iter()
        .map(|&r| {
            let mut transports: Vec<&str> =
                (0..servers.len()).filter(|&k| references[k] == r).map(|k| servers[k].transport_name()).collect();
            transports.sort_unstable();
            transports.dedup();
            format!("{} for the {} rows", servers[r].name, transports.join(" and "))
        })
        .collect();
    let after_idle = if idle > 0.0 { format!(", each after {idle} s idle and one burst more") } else { String::new() };
    if let Some(quiet) = rss_after()? {
        std::thread::sleep(Duration::from_secs_f64(quiet));
        println!();
        for server in &servers {
            let kib = resident_kib(server.child.id())?;
            println!("{}: resident {:.1} MiB after {quiet} s quiet", server.name, kib as f64 / 1024.0);
        }
    }
    println!(
        "\nmedians of {reps} repetitions of {n} sequential calls and a burst of {burst_size} reads each{after_idle}; \
         {} files; ratios against {}",
        files.len(),
        against.join(", ")
    );
    Ok(())
}

/// The server whose medians the ratios of server `k` are taken against: the `--ref` server on its transport, else
/// the last server.
fn reference_of(servers: &[Server], k: usize) -> usize {
    let same_transport = |other: &Server| other.transport_name() == servers[k].transport_name();
    servers.iter().position(|other| other.reference && same_transport(other)).unwrap_or(servers.len() - 1)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(message) = run(&args) {
        eprintln!("mcp-latency: {message}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` cut at `cut` (and whole when `cut` is 0); returns the reply once complete.
    fn parse(bytes: &[u8], cut: usize, eof: bool) -> Result<Reply, String> {
        let (mut reply, mut input, at) = (Reply::default(), Vec::new(), Instant::now());
        let pieces: Vec<&[u8]> = if cut == 0 { vec![bytes] } else { vec![&bytes[..cut], &bytes[cut..]] };
        for (k, piece) in pieces.iter().enumerate() {
            reply.feed_more(&mut input, piece, at, eof && k == pieces.len() - 1)?;
        }
        assert!(input.is_empty(), "bytes left: {input:?}");
        Ok(reply)
    }

    fn every_cut(bytes: &[u8], eof: bool, check: impl Fn(&Reply)) {
        for cut in 0..bytes.len() {
            check(&parse(bytes, cut, eof).unwrap_or_else(|e| panic!("cut at {cut}: {e}")));
        }
    }

    #[test]
    fn an_sse_answer_in_chunks_gives_the_event_with_the_response() {
        let bytes = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: abc\r\n\
                      transfer-encoding: chunked\r\n\r\n1C\r\ndata: \nid: 0/0\nretry: 3000\n\n\r\n\
                      34\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\nid: 1/0\n\n\r\n0\r\n\r\n";
        every_cut(bytes, false, |reply| {
            assert_eq!((reply.status, reply.sse, reply.session.as_deref()), (200, true, Some("abc")));
            assert_eq!(reply.events.len(), 1, "the priming event has no data");
            assert_eq!(reply.answer(2).unwrap().1, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
            assert!(reply.answer(3).is_err());
        });
    }

    #[test]
    fn sse_events_with_crlf_lines_several_data_lines_and_no_final_blank_line() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nContent-Length: 54\r\n\r\n\
                      : comment\r\ndata: {\"id\":\r\ndata:1}\r\n\r\nevent: x\ndata: [2]";
        every_cut(bytes, false, |reply| {
            let events: Vec<&[u8]> = reply.events.iter().map(|(_, data)| data.as_slice()).collect();
            assert_eq!(events, [&b"{\"id\":\n1}"[..], b"[2]"]);
            assert_eq!(reply.answer(1).unwrap().1, json!({"id": 1}));
        });
    }

    #[test]
    fn a_json_answer_with_a_length_and_one_after_an_interim_head() {
        let body = br#"{"jsonrpc":"2.0","id":7,"result":{"x":"a\r\nb"}}"#;
        let mut bytes = format!(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(body);
        every_cut(&bytes, false, |reply| {
            assert!(!reply.sse && reply.done.is_some());
            assert_eq!(reply.answer(7).unwrap().1["result"]["x"], json!("a\r\nb"));
        });
    }

    #[test]
    fn empty_answers_bodies_up_to_the_end_and_errors() {
        let accepted = parse(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n", 0, false).unwrap();
        assert_eq!((accepted.status, accepted.done.is_some()), (202, true));
        let bytes = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"id\":1}";
        every_cut(bytes, true, |reply| assert!(reply.close && reply.answer(1).is_ok()));
        let cut_short = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n{\"id\":1}";
        assert!(parse(cut_short, 0, true).is_err());
        let refused = parse(b"HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\ngone", 0, false).unwrap();
        assert!(refused.answer(1).unwrap_err().starts_with("HTTP 404"));
    }
}
