//! A refused read, told to the person who typed flags.
//!
//! The library words its errors for a model, which calls the tool with JSON: a next step reads `offset=-100`,
//! `"mode": "block"`, `` `anchor_line` `` or `{"path": "src/app.py", "mode": "block", "anchor_line": 812}`. When the
//! request came from flags, the command line says the same in flags (`--offset -100`, `--mode block`,
//! `` `--anchor-line` ``, `agent-read src/app.py --mode block --anchor-line 812`) and, for a path outside the roots,
//! names `--root`. JSON output, MCP and JSON requests keep the model's words unchanged.
//!
//! Only the message and the next step are reworded, never the suggested names, a partial read or a note; the paths
//! the request named are left as they are wherever they appear, so a file called `offset=3` is never shown as a flag.

use agent_read::{ErrorCode, ReadError};

/// The request fields that are flags, with their flag.
const FLAGS: &[(&str, &str)] = &[
    ("offset", "--offset"),
    ("limit", "--limit"),
    ("start_byte", "--start-byte"),
    ("end_byte", "--end-byte"),
    ("pages", "--pages"),
    ("encoding", "--encoding"),
    ("mode", "--mode"),
    ("anchor_line", "--anchor-line"),
    ("levels", "--levels"),
    ("find", "--find"),
    ("context", "--context"),
    ("region", "--region"),
    ("max_files", "--max-files"),
];

/// The request fields given as arguments rather than flags.
const POSITIONAL: &[&str] = &["path", "paths"];

/// The next step for a path outside the roots: only whoever starts the program can widen them.
const OUTSIDE_ROOT_HINT: &str = "to read it, start agent-read with --root DIR naming a directory that holds it (--root may be given more than once)";

/// `error` as the command line shows it for a request made of flags; `paths` are the paths the request named, kept
/// as they are both as given and as errors show them (control characters escaped).
pub fn for_flags(error: &ReadError, paths: &[&str]) -> ReadError {
    let escaped: Vec<String> = paths.iter().map(|path| agent_read::escape_for_model(path)).collect();
    let kept: Vec<&str> = paths.iter().copied().chain(escaped.iter().map(String::as_str)).collect();
    let mut shown = error.clone();
    shown.message = in_flags(&error.message, &kept);
    shown.hint = if error.code == ErrorCode::OutsideRoot {
        Some(OUTSIDE_ROOT_HINT.to_string())
    } else {
        error.hint.as_deref().map(|hint| in_flags(hint, &kept))
    };
    shown
}

/// `text` with the request's field syntax reworded as flags, leaving every occurrence of `kept` as it is.
pub fn in_flags(text: &str, kept: &[&str]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some((at, len)) = first_kept(rest, kept) {
        out.push_str(&reword(&rest[..at]));
        out.push_str(&rest[at..at + len]);
        rest = &rest[at + len..];
    }
    out.push_str(&reword(rest));
    out
}

/// The earliest (then longest) occurrence in `text` of a non-empty string of `kept`, as (start, length).
fn first_kept(text: &str, kept: &[&str]) -> Option<(usize, usize)> {
    kept.iter()
        .filter(|k| !k.is_empty())
        .filter_map(|k| text.find(k).map(|at| (at, k.len())))
        .min_by_key(|&(at, len)| (at, std::cmp::Reverse(len)))
}

/// Rewords one stretch of text (no kept path inside), left to right.
fn reword(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let boundary = text[..at].chars().next_back().is_none_or(|c| !is_word_char(c) && c != '-');
        let matched = match rest.as_bytes()[0] {
            b'{' => json_call(rest),
            b'"' => quoted_field(rest),
            b'`' => backquoted_field(rest),
            _ if boundary => bare_field(rest),
            _ => None,
        };
        match matched {
            Some((words, used)) => {
                out.push_str(&words);
                at += used;
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                at += c.len_utf8().max(1);
            }
        }
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn flag(field: &str) -> Option<&'static str> {
    FLAGS.iter().find(|(name, _)| *name == field).map(|(_, flag)| *flag)
}

/// `{"path": "src/app.py", "mode": "block", "anchor_line": 812}` → `agent-read src/app.py --mode block
/// --anchor-line 812` (`paths` → `agent-read many …`), when every key is a field.
fn json_call(text: &str) -> Option<(String, usize)> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let serde_json::Value::Object(map) = values.next()?.ok()? else { return None };
    let used = values.byte_offset();
    // In the order the text gives them (the parsed map sorts its keys).
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by_key(|(key, _)| text[..used].find(&format!("\"{key}\"")));
    let mut command = vec!["agent-read".to_string()];
    let mut flags = Vec::new();
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("path", value) => command.push(shell_word(&scalar(value)?)),
            ("paths", serde_json::Value::Array(paths)) => {
                command.push("many".to_string());
                for path in paths {
                    command.push(shell_word(&scalar(path)?));
                }
            }
            (field, value) => flags.push(format!("{} {}", flag(field)?, shell_word(&scalar(value)?))),
        }
    }
    command.extend(flags);
    Some((command.join(" "), used))
}

/// `"mode": "block"` → `--mode block`, `"path": "a.txt"` → `agent-read a.txt`; `"anchor_line"` alone →
/// `--anchor-line`.
fn quoted_field(text: &str) -> Option<(String, usize)> {
    let end = text[1..].find('"')? + 1;
    let name = &text[1..end];
    let flag = flag(name);
    if flag.is_none() && name != "path" {
        return None;
    }
    let Some(value_text) = text[end + 1..].trim_start().strip_prefix(':') else {
        return flag.map(|flag| (flag.to_string(), end + 1));
    };
    let value_start = text.len() - value_text.trim_start().len();
    let mut values = serde_json::Deserializer::from_str(&text[value_start..]).into_iter::<serde_json::Value>();
    let value = shell_word(&scalar(&values.next()?.ok()?)?);
    let words = match flag {
        Some(flag) => format!("{flag} {value}"),
        None => format!("agent-read {value}"),
    };
    Some((words, value_start + values.byte_offset()))
}

/// `` `offset` `` → `` `--offset` ``.
fn backquoted_field(text: &str) -> Option<(String, usize)> {
    let end = text[1..].find('`')? + 1;
    let flag = flag(&text[1..end])?;
    Some((format!("`{flag}`"), end + 1))
}

/// `offset=-100` → `--offset -100`, `pages="2-4"` → `--pages 2-4`, `path=.` → `agent-read .`, a bare `pages=` →
/// `--pages`; `start_byte` alone → `--start-byte` (a field named by a plain word, such as `limit`, stays a word).
fn bare_field(text: &str) -> Option<(String, usize)> {
    let name_len = text.find(|c: char| !is_word_char(c)).unwrap_or(text.len());
    let name = &text[..name_len];
    let Some(value_text) = text[name_len..].strip_prefix('=') else {
        return flag(name).filter(|_| name.contains('_')).map(|flag| (flag.to_string(), name_len));
    };
    let (value, value_len) = if value_text.starts_with('"') {
        let mut values = serde_json::Deserializer::from_str(value_text).into_iter::<String>();
        let value = values.next()?.ok()?;
        (value, values.byte_offset())
    } else if value_text.starts_with('[') {
        let mut values = serde_json::Deserializer::from_str(value_text).into_iter::<serde_json::Value>();
        let value = scalar(&values.next()?.ok()?)?;
        (value, values.byte_offset())
    } else {
        let len =
            value_text.find(|c: char| c.is_whitespace() || matches!(c, ')' | ',' | ';')).unwrap_or(value_text.len());
        (value_text[..len].to_string(), len)
    };
    let used = name_len + 1 + value_len;
    if POSITIONAL.contains(&name) {
        return Some((format!("agent-read {}", shell_word(&value)), used));
    }
    let flag = flag(name)?;
    Some(if value.is_empty() { (flag.to_string(), used) } else { (format!("{flag} {}", shell_word(&value)), used) })
}

/// A JSON string or number as it is typed; an array of numbers (a region) as they are joined by commas.
fn scalar(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(number) => Some(number.to_string()),
        serde_json::Value::Array(items) if items.iter().all(serde_json::Value::is_number) => {
            Some(items.iter().map(|item| item.to_string()).collect::<Vec<_>>().join(","))
        }
        _ => None,
    }
}

/// `word` as a shell reads it back: bare when it holds nothing a shell would interpret, else single-quoted.
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./,:@%+=-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_of_a_call_becomes_flags() {
        let cases = [
            ("read the end with offset=-100", "read the end with --offset -100"),
            ("send e.g. start_byte=9 end_byte=4105", "send e.g. --start-byte 9 --end-byte 4105"),
            ("list from the start with offset=1, or", "list from the start with --offset 1, or"),
            (r#"read its text instead: pages="1""#, "read its text instead: --pages 1"),
            (r#"e.g. pages="2, 4""#, "e.g. --pages '2, 4'"),
            ("choose fewer pages with pages=, or skip", "choose fewer pages with --pages, or skip"),
            ("list the directory: path=.", "list the directory: agent-read ."),
            ("`offset` 0 is invalid", "`--offset` 0 is invalid"),
            ("omit `encoding` to detect it", "omit `--encoding` to detect it"),
            (
                r#"add "mode": "block" to read, or send "offset": 3 (without anchor_line)"#,
                "add --mode block to read, or send --offset 3 (without --anchor-line)",
            ),
            (r#"send "mode": "block" with "anchor_line" for"#, "send --mode block with --anchor-line for"),
            (r#"name a file, e.g. "path": "README.md", or"#, "name a file, e.g. agent-read README.md, or"),
            (
                r#"send e.g. {"path": "src/app.py", "mode": "block", "anchor_line": 812}"#,
                "send e.g. agent-read src/app.py --mode block --anchor-line 812",
            ),
            (r#"e.g. {"paths": ["a b", "*.rs"], "limit": 5}."#, "e.g. agent-read many 'a b' '*.rs' --limit 5."),
            ("a byte range (start_byte/end_byte), which", "a byte range (--start-byte/--end-byte), which"),
            ("send a max_files from 1 to 200", "send a --max-files from 1 to 200"),
            ("e.g. region=[0,0,2000,1500] for", "e.g. --region 0,0,2000,1500 for"),
            (r#"e.g. "region": [0, 0, 800, 600]"#, "e.g. --region 0,0,800,600"),
        ];
        for (model, person) in cases {
            assert_eq!(in_flags(model, &[]), person, "{model}");
        }
    }

    #[test]
    fn words_that_only_look_like_fields_stay() {
        for text in [
            "page a directory with offset and limit",
            "the last valid offset is 300 (or -1 for the last line)",
            "already --offset 3 and --start-byte 2",
            r#"an {"unknown": 1} object and a "quoted" word and `code`"#,
            "x_offset=3 and preoffset=4",
            "日本 offset",
        ] {
            assert_eq!(in_flags(text, &[]), text);
        }
    }

    #[test]
    fn the_paths_of_the_request_are_never_reworded() {
        let text = "offset=3: no such file or directory; use offset=1";
        assert_eq!(in_flags(text, &["offset=3"]), "offset=3: no such file or directory; use --offset 1");
        let escaped = ReadError::invalid_param("d/offset=3␛: bad");
        assert_eq!(for_flags(&escaped, &["d/offset=3\u{1b}"]).message, escaped.message, "as errors show the path");
        let error = ReadError::invalid_param("`pages` applies to PDFs only").with_hint("see `pages`");
        let shown = for_flags(&error.with_suggestions(vec!["offset=1".into()]), &["a.txt"]);
        assert_eq!(
            (shown.message.as_str(), shown.hint.as_deref()),
            ("`--pages` applies to PDFs only", Some("see `--pages`"))
        );
        assert_eq!(shown.suggestions, ["offset=1"], "suggested names are names");
    }

    #[test]
    fn a_path_outside_the_roots_names_root() {
        let error = ReadError::new(ErrorCode::OutsideRoot, "/etc/passwd: outside the allowed roots")
            .with_hint("read only paths inside the workspace");
        let shown = for_flags(&error, &["/etc/passwd"]);
        assert!(shown.hint.unwrap().starts_with("to read it, start agent-read with --root DIR"));
        assert_eq!(shown.message, error.message);
    }

    #[test]
    fn shell_words_read_back() {
        assert_eq!(shell_word("src/a.rs"), "src/a.rs");
        assert_eq!(shell_word("it's here"), r"'it'\''s here'");
        assert_eq!(shell_word(""), "''");
    }
}
