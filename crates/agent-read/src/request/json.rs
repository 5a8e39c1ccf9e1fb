//! Untrusted JSON into a request: the one place where every face (the command line, `agent-read many`, the MCP server
//! over stdio and HTTP) turns JSON into a [`ReadRequest`](super::ReadRequest) or a
//! [`ReadManyRequest`](crate::ReadManyRequest).
//!
//! The request types' serde derives are the only statement of their fields (and, through schemars, of the tool
//! schema): which keys exist, their aliases, which are required, and each field's type through the small checks
//! below. This module adds what a model needs from a refusal, which serde's generic errors do not give: the field's
//! name, what was wrong with it and the valid form. `null` counts as absent, for every field.

use crate::error::ReadError;
use schemars::JsonSchema;
use serde::Deserializer;
use serde::de::{self, DeserializeOwned, Visitor};
use serde_json::Value;
use std::fmt;

/// A request type whose JSON this module reads.
pub(crate) trait JsonRequest: DeserializeOwned + JsonSchema {
    /// The next step after text that is not JSON.
    const SYNTAX_HINT: &'static str;
    /// The next step after a value that is not an object, or an object without the required field.
    const EXAMPLE: &'static str;
    /// What the required field is for, as in "missing required field `path`; it names the file or directory to
    /// read".
    const REQUIRED_FOR: &'static str;

    /// The refusal of a key the request does not have; `valid` lists its fields in order.
    fn unknown_field(key: &str, valid: &[&str]) -> ReadError;
}

/// Parses untrusted JSON text: a UTF-8 byte-order mark before it skipped (JSON lets a reader ignore one); malformed
/// JSON, a key named twice in any object and every field problem refused as `INVALID_PARAM`.
pub(crate) fn from_text<T: JsonRequest>(text: &str) -> Result<T, ReadError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ReadError::invalid_param(format!("the request is not valid JSON: {e}")).with_hint(T::SYNTAX_HINT)
    })?;
    if let Some(duplicate) = super::duplicates::first(text.as_bytes()) {
        return Err(duplicate.refusal("the request"));
    }
    from_value(&value)
}

/// Reads a parsed JSON value, naming the field and the valid form on any problem. A parsed value has already lost a
/// key named twice (serde_json keeps the last): a caller holding the text should use [`from_text`], or check it with
/// [`super::duplicates`].
pub(crate) fn from_value<T: JsonRequest>(value: &Value) -> Result<T, ReadError> {
    let Value::Object(map) = value else {
        return Err(ReadError::invalid_param(format!("the request must be a JSON object, not {}", type_name(value)))
            .with_hint(T::EXAMPLE));
    };
    // `null` stands for an absent field; a key no field has stays, null or not, to be refused by name.
    let known = accepted_names::<T>();
    let present = map
        .iter()
        .filter(|(key, value)| !value.is_null() || !known.contains(&key.as_str()))
        .map(|(key, value)| (key.as_str(), value));
    let fields = de::value::MapDeserializer::<_, serde_json::Error>::new(present);
    T::deserialize(fields).map_err(|error| refusal::<T>(&error.to_string(), map))
}

/// The refusal for serde's error `text` on the object `map`: a field check's own (see [`carried`]), or serde's about
/// the object's keys, in words.
fn refusal<T: JsonRequest>(text: &str, map: &serde_json::Map<String, Value>) -> ReadError {
    if let Some(error) = uncarried(text) {
        return error;
    }
    let names = Names::of::<T>();
    // serde's words: "unknown field `KEY`, expected one of `a`, `b`" (or ", expected `a`", or ", there are no fields").
    let unknown = text.strip_prefix("unknown field `").and_then(|rest| {
        let end = rest.rfind("`, expected ").or_else(|| rest.rfind("`, there are no fields"))?;
        Some(&rest[..end])
    });
    if let Some(key) = unknown {
        return T::unknown_field(key, &names.fields);
    }
    if let Some(field) = backticked(text, "missing field `") {
        let null =
            std::iter::once(field).chain(names.aliases.iter().copied()).any(|k| map.get(k).is_some_and(Value::is_null));
        let what = if null { format!("`{field}` is null") } else { format!("missing required field `{field}`") };
        return ReadError::invalid_param(format!("{what}; {}", T::REQUIRED_FOR)).with_hint(T::EXAMPLE);
    }
    if let Some(field) = backticked(text, "duplicate field `") {
        let aliases = names.aliases.join("` or `");
        return ReadError::invalid_param(format!("both `{field}` and `{aliases}` were given; they are the same field"))
            .with_hint(format!("send only `{field}`"));
    }
    ReadError::invalid_param(format!("the request does not fit: {text}")).with_hint(T::EXAMPLE)
}

/// The name in backticks after `prefix` in serde's message `text`.
fn backticked<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.strip_prefix(prefix)?.strip_suffix('`')
}

/// A request type's field names, from its serde derive: the fields in the order declared, and the other spellings
/// accepted (the names serde accepts that the schema does not list).
struct Names {
    fields: Vec<&'static str>,
    aliases: Vec<&'static str>,
}

impl Names {
    fn of<T: JsonRequest>() -> Names {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
        let listed = |name: &str| schema["properties"].get(name).is_some();
        let (fields, aliases) = accepted_names::<T>().iter().partition(|name| listed(name));
        Names { fields, aliases }
    }
}

/// The fields of `T` as the schema lists them, in the order declared.
#[cfg(test)]
pub(crate) fn fields_of<T: JsonRequest>() -> Vec<&'static str> {
    Names::of::<T>().fields
}

/// Every name the derive of `T` accepts for its fields, aliases included, in the order declared: serde hands them to
/// the deserializer along with the struct, and this one asks for nothing more.
fn accepted_names<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Introspect<'a>(&'a mut &'static [&'static str]);

    impl<'de> Deserializer<'de> for Introspect<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only the field names are asked for"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("only the field names are asked for"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Introspect(&mut names));
    names
}

/// One field's value, checked by `check`: a field's own refusal travels through serde's error (which holds text
/// only) to [`refusal`], which takes it back out unchanged.
pub(crate) fn field<'de, D, T>(
    deserializer: D,
    check: impl FnOnce(&Value) -> Result<T, ReadError>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
    check(&value).map_err(|error| de::Error::custom(Carried(error)))
}

/// Marks a field's own refusal in serde's error text: neither a hint nor serde's own messages hold it.
const MARK: char = '\u{0}';

/// A field's refusal as serde's error text: the mark, the hint, the mark, the message.
struct Carried(ReadError);

impl fmt::Display for Carried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{MARK}{}{MARK}{}", self.0.hint.as_deref().unwrap_or(""), self.0.message)
    }
}

/// The refusal [`Carried`] put in `text`, if it did.
fn uncarried(text: &str) -> Option<ReadError> {
    let (hint, message) = text.strip_prefix(MARK)?.split_once(MARK)?;
    let error = ReadError::invalid_param(message.to_string());
    Some(if hint.is_empty() { error } else { error.with_hint(hint.to_string()) })
}

/// A string field.
pub(crate) fn string(key: &str, value: &Value) -> Result<String, ReadError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(ReadError::invalid_param(format!("`{key}` must be a string, not {}", type_name(other)))),
    }
}

/// A boolean field.
pub(crate) fn flag(key: &str, value: &Value) -> Result<bool, ReadError> {
    value.as_bool().ok_or_else(|| {
        ReadError::invalid_param(format!("`{key}` must be true or false, not {}", type_name(value)))
            .with_hint(format!("send \"{key}\": true"))
    })
}

/// An integer field, or an error naming `key`, what it got and the valid form.
pub(crate) fn integer(key: &str, value: &Value) -> Result<i64, ReadError> {
    if let Some(n) = value.as_i64() {
        return Ok(n);
    }
    let got = match value {
        Value::Number(n) if n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() >= 9.2e18) => {
            format!("{n}, which is out of range")
        }
        Value::Number(n) => format!("the fraction {n}"),
        Value::String(s) => format!("the string \"{}\"", truncate_for_message(s)),
        other => type_name(other).to_string(),
    };
    Err(ReadError::invalid_param(format!("`{key}` must be an integer, not {got}"))
        .with_hint(format!("send a JSON number without quotes or fraction, e.g. \"{key}\": 100")))
}

/// How a JSON value's type is named in error messages (`an array`).
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Keeps untrusted text short inside an error message.
pub(crate) fn truncate_for_message(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
