//! `region`'s part of a request: a rectangle of an image, in the original image's pixels, to return at its native
//! resolution. Its shape is checked here; whether it lies inside the image is checked once the image's header says
//! how large it is (`media/image/`), so that the refusal can name the size.

use super::{ReadRequest, Window, json};
use crate::error::ReadError;
use serde_json::Value;

/// How a region is written in JSON, for hints.
pub const REGION_EXAMPLE: &str = r#""region": [0, 0, 800, 600]"#;

/// A rectangle of an image: columns `x0..x1` and rows `y0..y1` (the ends excluded), as the request gave it. It may
/// be empty or reach past the image: the image read says so, naming the image's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PixelRegion {
    /// Left edge: the first column.
    pub x0: u32,
    /// Top edge: the first row.
    pub y0: u32,
    /// Right edge: one past the last column.
    pub x1: u32,
    /// Bottom edge: one past the last row.
    pub y1: u32,
}

impl PixelRegion {
    /// Whether it holds no pixel (an edge at or before its opposite one).
    pub fn is_empty(&self) -> bool {
        self.x1 <= self.x0 || self.y1 <= self.y0
    }

    /// Columns across (0 when empty).
    pub fn width(&self) -> u32 {
        self.x1.saturating_sub(self.x0)
    }

    /// Rows down (0 when empty).
    pub fn height(&self) -> u32 {
        self.y1.saturating_sub(self.y0)
    }

    /// The region as calls write it: `region=[0,0,800,600]`.
    pub fn call(&self) -> String {
        format!("region={}", self.list())
    }

    /// `[0,0,800,600]`.
    pub fn list(&self) -> String {
        format!("[{},{},{},{}]", self.x0, self.y0, self.x1, self.y1)
    }
}

/// `region`'s JSON: four non-negative integers `[x0, y0, x1, y1]`, or the same as one string `"x0,y0,x1,y1"` (a form
/// models and command lines write).
pub(super) fn parse(value: &Value) -> Result<[i64; 4], ReadError> {
    let hint = format!(
        "send four integers, the left, top, right and bottom edges in the image's pixels (right and bottom excluded), e.g. {REGION_EXAMPLE}"
    );
    let numbers: Vec<Value> = match value {
        Value::Array(items) => items.clone(),
        Value::String(text) => text.split(',').map(|part| number_in(part.trim())).collect(),
        other => {
            let message = format!("`region` must be an array of four integers, not {}", json::type_name(other));
            return Err(ReadError::invalid_param(message).with_hint(hint));
        }
    };
    if numbers.len() != 4 {
        let message = format!("`region` must hold four integers [x0, y0, x1, y1], not {}", numbers.len());
        return Err(ReadError::invalid_param(message).with_hint(hint));
    }
    let mut edges = [0i64; 4];
    for (edge, number) in edges.iter_mut().zip(&numbers) {
        *edge = json::integer("region", number).map_err(|e| e.with_hint(hint.clone()))?;
    }
    if let Some(negative) = edges.iter().find(|&&edge| edge < 0) {
        let message =
            format!("`region` edges must be 0 or more, not {negative}: they count pixels from the top-left corner");
        return Err(ReadError::invalid_param(message).with_hint(hint));
    }
    Ok(edges)
}

/// One comma-separated part of a region written as a string, as JSON would give it.
fn number_in(part: &str) -> Value {
    part.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(part.to_string()))
}

impl ReadRequest {
    /// `region` written as text, `"x0,y0,x1,y1"` (a command line's flag), read as a JSON request's would be: the same
    /// refusals, naming `region`.
    pub fn parse_region(text: &str) -> Result<[i64; 4], ReadError> {
        parse(&Value::String(text.to_string()))
    }

    /// `region`'s own checks: nothing else that chooses what to show, and edges a pixel count can hold.
    pub(super) fn region_window(&self, edges: [i64; 4]) -> Result<Window, ReadError> {
        let others = [
            ("offset", self.offset.is_some()),
            ("limit", self.limit.is_some()),
            ("start_byte", self.start_byte.is_some()),
            ("end_byte", self.end_byte.is_some()),
            ("pages", self.pages.is_some()),
            ("find", self.find.is_some()),
            ("context", self.context.is_some()),
            ("encoding", self.encoding.is_some()),
            ("mode", self.mode.is_some()),
            ("anchor_line", self.anchor_line.is_some()),
            ("levels", self.levels.is_some()),
        ];
        if let Some((field, _)) = others.iter().find(|(_, given)| *given) {
            return Err(ReadError::invalid_param(format!(
                "`{field}` cannot be combined with `region`: `region` chooses a part of an image, `{field}` applies to text"
            ))
            .with_hint(format!("remove `{field}` to read the region of the image, or remove `region`")));
        }
        let [x0, y0, x1, y1] = edges.map(|edge| u32::try_from(edge).unwrap_or(u32::MAX));
        Ok(Window::Region(PixelRegion { x0, y0, x1, y1 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::limits::Limits;
    use serde_json::json;

    fn window(request: Value) -> Result<Window, ReadError> {
        ReadRequest::from_value(&request)?.window(&Limits::default())
    }

    #[test]
    fn a_region_is_four_edges_as_an_array_or_a_string() {
        let expected = Window::Region(PixelRegion { x0: 10, y0: 20, x1: 810, y1: 620 });
        assert_eq!(window(json!({"path": "a.png", "region": [10, 20, 810, 620]})).unwrap(), expected);
        assert_eq!(window(json!({"path": "a.png", "region": "10, 20,810,620"})).unwrap(), expected);
        // Empty or too large is the image's to say (it names its size).
        let empty = window(json!({"path": "a.png", "region": [5, 5, 5, 9]})).unwrap();
        assert!(matches!(empty, Window::Region(region) if region.is_empty()));
    }

    #[test]
    fn a_malformed_region_names_the_form() {
        for (region, says) in [
            (json!([1, 2, 3]), "must hold four integers [x0, y0, x1, y1], not 3"),
            (json!({"x": 1}), "must be an array of four integers, not an object"),
            (json!([0, 0, 1.5, 9]), "`region` must be an integer, not the fraction 1.5"),
            (json!("0,0,ten,9"), "`region` must be an integer, not the string \"ten\""),
            (json!([0, -4, 10, 10]), "edges must be 0 or more, not -4"),
        ] {
            let error = window(json!({"path": "a.png", "region": region})).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParam, "{region}");
            assert!(error.message.contains(says), "{region}: {}", error.message);
            assert!(error.hint.as_deref().is_some_and(|hint| hint.contains(REGION_EXAMPLE)), "{error:?}");
        }
    }

    #[test]
    fn a_region_stands_alone() {
        for (field, value) in [("offset", json!(3)), ("pages", json!("2")), ("find", json!("x")), ("limit", json!(9))] {
            let mut request = json!({"path": "a.png", "region": [0, 0, 9, 9]});
            request[field] = value;
            let error = window(request).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParam);
            assert!(error.message.starts_with(&format!("`{field}` cannot be combined with `region`")), "{error:?}");
        }
    }

    #[test]
    fn calls_write_the_region_as_its_edges() {
        let region = PixelRegion { x0: 0, y0: 10, x1: 800, y1: 610 };
        assert_eq!((region.call(), region.width(), region.height()), ("region=[0,10,800,610]".into(), 800, 600));
    }
}
