//! What the model sees of a Jupyter notebook: every cell under a header line (`[cell 3 · code · In [7]]`) with its
//! source, every output under a marker line (`[output · stream stdout]`) with its text, images described in one line,
//! and the footer's notices about the rendering.
//!
//! The notebook's own text — every line of a source or an output — stands behind the [gutter](super::GUTTER), and
//! the lines written here (headers, markers, descriptions) never do, so no cell can print a header of its own. Names
//! from the notebook that go into those lines (cell types, stream names, MIME types) are shown as they are only when
//! they look like one (letters, digits, `_-+./`), otherwise JSON-quoted. `crate::media::notebook` reads the JSON and
//! hands the facts over.

use super::{human_size, push_gutter_block};
use crate::escape;

/// Longest label (cell type, stream name, MIME type) echoed into a header or marker line (characters).
const MAX_LABEL_CHARS: usize = 60;

/// A notebook rendered as text, one line per `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedNotebook {
    /// The rendered notebook; every line, the last included, ends with `\n`.
    pub text: String,
    /// Entries in the notebook's cells list (odd entries included, so cell numbers match positions).
    pub cells: usize,
    /// Outputs cut short (`crate::media::notebook::MAX_OUTPUT_CHARS`).
    pub cut_outputs: usize,
    /// Outputs holding at least one image, each described in a line instead of included.
    pub image_outputs: usize,
}

/// What kind of output a marker line announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'a> {
    /// A stream, with its name when it has one (`stdout`).
    Stream(Option<&'a str>),
    /// An error with its traceback.
    Error,
    /// Any other output type, named as the notebook names it (`execute_result`, `display_data`).
    Typed(&'a str),
    /// An output without a type.
    Unknown,
}

/// The rendering being written, and its counters.
#[derive(Debug, Default)]
pub struct NotebookText {
    text: String,
    cut_outputs: usize,
    image_outputs: usize,
}

impl NotebookText {
    /// The line standing for a notebook whose cells list is empty.
    pub fn no_cells(&mut self) {
        self.text.push_str("(notebook with no cells)\n");
    }

    /// Cell `number` (from 1): its header, `kind` being its type (`None`: it has none) and `count` its execution
    /// count, then its source; a blank line separates it from the cell before.
    pub fn cell(&mut self, number: usize, kind: Option<&str>, count: Option<i64>, source: &str) {
        if number > 1 {
            self.text.push('\n');
        }
        let kind = kind.map_or_else(|| "unknown".to_string(), label);
        self.text.push_str(&format!("[cell {number} · {kind}"));
        if let Some(count) = count {
            self.text.push_str(&format!(" · In [{count}]"));
        }
        self.text.push_str("]\n");
        push_gutter_block(&mut self.text, source);
    }

    /// The marker line that opens an output.
    pub fn output(&mut self, output: Output<'_>) {
        let marker = match output {
            Output::Stream(Some(name)) => format!("[output · stream {}]\n", label(name)),
            Output::Stream(None) => "[output · stream]\n".to_string(),
            Output::Error => "[output · error]\n".to_string(),
            Output::Typed(kind) => format!("[output · {}]\n", label(kind)),
            Output::Unknown => "[output · unknown]\n".to_string(),
        };
        self.text.push_str(&marker);
    }

    /// An output's text as shown (`kept`), and a marker when `more` characters of it were left out.
    pub fn body(&mut self, kept: &str, more: usize) {
        push_gutter_block(&mut self.text, kept);
        if more > 0 {
            self.cut_outputs += 1;
            self.text.push_str(&format!("… [output cut: {more} more characters]\n"));
        }
    }

    /// `(image output: image/png, 43.2 KiB base64)`: what an image is, never its data (`None` when its data is not
    /// text). SVG is stored as XML text; everything else as base64, often wrapped (the wrapping is not data).
    pub fn image(&mut self, mime: &str, data: Option<&str>) {
        let mime = label(mime);
        let line = match data {
            None => format!("(image output: {mime})\n"),
            Some(data) if mime.ends_with("+xml") => {
                format!("(image output: {mime}, {} text)\n", human_size(data.len() as u64))
            }
            Some(data) => {
                let size = data.bytes().filter(|byte| !byte.is_ascii_whitespace()).count();
                format!("(image output: {mime}, {} base64)\n", human_size(size as u64))
            }
        };
        self.text.push_str(&line);
    }

    /// Counts an output that held at least one image.
    pub fn count_image_output(&mut self) {
        self.image_outputs += 1;
    }

    /// The line standing for an output entry of a type not shown.
    pub fn omitted(&mut self, mime: &str) {
        self.text.push_str(&format!("(output of type {} omitted)\n", label(mime)));
    }

    /// The finished rendering of a notebook of `cells` cells.
    pub fn finish(self, cells: usize) -> RenderedNotebook {
        RenderedNotebook { text: self.text, cells, cut_outputs: self.cut_outputs, image_outputs: self.image_outputs }
    }
}

/// The footer's notices about a rendered notebook.
pub fn notices(notebook: &RenderedNotebook) -> Vec<String> {
    let mut notices = vec![format!("notebook: {} cell(s)", notebook.cells)];
    if notebook.cut_outputs > 0 {
        notices.push(format!("{} long output(s) cut", notebook.cut_outputs));
    }
    if notebook.image_outputs > 0 {
        notices.push(format!("{} image output(s) described", notebook.image_outputs));
    }
    notices
}

/// Why a notebook is shown as its JSON text instead of rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRendered {
    /// The file is larger than this many bytes.
    TooBigOnDisk(u64),
    /// Its parsed form would take more than this many bytes.
    TooBigParsed(u64),
    /// It is not notebook JSON.
    NotANotebook,
}

/// The footer's notice for a notebook shown as text.
pub fn not_rendered(why: NotRendered) -> String {
    match why {
        NotRendered::TooBigOnDisk(most) => format!("notebook over {} shown as JSON text", human_size(most)),
        NotRendered::TooBigParsed(most) => {
            format!("notebook too large to render (over {} parsed) shown as JSON text", human_size(most))
        }
        NotRendered::NotANotebook => "not valid notebook JSON: shown as plain text".to_string(),
    }
}

/// A name from the notebook made safe for one header line: as it is when it looks like a name (letters, digits,
/// `_-+./`), otherwise JSON-quoted; length bounded.
fn label(name: &str) -> String {
    let kept: String = name.chars().take(MAX_LABEL_CHARS).collect();
    let plain = !kept.is_empty() && kept.chars().all(|c| c.is_ascii_alphanumeric() || "_-+./".contains(c));
    let mut out = if plain { kept } else { escape::quoted(&kept) };
    if name.chars().nth(MAX_LABEL_CHARS).is_some() {
        out.push('…');
    }
    out
}
