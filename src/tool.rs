//! The tool as a model meets it: one name, one description, one parameter schema — the single source for every
//! face (`--schema`, the MCP tool list, library users wiring it into their own harness).
//!
//! The parameter schema is generated from [`ReadRequest`], so the schema, the docs and the parser cannot drift.

use crate::request::ReadRequest;
use serde_json::{Value, json};

/// The tool's name.
pub const NAME: &str = "read";

/// The tool's description, written to the six-point checklist: what it does, what it needs, what it does not do,
/// side effects, the output envelope, and when to prefer it.
pub const DESCRIPTION: &str = "\
Read a text file or list a directory inside the workspace, one bounded window at a time.

Requires: `path`, relative to the workspace root (or absolute inside it). Optional: `offset` (1-based first line; \
negative counts from the end, -100 = last 100 lines), `limit` (lines, default 2000), or `start_byte`/`end_byte` for \
a byte range (e.g. the rest of a very long line), `pages` for PDFs (\"3\", \"1-5\", \"2,4-6\", \"8-\"), and \
`encoding` to override detection. `mode: \"block\"` with `anchor_line` returns the indentation block (function, \
class, section) around that line instead, found from indentation alone, with the exact call that widens it to the \
enclosing block.

Images (PNG, JPEG, GIF, WebP) come back as an image attachment, downscaled when large (the output states the scale \
to map coordinates back). PDFs come back as text, page by page. Jupyter notebooks come back as their cells \
(source, then text outputs), paged like any text.

Does not: modify anything, read outside the workspace roots, or show other binary files as text (it names their \
type instead, e.g. \"BINARY: ELF executable\"). Files of any size are fine: only the window is read into the answer.

Side effects: none; read-only and idempotent.

Output: each line as `N: text`. Lines over 2000 characters (the default limit) are cut and marked with the exact start_byte/end_byte \
that hold the rest. The whole output stays under 50 KiB by default. The last line is always a footer such as \
`(lines 1-2000 of 48213 · 1.8 MiB · next: offset=2001)` or `(... · end of file)`, with notices about encoding, \
line endings or cut lines. Directories list one entry per line, subdirectories ending in `/`, sorted, paged the \
same way. Errors start with a code (NOT_FOUND, INVALID_RANGE, BINARY, ...) and say what to do next, including \
near-miss file names.

Prefer it over shell commands (cat, head, tail, sed -n) for reading files: it pages huge files, reports the \
encoding honestly, and tells you the exact next call.";

/// Tool shapes `--schema-format` can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaFormat {
    /// `{name, description, parameters}`.
    Plain,
    /// OpenAI function tool: `{type: "function", function: {name, description, parameters}}`.
    OpenAi,
    /// Anthropic tool: `{name, description, input_schema}`.
    Anthropic,
    /// MCP tool: `{name, title, description, inputSchema, annotations}`.
    Mcp,
}

impl SchemaFormat {
    /// Parses `openai`, `anthropic`, `mcp` or `plain`.
    pub fn parse(name: &str) -> Option<SchemaFormat> {
        match name.to_ascii_lowercase().as_str() {
            "plain" => Some(SchemaFormat::Plain),
            "openai" => Some(SchemaFormat::OpenAi),
            "anthropic" => Some(SchemaFormat::Anthropic),
            "mcp" => Some(SchemaFormat::Mcp),
            _ => None,
        }
    }
}

/// The JSON Schema of the request (draft 2020-12 keywords, no `$schema` or `title` noise).
pub fn parameters_schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(ReadRequest)).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// The JSON Schema of a result (the MCP `outputSchema`): every result has `ok`, `kind` and `output`; the rest
/// depends on the kind (see the README's "Results").
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "description": "false only for errors"},
            "kind": {"type": "string", "enum": ["text", "directory", "attachment", "error"]},
            "output": {"type": "string", "description": "the text the model should see"},
            "meta": {"type": "object", "description": "what the window shows and what it left out"},
            "entries": {"type": "array", "items": {"type": "object"}, "description": "directory entries"},
            "attachments": {
                "type": "array",
                "items": {"type": "object"},
                "description": "images (and PDFs as documents): mime, width, height, size_bytes; data (base64) outside MCP"
            },
            "error": {"type": "string"},
            "error_code": {"type": "string"},
            "hint": {"type": "string", "description": "the next step"},
            "suggestions": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["ok", "kind", "output"]
    })
}

/// The tool definition in the given shape.
pub fn definition(format: SchemaFormat) -> Value {
    let parameters = parameters_schema();
    match format {
        SchemaFormat::Plain => json!({"name": NAME, "description": DESCRIPTION, "parameters": parameters}),
        SchemaFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": NAME, "description": DESCRIPTION, "parameters": parameters}
        }),
        SchemaFormat::Anthropic => json!({"name": NAME, "description": DESCRIPTION, "input_schema": parameters}),
        SchemaFormat::Mcp => json!({
            "name": NAME,
            "title": "Read file or directory",
            "description": DESCRIPTION,
            "inputSchema": parameters,
            "annotations": {
                "title": "Read file or directory",
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::FIELDS;

    #[test]
    fn schema_properties_are_exactly_the_parsed_fields() {
        let schema = parameters_schema();
        let props: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = FIELDS.to_vec();
        expected.sort_unstable();
        let mut props_sorted = props.clone();
        props_sorted.sort_unstable();
        assert_eq!(props_sorted, expected);
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn output_schema_requires_the_envelope_every_result_has() {
        let schema = output_schema();
        assert_eq!(schema["required"], json!(["ok", "kind", "output"]));
        let result = crate::ReadResult::Error(crate::ReadError::invalid_param("x"));
        let value = serde_json::to_value(&result).unwrap();
        for key in schema["properties"].as_object().unwrap().keys() {
            if let Some(field) = value.get(key) {
                let expected = schema["properties"][key]["type"].as_str().unwrap();
                let actual = match field {
                    Value::Bool(_) => "boolean",
                    Value::String(_) => "string",
                    Value::Array(_) => "array",
                    Value::Object(_) => "object",
                    _ => "other",
                };
                assert_eq!(actual, expected, "{key}");
            }
        }
    }

    #[test]
    fn formats_wrap_the_same_schema() {
        let plain = definition(SchemaFormat::Plain);
        assert_eq!(definition(SchemaFormat::OpenAi)["function"]["parameters"], plain["parameters"]);
        assert_eq!(definition(SchemaFormat::Anthropic)["input_schema"], plain["parameters"]);
        assert_eq!(definition(SchemaFormat::Mcp)["annotations"]["readOnlyHint"], true);
        assert_eq!(SchemaFormat::parse("OpenAI"), Some(SchemaFormat::OpenAi));
        assert_eq!(SchemaFormat::parse("xml"), None);
    }
}
