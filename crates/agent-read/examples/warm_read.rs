//! Warm, in-process reads for the benchmarks (bench/compare.sh): one `Reader` reads the same window `REPS` times,
//! as a long-lived harness or MCP server would. The first read (which may build the line index) is timed apart.
//!
//! Usage: cargo run --release --example warm_read -- ROOT PATH OFFSET LIMIT REPS
//! Prints one JSON line: {"first_ms": …, "median_us": …, "min_us": …, "output_bytes": …}.

use agent_read::{Config, ReadOptions, ReadRequest, Reader};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(message) = run(&args) {
        eprintln!("warm_read: {message}");
        std::process::exit(2);
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [root, path, offset, limit, reps] = args else {
        return Err("usage: warm_read ROOT PATH OFFSET LIMIT REPS".into());
    };
    let number = |text: &str| text.parse::<i64>().map_err(|e| format!("{text}: {e}"));
    let reps = usize::try_from(number(reps)?).map_err(|e| e.to_string())?.max(1);
    let reader = Reader::new(Config::with_roots([root])).map_err(|e| e.to_string())?;
    let request = ReadRequest { offset: Some(number(offset)?), limit: Some(number(limit)?), ..ReadRequest::new(path) };
    let started = Instant::now();
    let first = reader.read(&request, &ReadOptions::default());
    let first_ms = started.elapsed().as_secs_f64() * 1e3;
    if !first.is_ok() {
        return Err(first.output().into_owned());
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        let result = reader.read(&request, &ReadOptions::default());
        times.push(started.elapsed().as_secs_f64() * 1e6);
        if result.output() != first.output() {
            return Err(format!("a warm read differs from the first:\n{}", result.output()));
        }
    }
    times.sort_by(f64::total_cmp);
    let output_bytes = first.output().len();
    println!(
        "{{\"first_ms\": {first_ms:.3}, \"median_us\": {:.1}, \"min_us\": {:.1}, \"output_bytes\": {output_bytes}}}",
        times[times.len() / 2],
        times[0]
    );
    Ok(())
}
