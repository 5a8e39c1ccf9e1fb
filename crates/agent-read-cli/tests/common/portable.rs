//! The subset of JSON Schema every tool schema must stay inside: what Gemini's function declarations (an OpenAPI 3.0
//! subset), OpenAI's and Anthropic's tools, strict validators and MCP clients that read `type` as one string all
//! accept. Anything else is reported, so that a construct some client refuses cannot slip into a schema unnoticed.

use serde_json::Value;

/// Where a schema is served: a tool's input (parameters) or its output (MCP `outputSchema`, which only validating
/// clients read, so an object there may leave its fields open).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Input,
    Output,
}

/// Every construct of `schema` outside the portable subset, each as `JSON-pointer: problem`; empty when portable.
pub fn problems(schema: &Value, kind: Kind) -> Vec<String> {
    let mut found = Vec::new();
    if kind == Kind::Input && schema["type"] != "object" {
        found.push("/: a tool's input schema must be an object".to_string());
    }
    walk(schema, "", kind, &mut found);
    found
}

fn walk(node: &Value, at: &str, kind: Kind, found: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        found.push(format!("{at}/: a schema must be an object, not {node}"));
        return;
    };
    let ty = match map.get("type") {
        Some(Value::String(ty))
            if ["object", "array", "string", "integer", "number", "boolean"].contains(&ty.as_str()) =>
        {
            ty.as_str()
        }
        Some(other) => {
            found.push(format!("{at}/type: one of object, array, string, integer, number, boolean, not {other}"));
            return;
        }
        None => {
            found.push(format!("{at}/: no `type`"));
            return;
        }
    };
    for (key, value) in map {
        let here = format!("{at}/{key}");
        match (key.as_str(), ty) {
            ("type", _) => {}
            ("description", _) if value.is_string() => {}
            ("default", "boolean") if value.is_boolean() => {}
            ("enum", "string") => enum_values(value, &here, found),
            ("minimum" | "maximum", "integer" | "number") if value.is_number() => {}
            ("minItems" | "maxItems", "array") if value.is_u64() => {}
            ("items", "array") => walk(value, &here, kind, found),
            ("properties", "object") => match value.as_object() {
                Some(properties) => {
                    for (name, property) in properties {
                        walk(property, &format!("{here}/{name}"), kind, found);
                    }
                }
                None => found.push(format!("{here}: must be an object")),
            },
            ("required", "object") => required(map, value, &here, found),
            // Gemini's `parametersJsonSchema`, OpenAI's strict mode and every validator read it; the parsers refuse
            // unknown fields whatever the schema says.
            ("additionalProperties", "object") if value == &Value::Bool(false) => {}
            _ => found.push(format!("{here}: `{key}` is outside the portable subset (in a {ty} schema: {value})")),
        }
    }
    if kind == Kind::Input
        && ty == "object"
        && map.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty())
    {
        found.push(format!("{at}/: an object in an input schema must name its properties"));
    }
    if ty == "array" && !map.contains_key("items") {
        found.push(format!("{at}/: an array must say what its items are"));
    }
}

fn enum_values(value: &Value, at: &str, found: &mut Vec<String>) {
    match value.as_array() {
        Some(values) if !values.is_empty() && values.iter().all(Value::is_string) => {}
        _ => found.push(format!("{at}: an enum must list strings only (no null), not {value}")),
    }
}

fn required(map: &serde_json::Map<String, Value>, value: &Value, at: &str, found: &mut Vec<String>) {
    let properties = map.get("properties").and_then(Value::as_object);
    let names = value.as_array().map(|names| names.iter().map(Value::as_str).collect::<Vec<_>>());
    match (names, properties) {
        (Some(names), Some(properties)) if names.iter().all(|n| n.is_some_and(|n| properties.contains_key(n))) => {}
        _ => found.push(format!("{at}: must list names of declared properties, not {value}")),
    }
}

/// The walker itself refuses what schemars derives for optional fields by default, and what other generators emit.
pub fn self_check() {
    let refused = [
        serde_json::json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}),
        serde_json::json!({"type": "object", "properties": {"m": {"type": "string", "enum": ["a", null]}}}),
        serde_json::json!({"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}),
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int64"}}}),
        serde_json::json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "$defs": {}}),
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "nullable": true}}}),
        serde_json::json!({"type": "object", "properties": {"o": {"type": "object"}}}),
    ];
    for schema in refused {
        assert!(!problems(&schema, Kind::Input).is_empty(), "the walker let {schema} through");
    }
    let fine = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]});
    assert_eq!(problems(&fine, Kind::Input), Vec::<String>::new());
}
