//! The audit log: one JSON line per read — time, root, path, outcome, bytes returned. Never file content.

use crate::config::ConfigError;
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

impl AuditLog {
    /// Opens (creating if needed) the audit file for appending.
    pub fn open(path: &Path) -> Result<AuditLog, ConfigError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ConfigError::new(format!("audit log {} cannot be opened: {e}", path.display())))?;
        Ok(AuditLog { file: Mutex::new(file) })
    }

    /// Appends one record as a single write; a failing audit write never fails the read.
    pub fn record(&self, entry: &AuditEntry<'_>) {
        let Ok(mut line) = serde_json::to_vec(entry) else { return };
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
}
