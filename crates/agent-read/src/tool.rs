//! The tool as a model meets it: one name, one description, one parameter schema — the single source for every
//! face (`--schema`, the MCP tool list, library users wiring it into their own harness).
//!
//! The parameter schema is generated from [`ReadRequest`], so the schema, the docs and the parser cannot drift. The
//! second tool, `read_many` (several files in one call), is defined here the same way, from [`ReadManyRequest`].
//!
//! Every schema stays inside the subset that every function-calling API and MCP client accepts (Gemini's
//! OpenAPI-style declarations, OpenAI's and Anthropic's tools, strict JSON Schema validators): one `type` per
//! schema, never `null`; an optional field is simply left out of `required` (absent means the default); no `$ref`,
//! `anyOf`/`oneOf`/`allOf`, `const` or `format`; string `enum`s; `additionalProperties: false` on the request
//! objects, which the parsers enforce anyway.

use crate::many::ReadManyRequest;
use crate::request::ReadRequest;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde_json::{Value, json};

/// The tool's name.
pub const NAME: &str = "read";

/// The tool's description, written to the six-point checklist: what it does, what it needs, what it does not do,
/// side effects, the output envelope, and when to prefer it.
pub const DESCRIPTION: &str = "\
Read a text file or list a directory inside the workspace, one bounded window at a time.

Requires: `path`, relative to the workspace root (or absolute inside it). Optional: `offset` (1-based first line; \
negative counts from the end, -100 = last 100 lines), `limit` (lines, default 2000), or `start_byte`/`end_byte` for \
a byte range (e.g. the rest of a very long line), `pages` for PDF pages, workbook sheets, PPTX slides and EPUB \
chapters (\"3\", \"1-5\", \
\"2,4-6\", \"8-\"), and \
`encoding` to override detection. `mode: \"block\"` with `anchor_line` returns the definition (function, \
method, class) around that line instead, found from indentation alone (`levels: 2` for the one around that), its \
header kept in view with the line when it is longer than `limit`, and the exact call that widens it. `find` (a \
regular expression, `(?i)` to ignore case) returns the matching lines with their numbers and `context` lines around \
them (default 2), `limit` matches (default 50) from line `offset`, and the exact call for the next ones (in a huge \
file it stops once they are shown, like grep -m).

Images (PNG, JPEG, GIF, WebP) come back as an image attachment, downscaled when large: the output states the scale, \
and a point (x, y) in the attachment is (x ÷ scale, y ÷ scale) in the original. To see small text or detail, send \
`region: [x0, y0, x1, y1]` in the original's pixels (left, top, right, bottom; right and bottom excluded): that part \
comes back at full resolution (a point (x, y) in it is (x0 + x, y0 + y) in the original); a downscaled image's \
footer gives such a call. PDFs come back as text, page by page. Word, Excel, PowerPoint and OpenDocument files (DOCX, \
ODT, XLSX, XLS, ODS, PPTX), EPUB books and HTML pages come back as Markdown-like text (headings, lists, pipe tables, \
links; a unit per sheet, slide or chapter; no script or hidden content). Jupyter notebooks come back as their cells \
(source, then text outputs), paged like any \
text. Compressed files (gzip, zstd, xz, bzip2) come back as the text they hold, paged by lines (byte ranges address \
the compressed bytes). Archives (zip, tar, tar.gz, tar.zst) list their members like a directory; a path through one \
(\"logs.zip/dir/b.log\") reads a member like a file. A CSV or TSV window that starts below the header repeats it first, marked \
`⟨header row, line 1⟩`.

Does not: modify anything, read outside the workspace roots, or show other binary files as text (it names their \
type instead, e.g. \"BINARY: ELF executable\"). Files of any size are fine: only the window is read into the answer.

Side effects: none; read-only and idempotent.

Output: each line as `N: text` (in a byte range, `@OFFSET: text`); nothing in a file starts a line of its own. \
Control and invisible characters are shown escaped, as `␛` (ESC) or `⟨U+202E⟩`, and counted in the footer; notebook \
PDF, sheet and slide text stands behind a `│ ` gutter. Lines over 2000 characters (the default limit) are cut and marked with the \
exact start_byte/end_byte that hold the rest. The whole output stays under 50 KiB by default. The last line is always a footer such as \
`(lines 1-2000 of 48213 · 1.8 MiB · next: offset=2001)` or `(... · end of file)`, with notices about encoding, \
line endings or cut lines; in a huge file the total may be a lower bound, `of at least 2460`, until a tail \
(offset=-100) counts every line. Directories list one entry per line, subdirectories ending in `/`, sorted, paged the \
same way. Errors start with a code (NOT_FOUND, INVALID_RANGE, BINARY, ...) and say what to do next, including \
near-miss file names.

Prefer it over shell commands (cat, head, tail, sed -n) for reading files: it pages huge files, reports the \
encoding honestly, and tells you the exact next call.";

/// What the description adds when the tool is served in a session with repeat-read stubs (the MCP server).
pub const REPEAT_READS: &str = "\n\nRepeats: reading the same path and window again while the file is unchanged \
answers a one-line notice (\"unchanged since your read at …\") instead of the content; send `reread: true` to get \
the content again.";

/// Whether the tool is described for one-shot reads or for a session that answers repeats with a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Every read stands alone (the command line, a plain `Reader`): `reread` is not offered.
    OneShot,
    /// Reads in a session that answers exact repeats with a notice: `reread` is offered and explained.
    WithRepeatStubs,
}

/// Tool shapes `--schema-format` can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

/// The JSON Schema of the request for one-shot reads (draft 2020-12 keywords, no `$schema` or `title` noise).
pub fn parameters_schema() -> Value {
    parameters_schema_for(Served::OneShot)
}

/// The JSON Schema of the request as served: `reread` only where repeats are answered with a notice.
pub fn parameters_schema_for(served: Served) -> Value {
    let mut schema = request_schema::<ReadRequest>();
    if served == Served::OneShot
        && let Some(Value::Object(properties)) = schema.get_mut("properties")
    {
        properties.remove("reread");
    }
    schema
}

/// The portable schema of a request type (see the module's doc): no `$schema`, and no root `title` or
/// `description` — the type's name and its doc comment are for developers; the tool's description speaks to the model.
fn request_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
            settings.transforms.push(Box::new(RecursiveTransform(portable)));
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.remove("description");
    }
    schema
}

/// Rewrites what `schemars` derives for an `Option<T>` field (`"type": [T, "null"]`, and `null` among an enum's values)
/// to plain `T`: the field is optional by being absent from `required`, and a request that sends `null` is read as if
/// it had left the field out. `format` (`int64` on every integer) goes too: it tells a model nothing, and several
/// function-calling APIs accept only a few formats. A description's line breaks are those of the doc comment it came
/// from, so single ones become spaces (paragraph breaks stay).
fn portable(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else { return };
    if let Some(Value::String(text)) = map.get_mut("description") {
        *text = text.split("\n\n").map(|paragraph| paragraph.replace('\n', " ")).collect::<Vec<_>>().join("\n\n");
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            map.insert("type".to_string(), single);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    map.remove("format");
}

/// The description as served.
pub fn description_for(served: Served) -> String {
    match served {
        Served::OneShot => DESCRIPTION.to_string(),
        Served::WithRepeatStubs => format!("{DESCRIPTION}{REPEAT_READS}"),
    }
}

/// The JSON Schema of a result (the MCP `outputSchema`): every result has `ok`, `kind` and `output`; the rest
/// depends on the kind (see the README's "Results").
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "description": "false only for errors"},
            "kind": {
                "type": "string",
                "enum": ["text", "directory", "attachment", "unchanged", "error"],
                "description": "`unchanged`: in a session, an exact repeat of an unchanged read, answered in one line"
            },
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

/// The tool definition for one-shot reads in the given shape.
pub fn definition(format: SchemaFormat) -> Value {
    definition_for(format, Served::OneShot)
}

/// The tool definition as served, in the given shape.
pub fn definition_for(format: SchemaFormat, served: Served) -> Value {
    shape(NAME, "Read file or directory", &description_for(served), parameters_schema_for(served), format)
}

/// The `read_many` tool definition in the given shape (MCP: without `outputSchema`, see [`many_output_schema`]).
pub fn many_definition(format: SchemaFormat) -> Value {
    shape(MANY_NAME, "Read several files", MANY_DESCRIPTION, many_parameters_schema(), format)
}

/// One read-only tool in the given shape.
fn shape(name: &str, title: &str, description: &str, parameters: Value, format: SchemaFormat) -> Value {
    match format {
        SchemaFormat::Plain => json!({"name": name, "description": description, "parameters": parameters}),
        SchemaFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}
        }),
        SchemaFormat::Anthropic => json!({"name": name, "description": description, "input_schema": parameters}),
        SchemaFormat::Mcp => json!({
            "name": name,
            "title": title,
            "description": description,
            "inputSchema": parameters,
            "annotations": {
                "title": title,
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            }
        }),
    }
}

/// The `read_many` tool's name.
pub const MANY_NAME: &str = "read_many";

/// The `read_many` tool's description, written to the same six-point checklist as [`DESCRIPTION`].
pub const MANY_DESCRIPTION: &str = "\
Read several files at once: a list of paths and globs (e.g. `src/**/*.rs`), one answer, one shared output budget.

Requires: `paths`, 1 to 200 entries, each a file, a directory or a glob, relative to the workspace root (or absolute \
inside it). Globs: `*` within a name, `**` across directories, `?`, `[abc]`, `{a,b}`; they match files only, sorted \
by path, follow .gitignore/.ignore files, and skip hidden names unless the pattern names them (`.github/*.yml`). \
Optional: `limit` (lines per file, default 2000) and `max_files` (files read at most, default 50, up to 200). \
With `find` (a regular expression) and `context`, it searches every file like grep: only files with matches are \
shown, each with its matching lines, numbered, and the rest are counted.

Does not: modify anything, read outside the workspace roots, name files the read policy protects (a glob's \
protected matches are only counted as withheld), or inline images and PDF documents (they are listed as skipped, \
with the `read` call that returns them as attachments). A file matched twice is read once.

Side effects: none; read-only and idempotent.

Output: each file under a header line `==> path <==`, followed by exactly what `read` shows for it: numbered lines \
ending with the footer and its next call (continue that file with `read`, the header's path and the footer's \
offset), a directory listing, or an error (NOT_FOUND with near misses, BINARY, ...). The whole answer stays under \
50 KiB by default, shared fairly: small files come whole, larger ones split what is left. Then a `--- skipped ---` \
list (what, why, and the exact next call: a glob that matched nothing, files beyond max_files or beyond the budget, \
images), and last a summary line such as `(read_many: 3 shown · 1 skipped · 12.3 KiB of the 50.0 KiB cap)`.

Prefer it over several `read` calls to look at a handful of files or a module at once (sources, configs, tests); \
prefer `read` to page through one large file.";

/// The JSON Schema of a `read_many` request, generated from [`ReadManyRequest`].
pub fn many_parameters_schema() -> Value {
    request_schema::<ReadManyRequest>()
}

/// The JSON Schema of a `read_many` result (its MCP `outputSchema`; see the README's "Results").
pub fn many_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "description": "false only when the request itself was rejected"},
            "kind": {"type": "string", "enum": ["many", "error"]},
            "output": {"type": "string", "description": "the text the model should see"},
            "files": {
                "type": "array",
                "items": {"type": "object"},
                "description": "one envelope per file shown: path, ok, kind, and meta or error_code"
            },
            "skipped": {
                "type": "array",
                "items": {"type": "object"},
                "description": "what was not shown: path or pattern, reason, count, error_code and next when known"
            },
            "meta": {"type": "object", "description": "files_read, files_failed, files_skipped, withheld, bytes, cap"},
            "error": {"type": "string"},
            "error_code": {"type": "string"},
            "hint": {"type": "string", "description": "the next step"}
        },
        "required": ["ok", "kind", "output"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::json::fields_of;

    #[test]
    fn schema_properties_are_exactly_the_parsed_fields() {
        let properties = |served| {
            let schema = parameters_schema_for(served);
            assert_eq!(schema["required"], json!(["path"]));
            assert_eq!(schema["additionalProperties"], json!(false));
            let mut props: Vec<String> = schema["properties"].as_object().unwrap().keys().cloned().collect();
            props.sort_unstable();
            props
        };
        let mut expected: Vec<String> = fields_of::<ReadRequest>().iter().map(|f| f.to_string()).collect();
        expected.sort_unstable();
        assert_eq!(properties(Served::WithRepeatStubs), expected);
        // One-shot faces do not offer `reread`, which only means something in a session.
        expected.retain(|f| f != "reread");
        assert_eq!(properties(Served::OneShot), expected);
        assert_eq!(parameters_schema(), parameters_schema_for(Served::OneShot));
    }

    #[test]
    fn the_session_description_explains_repeats() {
        assert_eq!(description_for(Served::OneShot), DESCRIPTION);
        let served = description_for(Served::WithRepeatStubs);
        assert!(served.starts_with(DESCRIPTION) && served.contains("`reread: true`"), "{served}");
        let mcp = definition_for(SchemaFormat::Mcp, Served::WithRepeatStubs);
        assert_eq!(mcp["description"], served);
        assert!(mcp["inputSchema"]["properties"]["reread"].is_object());
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
    fn read_many_schema_is_its_request_type() {
        let schema = many_parameters_schema();
        let mut props: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        props.sort_unstable();
        let mut expected = fields_of::<ReadManyRequest>();
        expected.sort_unstable();
        assert_eq!(props, expected);
        assert_eq!(schema["required"], json!(["paths"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(schema["properties"]["paths"]["maxItems"], crate::many::MAX_PATHS);
        assert_eq!(schema["properties"]["paths"]["minItems"], 1);
        let mcp = many_definition(SchemaFormat::Mcp);
        assert_eq!(
            (mcp["name"].as_str(), mcp["annotations"]["idempotentHint"].as_bool()),
            (Some("read_many"), Some(true))
        );
        assert_eq!(many_definition(SchemaFormat::Anthropic)["input_schema"], schema);
        let rejected = crate::ReadManyResult::Error(crate::ReadError::invalid_param("x"));
        let value = serde_json::to_value(&rejected).unwrap();
        assert!(many_output_schema()["properties"]["kind"]["enum"].as_array().unwrap().contains(&value["kind"]));
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

    #[test]
    fn the_schema_offers_the_modes_inline() {
        let schema = parameters_schema();
        assert_eq!(schema["properties"]["mode"]["enum"], json!(["lines", "block"]));
        assert_eq!(schema["properties"]["anchor_line"]["minimum"], 1);
        assert!(schema.get("$defs").is_none(), "no references for model APIs to trip on: {schema}");
    }
}
