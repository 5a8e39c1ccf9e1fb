//! Sequential MCP latency over stdio, measured with as little client as possible: one blocking write of a JSON-RPC
//! line, one blocking read of the answer line, timed with `Instant`. The Python load client (bench/mcp_load.py) adds
//! 70–100 µs of its own to every request; this one adds a few, so what remains is the servers.
//!
//! Both servers run side by side for the whole run, on the same files; each repetition measures `ping` (the protocol
//! floor: no file is touched) and then the reads, server by server, the order rotating every repetition. Every read
//! answer is checked after its time is taken: a result, not `isError`, and the file's content (Node: the text equals
//! the file; agent-read: `meta.total_lines` equals the file's line count). Any other answer is counted as an error.
//!
//! Usage: mcp-latency FILES_DIR N REPS -- NAME TOOL CMD ARGS... -- NAME TOOL CMD ARGS...
//! Prints a markdown table; raw p50/p99 per repetition go to standard error as JSON lines.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// One server under test: a long-lived child speaking newline-delimited JSON-RPC.
struct Server {
    name: String,
    tool: String,
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(name: &str, tool: &str, command: &[String]) -> Result<Server, String> {
        let (program, args) = command.split_first().ok_or(format!("{name}: no command"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{name}: cannot start {program}: {e}"))?;
        let input = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut server = Server { name: name.into(), tool: tool.into(), child, input, output, next_id: 0 };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "mcp-latency", "version": "1"}});
        server.call("initialize", init)?;
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.input
            .write_all(line.as_bytes())
            .and_then(|()| self.input.flush())
            .map_err(|e| format!("{}: {e}", self.name))
    }

    /// Sends one request and waits for its answer; returns the answer and the round trip in microseconds.
    fn call(&mut self, method: &str, params: Value) -> Result<(Value, f64), String> {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n";
        let mut line = String::new();
        let started = Instant::now();
        self.input
            .write_all(request.as_bytes())
            .and_then(|()| self.input.flush())
            .map_err(|e| format!("{}: {e}", self.name))?;
        loop {
            line.clear();
            if self.output.read_line(&mut line).map_err(|e| format!("{}: {e}", self.name))? == 0 {
                return Err(format!("{}: the server closed its output", self.name));
            }
            if line.contains(&format!("\"id\":{id}")) {
                break;
            }
        }
        let micros = started.elapsed().as_secs_f64() * 1e6;
        let answer: Value = serde_json::from_str(&line).map_err(|e| format!("{}: bad JSON: {e}", self.name))?;
        if answer.get("id") != Some(&json!(id)) {
            return Err(format!("{}: answer to another request: {line}", self.name));
        }
        Ok((answer, micros))
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

/// True when the answer is a successful read showing the file.
fn read_is_right(server: &Server, answer: &Value, file: &File) -> bool {
    let result = &answer["result"];
    if result.get("isError") == Some(&json!(true)) {
        return false;
    }
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    if server.tool == "read_text_file" {
        return text == file.content;
    }
    !text.is_empty() && result["structuredContent"]["meta"]["total_lines"] == json!(file.lines)
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * fraction).round() as usize]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Measures `n` calls of one kind; returns (p50, p99, errors).
fn phase(server: &mut Server, kind: &str, n: usize, files: &[File], errors: &mut u64) -> Result<(f64, f64), String> {
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        if kind == "ping" {
            let (answer, micros) = server.call("ping", json!({}))?;
            *errors += u64::from(answer.get("result").is_none());
            latencies.push(micros);
        } else {
            let file = &files[i % files.len()];
            let params = json!({"name": server.tool, "arguments": {"path": file.path}});
            let (answer, micros) = server.call("tools/call", params)?;
            *errors += u64::from(!read_is_right(server, &answer, file));
            latencies.push(micros);
        }
    }
    latencies.sort_by(f64::total_cmp);
    Ok((percentile(&latencies, 0.5), percentile(&latencies, 0.99)))
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: mcp-latency FILES_DIR N REPS -- NAME TOOL CMD ARGS... [-- NAME TOOL CMD ARGS...]";
    let [dir, n, reps, rest @ ..] = args else { return Err(usage.into()) };
    let n: usize = n.parse().map_err(|_| usage)?;
    let reps: usize = reps.parse().map_err(|_| usage)?;
    let files = load_files(Path::new(dir))?;
    if files.is_empty() || n == 0 || reps == 0 {
        return Err(format!("nothing to measure: {} files, N={n}, REPS={reps}", files.len()));
    }
    let mut servers = Vec::new();
    for spec in rest.split(|a| a == "--").filter(|s| !s.is_empty()) {
        let [name, tool, command @ ..] = spec else { return Err(usage.into()) };
        servers.push(Server::start(name, tool, command)?);
    }
    let mut errors = vec![0u64; servers.len()];
    for (server, errors) in servers.iter_mut().zip(&mut errors) {
        phase(server, "read", 2 * files.len(), &files, errors)?; // warm-up: page cache, allocator, JIT
    }
    let mut samples: Vec<[Vec<f64>; 4]> = servers.iter().map(|_| Default::default()).collect();
    for rep in 0..reps {
        for k in 0..servers.len() {
            let s = (k + rep) % servers.len();
            let (ping50, ping99) = phase(&mut servers[s], "ping", n, &files, &mut errors[s])?;
            let (read50, read99) = phase(&mut servers[s], "read", n, &files, &mut errors[s])?;
            eprintln!(
                "{}",
                json!({"server": servers[s].name, "rep": rep, "ping_p50_us": ping50, "ping_p99_us": ping99,
                                   "read_p50_us": read50, "read_p99_us": read99})
            );
            for (slot, value) in samples[s].iter_mut().zip([ping50, ping99, read50, read99]) {
                slot.push(value);
            }
        }
    }
    let reference = median(samples[servers.len() - 1][2].clone());
    println!(
        "| server | ping p50 (µs) | ping p99 (µs) | read p50 (µs) | read p99 (µs) | read p50 ÷ last row | errors |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for ((server, sample), errors) in servers.iter_mut().zip(samples).zip(errors) {
        let [p50, p99, r50, r99] = sample.map(median);
        println!(
            "| {} | {p50:.1} | {p99:.1} | {r50:.1} | {r99:.1} | {:.2}× | {errors} |",
            server.name,
            r50 / reference
        );
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
    println!("\nmedians of {reps} repetitions of {n} sequential calls each; {} files", files.len());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(message) = run(&args) {
        eprintln!("mcp-latency: {message}");
        std::process::exit(1);
    }
}
