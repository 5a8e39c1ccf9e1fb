//! Duplicate keys in untrusted JSON text.
//!
//! JSON parsers disagree on an object that names a key twice: serde_json (and so every parsed [`serde_json::Value`])
//! keeps the last, others keep the first. So `{"path": ".env", "path": "a.txt"}` reads `a.txt` while a harness that
//! approved the request by its first `path` saw `.env`. Every face refuses such a request instead of picking one.
//!
//! The check runs over the raw text, before or beside the real parse (a parsed value has already lost the
//! duplicate): one pass of serde_json's own tokenizer that builds nothing but the keys of the object it is in, so it
//! costs a fraction of the parse it guards. Keys compare after unescaping (`"pa\u0074h"` is `path`).

use crate::error::ReadError;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// A key that appears more than once in one JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The key, as the text names it (unescaped).
    pub key: String,
    /// Where the object holding it is: empty for the outermost object, else its keys and indices from there, as in
    /// `params.arguments` or `paths[0]`.
    pub within: String,
}

impl DuplicateKey {
    /// Where the key is, in words: `the request`, or `` `paths[0]` `` (relative to what `whole` names).
    pub fn place(&self, whole: &str) -> String {
        if self.within.is_empty() { whole.to_string() } else { format!("`{}`", self.within) }
    }

    /// The key as it may be quoted in a message: at most 40 characters, control characters replaced.
    pub fn shown_key(&self) -> String {
        shown(&self.key)
    }

    /// The `INVALID_PARAM` refusing a request that holds this duplicate; `whole` names what the path is relative to
    /// (`the request`, `the arguments`).
    pub fn refusal(&self, whole: &str) -> ReadError {
        ReadError::invalid_param(format!(
            "the key `{}` appears more than once in {}; JSON readers disagree on which one counts, so the request is \
             refused",
            self.shown_key(),
            self.place(whole)
        ))
        .with_hint("send each key once")
    }
}

/// What [`scan`] found: the first duplicate key (in the order of the text) inside the object at a given path, and the
/// first anywhere else.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Duplicates {
    /// The first duplicate inside the object at the path asked for (or beneath it); its `within` is relative to it.
    pub inside: Option<DuplicateKey>,
    /// The first duplicate anywhere else; its `within` is relative to the whole text.
    pub elsewhere: Option<DuplicateKey>,
}

impl Duplicates {
    /// Whether no key appears twice.
    pub fn is_empty(&self) -> bool {
        self.inside.is_none() && self.elsewhere.is_none()
    }
}

/// The first duplicate key anywhere in `json`; `None` when every object names each key once, or when `json` is not
/// JSON at all (the real parse then says what is wrong, and nothing was found before the fault).
pub fn first(json: &[u8]) -> Option<DuplicateKey> {
    scan(json, &[]).inside
}

/// The duplicate keys of `json`, told apart by whether they lie inside the object at the keys `apart` (say
/// `["params", "arguments"]`: a tool's arguments inside a JSON-RPC message) or elsewhere. With `apart` empty the
/// whole text is inside. Stops at the first duplicate elsewhere; nothing is reported past a syntax error.
pub fn scan(json: &[u8], apart: &[&str]) -> Duplicates {
    let mut state = Scan { apart, path: Vec::new(), found: Duplicates::default() };
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    // An error is the text's own fault (reported by the real parse) or the early stop: what was found stands.
    let _ = Node(&mut state).deserialize(&mut deserializer);
    state.found
}

/// One step of the path from the outermost value to where the scan is.
#[derive(Debug)]
enum Step<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

struct Scan<'a, 'de> {
    apart: &'a [&'a str],
    path: Vec<Step<'de>>,
    found: Duplicates,
}

impl Scan<'_, '_> {
    /// Records `key`, repeated in the object at the current path; `true` when the scan can stop.
    fn repeated(&mut self, key: &str) -> bool {
        let inside = self.path.len() >= self.apart.len()
            && self.apart.iter().zip(&self.path).all(|(want, step)| matches!(step, Step::Key(k) if k == want));
        let (slot, skip) =
            if inside { (&mut self.found.inside, self.apart.len()) } else { (&mut self.found.elsewhere, 0) };
        if slot.is_none() {
            *slot = Some(DuplicateKey { key: key.to_string(), within: render_path(&self.path[skip..]) });
        }
        self.found.elsewhere.is_some() || (self.apart.is_empty() && self.found.inside.is_some())
    }
}

/// `params.arguments`, `paths[0]`: keys joined by dots, indices in brackets, each key shortened.
fn render_path(steps: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&shown(key));
            }
            Step::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// Untrusted text kept short and on one line inside a message.
fn shown(text: &str) -> String {
    crate::request::truncate_for_message(text).replace(|c: char| c.is_control(), "\u{FFFD}")
}

/// The keys an object has named so far: a short list searched in order, a set once it grows (so that an object of a
/// million keys costs no more than its parse).
enum Seen<'de> {
    Few(Vec<Cow<'de, str>>),
    Many(HashSet<Cow<'de, str>>),
}

impl<'de> Seen<'de> {
    const FEW: usize = 16;

    /// Adds `key`; `false` when it was there already.
    fn insert(&mut self, key: Cow<'de, str>) -> bool {
        match self {
            Seen::Few(keys) if keys.contains(&key) => false,
            Seen::Few(keys) if keys.len() < Self::FEW => {
                keys.push(key);
                true
            }
            Seen::Few(keys) => {
                let mut set: HashSet<Cow<'de, str>> = keys.drain(..).collect();
                set.insert(key);
                *self = Seen::Many(set);
                true
            }
            Seen::Many(set) => set.insert(key),
        }
    }
}

/// Any JSON value, walked for its objects' keys.
struct Node<'s, 'a, 'de>(&'s mut Scan<'a, 'de>);

/// The early stop, once the scan knows all it needs.
const STOP: &str = "duplicate key found";

impl<'de> DeserializeSeed<'de> for Node<'_, '_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            self.0.path.push(Step::Index(index));
            let more = seq.next_element_seed(Node(self.0));
            self.0.path.pop();
            if more?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = Seen::Few(Vec::new());
        while let Some(key) = map.next_key_seed(Key)? {
            if !seen.insert(key.clone()) && self.0.repeated(&key) {
                return Err(de::Error::custom(STOP));
            }
            self.0.path.push(Step::Key(key));
            let value = map.next_value_seed(Node(self.0));
            self.0.path.pop();
            value?;
        }
        Ok(())
    }
}

/// An object's key, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(key: &str, within: &str) -> Option<DuplicateKey> {
        Some(DuplicateKey { key: key.into(), within: within.into() })
    }

    #[test]
    fn finds_a_repeated_key_at_any_depth_and_says_where() {
        assert_eq!(first(br#"{"path": ".env", "path": "a.txt"}"#), dup("path", ""));
        assert_eq!(first(br#"{"paths": [{"a": 1}, {"b": 1, "b": 2}]}"#), dup("b", "paths[1]"));
        assert_eq!(first(br#"{"x": {"y": {"z": 1, "z": 1}}}"#), dup("z", "x.y"));
        assert_eq!(first(br#"[[{"k": 1, "k": null}]]"#), dup("k", "[0][0]"));
    }

    #[test]
    fn keys_compare_after_unescaping() {
        assert_eq!(first(br#"{"path": "a", "pa\u0074h": "b"}"#), dup("path", ""));
        assert_eq!(first(br#"{"p\"": 1, "p\u0022": 2}"#), dup("p\"", ""));
        assert_eq!(first("{\"é\": 1, \"\\u00e9\": 2}".as_bytes()), dup("é", ""));
    }

    #[test]
    fn distinct_keys_repeated_values_and_broken_text_find_nothing() {
        for clean in [
            &br#"{"path": "a", "offset": 1, "limit": 2}"#[..],
            br#"{"a": {"k": 1}, "b": {"k": 1}}"#,
            br#"[{"k": 1}, {"k": 1}]"#,
            br#"{"Path": 1, "path": 2}"#,
            b"",
            b"not json",
            br#"{"a": 1, "b""#,
        ] {
            assert_eq!(first(clean), None, "{}", String::from_utf8_lossy(clean));
        }
        // Found before the fault: still reported.
        assert_eq!(first(br#"{"a": 1, "a": 2, oops"#), dup("a", ""));
        assert_eq!(first(br#"{"a": 1, "a""#), dup("a", ""));
    }

    #[test]
    fn an_object_of_many_keys_is_checked_by_set() {
        let mut text = String::from("{");
        for i in 0..5000 {
            text.push_str(&format!("\"k{i}\": {i},"));
        }
        text.push_str("\"k4321\": 0}");
        assert_eq!(first(text.as_bytes()), dup("k4321", ""));
    }

    #[test]
    fn duplicates_inside_a_subtree_are_told_from_those_elsewhere() {
        let apart = ["params", "arguments"];
        let call = |text: &str| scan(text.as_bytes(), &apart);
        let inside = call(r#"{"params": {"name": "read", "arguments": {"path": ".env", "path": "a"}}}"#);
        assert_eq!(inside, Duplicates { inside: dup("path", ""), elsewhere: None });
        let nested = call(r#"{"params": {"arguments": {"paths": [{"x": 1, "x": 2}]}}}"#);
        assert_eq!(nested.inside, dup("x", "paths[0]"));
        let twice = call(r#"{"params": {"arguments": {"path": "a"}, "arguments": {"path": "b"}}}"#);
        assert_eq!(twice, Duplicates { inside: None, elsewhere: dup("arguments", "params") });
        let name = call(r#"{"params": {"name": "read", "name": "read_many", "arguments": {}}}"#);
        assert_eq!(name.elsewhere, dup("name", "params"));
        let id = call(r#"{"id": 1, "id": 2, "params": {"arguments": {"a": 1, "a": 2}}}"#);
        assert_eq!(id, Duplicates { inside: None, elsewhere: dup("id", "") }, "the scan stops at the envelope's");
        let both = call(r#"{"params": {"arguments": {"a": 1, "a": 2}}, "method": "x", "method": "y"}"#);
        assert_eq!(both, Duplicates { inside: dup("a", ""), elsewhere: dup("method", "") });
    }

    #[test]
    fn long_or_odd_keys_are_shown_short_and_on_one_line() {
        let key = format!("a\n{}", "x".repeat(100));
        let text = format!(r#"{{"{k}": 1, "{k}": 2}}"#, k = key.replace('\n', "\\n"));
        let found = first(text.as_bytes()).unwrap();
        assert_eq!(found.key, key);
        let shown = found.shown_key();
        assert!(shown.starts_with("a\u{FFFD}x") && shown.ends_with('…') && shown.chars().count() == 41, "{shown}");
        assert_eq!(found.place("the request"), "the request");
    }
}
