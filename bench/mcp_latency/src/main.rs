//! MCP latency over stdio, measured with as little client as possible. The Python load client (bench/mcp_load.py)
//! adds 70–100 µs of its own to every request, and under a burst its own CPU competes with the server's on a
//! two-core machine; this one adds a few microseconds, so what remains is the servers.
//!
//! Three phases per server and repetition:
//! - `ping`: sequential pings, the protocol floor (no file is touched);
//! - `read`: sequential reads: one blocking write of a JSON-RPC line, one blocking read of the answer line;
//! - `burst`: BURST reads in flight at once on the one pipe. A writer thread writes them back to back (noting when
//!   each line went out) while this thread reads the answers as they come, in any order; a request's latency runs
//!   from its write to its answer's arrival, as in bench/mcp_load.py's `conc` phase.
//!
//! Both servers run side by side for the whole run, on the same files, the order rotating every repetition. Every read
//! answer is checked after its time is taken: a result, not `isError`, and the file's content (Node: the text equals
//! the file; agent-read: `meta.total_lines` equals the file's line count). Any other answer is counted as an error.
//!
//! Usage: mcp-latency FILES_DIR N REPS [BURST] -- NAME TOOL CMD ARGS... -- NAME TOOL CMD ARGS...
//! Prints a markdown table; raw figures per repetition go to standard error as JSON lines.

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

/// Sends `n` reads at once on the one pipe and waits for every answer; returns (p50, p99, reads per second).
fn burst(server: &mut Server, n: usize, files: &[File], errors: &mut u64) -> Result<(f64, f64, f64), String> {
    let first_id = server.next_id + 1;
    server.next_id += n as u64;
    let requests: Vec<String> = (0..n)
        .map(|i| {
            let path = &files[i % files.len()].path;
            let params = json!({"name": server.tool, "arguments": {"path": path}});
            json!({"jsonrpc": "2.0", "id": first_id + i as u64, "method": "tools/call", "params": params}).to_string()
                + "\n"
        })
        .collect();
    let Server { name, input, output, .. } = server;
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
    let sent = sent.map_err(|_| "the writer thread panicked")??;
    let arrived = arrived?;
    let mut latencies = Vec::with_capacity(n);
    for (at, line) in &arrived {
        let answer: Value = serde_json::from_str(line).map_err(|e| format!("{}: bad JSON: {e}", server.name))?;
        let Some(i) = answer["id"].as_u64().and_then(|id| id.checked_sub(first_id)).map(|i| i as usize) else {
            return Err(format!("{}: answer without a burst id: {line}", server.name));
        };
        if i >= n {
            return Err(format!("{}: answer to another request: {line}", server.name));
        }
        *errors += u64::from(!read_is_right(server, &answer, &files[i % files.len()]));
        latencies.push(at.duration_since(sent[i]).as_secs_f64() * 1e6);
    }
    let last = arrived.iter().map(|(at, _)| *at).max().unwrap_or(sent[0]);
    let throughput = n as f64 / last.duration_since(sent[0]).as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    Ok((percentile(&latencies, 0.5), percentile(&latencies, 0.99), throughput))
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

/// The figures of one server over the repetitions, in the table's column order.
const FIGURES: [&str; 9] = [
    "ping_p50_us",
    "ping_p99_us",
    "read_p50_us",
    "read_p99_us",
    "read_cpu_us",
    "burst_p50_us",
    "burst_p99_us",
    "burst_reads_per_s",
    "burst_cpu_us",
];

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: mcp-latency FILES_DIR N REPS [BURST] -- NAME TOOL CMD ARGS... [-- NAME TOOL CMD ARGS...]";
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
    if files.is_empty() || n == 0 || reps == 0 || burst_size == 0 {
        return Err(format!("nothing to measure: {} files, N={n}, REPS={reps}, BURST={burst_size}", files.len()));
    }
    let mut servers = Vec::new();
    for spec in rest.split(|a| a == "--").filter(|s| !s.is_empty()) {
        let [name, tool, command @ ..] = spec else { return Err(usage.into()) };
        servers.push(Server::start(name, tool, command)?);
    }
    let mut errors = vec![0u64; servers.len()];
    for (server, errors) in servers.iter_mut().zip(&mut errors) {
        phase(server, "read", 2 * files.len(), &files, errors)?; // warm-up: page cache, allocator, JIT
        burst(server, burst_size, &files, errors)?;
    }
    let mut samples: Vec<[Vec<f64>; 9]> = servers.iter().map(|_| Default::default()).collect();
    for rep in 0..reps {
        for k in 0..servers.len() {
            let s = (k + rep) % servers.len();
            let pid = servers[s].child.id();
            let (ping50, ping99) = phase(&mut servers[s], "ping", n, &files, &mut errors[s])?;
            let cpu = cpu_seconds(pid)?;
            let (read50, read99) = phase(&mut servers[s], "read", n, &files, &mut errors[s])?;
            let read_cpu = (cpu_seconds(pid)? - cpu) * 1e6 / n as f64;
            let cpu = cpu_seconds(pid)?;
            let (burst50, burst99, rate) = burst(&mut servers[s], burst_size, &files, &mut errors[s])?;
            let burst_cpu = (cpu_seconds(pid)? - cpu) * 1e6 / burst_size as f64;
            let figures = [ping50, ping99, read50, read99, read_cpu, burst50, burst99, rate, burst_cpu];
            let mut line = json!({"server": servers[s].name, "rep": rep});
            for (name, value) in FIGURES.iter().zip(figures) {
                line[name] = json!(value);
            }
            eprintln!("{line}");
            for (slot, value) in samples[s].iter_mut().zip(figures) {
                slot.push(value);
            }
        }
    }
    let reference = samples[servers.len() - 1].clone().map(median);
    println!(
        "| server | ping p50 (µs) | ping p99 (µs) | read p50 (µs) | read p99 (µs) | read p50 ÷ last row \
         | CPU per read (µs) | burst p50 (ms) | burst p99 (ms) | burst reads/s | burst p50 ÷ last row \
         | CPU per burst read (µs) | errors |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for ((server, sample), errors) in servers.iter_mut().zip(samples).zip(errors) {
        let [p50, p99, r50, r99, rcpu, b50, b99, rate, bcpu] = sample.map(median);
        println!(
            "| {} | {p50:.1} | {p99:.1} | {r50:.1} | {r99:.1} | {:.2}× | {rcpu:.0} | {:.1} | {:.1} | {rate:.0} | {:.2}× \
             | {bcpu:.0} | {errors} |",
            server.name,
            r50 / reference[2],
            b50 / 1e3,
            b99 / 1e3,
            b50 / reference[5]
        );
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
    println!(
        "\nmedians of {reps} repetitions of {n} sequential calls and a burst of {burst_size} reads each; {} files",
        files.len()
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(message) = run(&args) {
        eprintln!("mcp-latency: {message}");
        std::process::exit(1);
    }
}
