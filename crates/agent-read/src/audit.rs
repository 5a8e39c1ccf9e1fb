//! The audit log: one JSON line per read — time, root, path, outcome, bytes returned — and one per change of roots a
//! client asked for (`"event": "roots"`: who, which roots were asked, which taken, which refused and why). Never file
//! content.

use crate::config_error::ConfigError;
use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// An append-only JSON-lines audit file, safe to share between threads.
#[derive(Debug)]
pub struct AuditLog {
    file: Mutex<File>,
}

/// One audit record.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEntry<'a> {
    /// When the read finished (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// The root the path resolved beneath, when it resolved.
    pub root: Option<&'a Path>,
    /// The path as the request gave it.
    pub path: &'a str,
    /// The path as shown to the model (resolved against its root), when it resolved.
    pub resolved: Option<&'a str>,
    /// `ok`, or the error code.
    pub outcome: &'a str,
    /// `text`, `directory` or `error`.
    pub kind: &'a str,
    /// Bytes of `output` returned to the model.
    pub bytes: usize,
}

/// One change of roots: a client asked for roots, and what became of them.
#[derive(Debug, Clone, Serialize)]
pub struct RootsChange<'a> {
    /// When the change was made (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// Always `roots`: what tells these lines from the lines of reads.
    pub event: &'static str,
    /// Who asked.
    #[serde(flatten)]
    pub who: Who<'a>,
    /// The roots as the client gave them (URIs).
    pub asked: Vec<&'a str>,
    /// The real paths of the roots taken.
    pub accepted: Vec<String>,
    /// The roots refused, each with why.
    pub refused: Vec<Refused<'a>>,
    /// The real paths of the roots in force after the change (the configured ones when none was taken).
    pub in_force: Vec<String>,
}

/// Who changed the roots.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Who<'a> {
    /// How the client is connected: `stdio`, `http` (a session), `http-stateless`.
    pub transport: &'a str,
    /// The MCP session id, when there is one.
    pub session: Option<&'a str>,
    /// The client's name, as it gave it.
    pub client: Option<&'a str>,
    /// The client's version, as it gave it.
    pub client_version: Option<&'a str>,
    /// Whom HTTP authentication let in (`static token 2`, `alice from https://auth.example`), when it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authenticated: Option<&'a str>,
}

/// A root refused, with why.
#[derive(Debug, Clone, Serialize)]
pub struct Refused<'a> {
    /// The root as the client gave it.
    pub root: &'a str,
    /// Why it was refused.
    pub why: String,
}

impl AuditLog {
    /// Opens (creating if needed) the audit file for appending.
    pub fn open(path: &Path) -> Result<AuditLog, ConfigError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ConfigError::AuditLog { path: path.to_path_buf(), reason: e.to_string() })?;
        Ok(AuditLog { file: Mutex::new(file) })
    }

    /// Appends one record as a single write; a failing audit write never fails the read.
    pub fn record(&self, entry: &AuditEntry<'_>) {
        self.append(entry);
    }

    /// Appends one change of roots as a single write.
    pub fn record_roots(&self, change: &RootsChange<'_>) {
        self.append(change);
    }

    fn append(&self, record: &impl Serialize) {
        let Ok(mut line) = serde_json::to_vec(record) else { return };
        line.push(b'\n');
        let mut file = match self.file.lock() {
            Ok(file) => file,
            Err(poisoned) => poisoned.into_inner(),
        };
        let _ = file.write_all(&line);
    }
}

/// The current time as RFC 3339 with milliseconds.
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_one_json_line_per_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        for outcome in ["ok", "DENIED"] {
            let entry = AuditEntry {
                time: now(),
                root: Some(dir.path()),
                path: ".env",
                resolved: Some(".env"),
                outcome,
                kind: "error",
                bytes: 12,
            };
            log.record(&entry);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["outcome"], "DENIED");
        assert_eq!(lines[0]["bytes"], 12);
    }

    #[test]
    fn a_change_of_roots_is_one_line_saying_who_and_what() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let who = Who { transport: "http", client: Some("c"), authenticated: Some("static token 1"), ..Who::default() };
        log.record_roots(&RootsChange {
            time: now(),
            event: "roots",
            who,
            asked: vec!["file:///"],
            accepted: vec![],
            refused: vec![Refused { root: "file:///", why: "outside the configured roots".into() }],
            in_force: vec!["/ws".into()],
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert_eq!(line["event"], "roots");
        assert_eq!(line["transport"], "http");
        assert_eq!(line["client"], "c");
        assert_eq!(line["authenticated"], "static token 1");
        assert_eq!(line["refused"][0]["why"], "outside the configured roots");
        assert_eq!(line["in_force"][0], "/ws");
    }
}
