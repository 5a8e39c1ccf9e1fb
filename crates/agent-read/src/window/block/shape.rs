//! What block finding needs to know of one line: its indentation, whether it is blank, and whether it starts with a
//! closer (`}`, `end`, …) or an annotation (`@decorator`, `#[attr]`, `// comment`, …).
//!
//! Only the start of a line matters, so only a bounded prefix of it is ever looked at. Files in ASCII-compatible
//! encodings are read byte by byte (spaces, tabs and every marker below are ASCII there, and a line always starts
//! on a character boundary); others (UTF-16, UTF-32, ISO-2022-JP) are decoded with the file's codec first.

use crate::classify::Codec;
use crate::classify::codec::DecodeLimit;

/// Columns a tab advances to: the next multiple of this.
pub const TAB_WIDTH: u32 = 4;

/// Characters of a line looked at after its indentation: enough for a definition's modifiers, name and parameters
/// on most lines (and for every marker).
const LEAD_CHARS: usize = 160;

/// The start of one line, as block finding sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineShape {
    /// Columns of leading spaces and tabs (a tab advances to the next multiple of [`TAB_WIDTH`]).
    pub indent: u32,
    /// Whether the line holds only whitespace (spaces, tabs, CR, form feed, vertical tab), or nothing.
    pub blank: bool,
    /// Whether the text after the indentation starts with `}`, `)`, `]`, `</`, or one of the closing words `end`,
    /// `fi`, `done`, `esac` standing alone.
    pub closer: bool,
    /// Whether the text after the indentation starts an attribute, decorator or comment: `@`, `#` (so `#[…]`
    /// too), `//` (so `///` too), `/*`, or `*` alone or before a space or `/` (a block comment's middle or end).
    pub annotation: bool,
    /// Whether the line reads as the start of a definition (see [`is_definition`]): a function, method, class,
    /// type, impl or module, as opposed to a statement (`if`, `for`, a call) or data.
    pub definition: bool,
}

impl LineShape {
    /// The shape of a line from its first bytes `kept` in `codec`; `whole` says `kept` is the whole line.
    pub fn of(codec: Codec, kept: &[u8], whole: bool) -> LineShape {
        match codec {
            Codec::Whatwg(encoding) if encoding.is_ascii_compatible() => {
                // Bytes past ASCII stand for some character that is neither whitespace nor a marker.
                let chars = kept.iter().map(|&b| if b.is_ascii() { char::from(b) } else { '\u{FFFD}' });
                LineShape::of_chars(chars, whole)
            }
            _ => {
                let decoded = codec.decode(kept, DecodeLimit::NONE, whole);
                LineShape::of_chars(decoded.text.chars(), whole)
            }
        }
    }

    /// The shape of a line from its characters (all of them when `whole`, else a prefix).
    pub fn of_chars(chars: impl Iterator<Item = char>, whole: bool) -> LineShape {
        let mut chars = chars.peekable();
        let mut indent: u32 = 0;
        while let Some(&c) = chars.peek() {
            match c {
                ' ' => indent = indent.saturating_add(1),
                '\t' => indent = (indent / TAB_WIDTH).saturating_add(1).saturating_mul(TAB_WIDTH),
                _ => break,
            }
            chars.next();
        }
        let mut rest = chars.skip_while(|c| is_blank_char(*c)).peekable();
        if rest.peek().is_none() {
            // A prefix of whitespace may hide text further on: only a whole line is known to be blank.
            return LineShape { indent, blank: whole, ..LineShape::default() };
        }
        // After the indentation the next character is not blank, so `lead` starts with the line's text.
        let mut lead = ['\0'; LEAD_CHARS];
        let mut len = 0;
        for (slot, c) in lead.iter_mut().zip(rest) {
            *slot = c;
            len += 1;
        }
        let lead = &lead[..len];
        let closer = is_closer(lead);
        let annotation = is_annotation(lead);
        let definition = !closer && !annotation && is_definition(lead, whole && len < LEAD_CHARS);
        LineShape { indent, blank: false, closer, annotation, definition }
    }
}

fn is_blank_char(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\u{0B}' | '\u{0C}')
}

/// Closing brackets, `</`, and the closing words `end` (Ruby, Lua, Julia), `fi`, `done` and `esac` (shell) standing
/// alone: not followed by a character that would make a longer word (`endpoint`, `fifo`). Matched on the first
/// characters directly, since every line of the file is tested.
fn is_closer(lead: &[char]) -> bool {
    let alone = |len: usize| lead.get(len).is_none_or(|c| !(c.is_alphanumeric() || *c == '_' || !c.is_ascii()));
    match lead {
        ['}' | ')' | ']', ..] | ['<', '/', ..] => true,
        ['e', 'n', 'd', ..] => alone(3),
        ['f', 'i', ..] => alone(2),
        ['d', 'o', 'n', 'e', ..] | ['e', 's', 'a', 'c', ..] => alone(4),
        _ => false,
    }
}

fn is_annotation(lead: &[char]) -> bool {
    matches!(lead, ['@' | '#', ..] | ['/', '/' | '*', ..] | ['*'] | ['*', ' ' | '\t' | '/', ..])
}

/// Words that may come before what a definition is (`pub async fn`, `export default class`, `public static void`).
const MODIFIERS: &[&str] = &[
    "pub",
    "export",
    "default",
    "async",
    "static",
    "public",
    "private",
    "protected",
    "internal",
    "final",
    "abstract",
    "override",
    "unsafe",
    "extern",
    "inline",
    "virtual",
    "sealed",
    "open",
    "data",
    "suspend",
    "declare",
    "fileprivate",
    "mutating",
    "partial",
    "local",
    "typedef",
    "const",
    "constexpr",
    "friend",
    "impure",
    "pure",
];

/// Words that start a definition in common languages.
const DEFINERS: &[&str] = &[
    "fn",
    "def",
    "class",
    "struct",
    "enum",
    "trait",
    "impl",
    "mod",
    "interface",
    "function",
    "func",
    "fun",
    "module",
    "namespace",
    "object",
    "record",
    "union",
    "type",
    "macro_rules",
    "sub",
    "proc",
    "procedure",
    "protocol",
    "extension",
    "actor",
    "defmodule",
    "defp",
    "defn",
    "defun",
    "defmacro",
    "constructor",
    "template",
];

/// Words that start a statement: a line starting with one is never a definition.
const STATEMENTS: &[&str] = &[
    "if",
    "else",
    "elif",
    "elsif",
    "for",
    "foreach",
    "while",
    "until",
    "do",
    "loop",
    "switch",
    "match",
    "case",
    "when",
    "try",
    "catch",
    "except",
    "finally",
    "with",
    "unless",
    "return",
    "select",
    "synchronized",
    "lock",
    "using",
    "defer",
    "go",
    "await",
    "yield",
    "throw",
    "raise",
    "new",
    "begin",
    "then",
    "repeat",
    "guard",
    "let",
    "var",
    "val",
    "assert",
    "print",
    "echo",
    "import",
    "from",
    "require",
    "include",
    "use",
];

/// Whether a line (`lead`: its text after the indentation; `complete` when that is the whole line) reads as the start
/// of a definition: after any [`MODIFIERS`], a [`DEFINERS`] word (`pub(crate) async fn`, `export default class`); or,
/// for languages without such a word, a signature that opens a body — a name then parameters, ending with `{`
/// (`int main(void) {`, `public static void main(String[] args) {`, `it('works', () => {`), or an arrow function
/// bound to a name (`const handler = async (req) => {`). A line starting with a [`STATEMENTS`] word, a call on an
/// object (`items.forEach(x => {`) or plain data is not one.
fn is_definition(lead: &[char], complete: bool) -> bool {
    let mut buffer = [0u8; LEAD_CHARS * 4];
    let mut used = 0;
    for c in lead {
        used += c.encode_utf8(&mut buffer[used..]).len();
    }
    let Ok(text) = std::str::from_utf8(&buffer[..used]) else { return false };
    let mut rest = text;
    loop {
        let word_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let (word, after) = rest.split_at(word_len);
        if word.is_empty() {
            return false;
        }
        if DEFINERS.contains(&word) {
            return true;
        }
        if STATEMENTS.contains(&word) {
            return false;
        }
        if MODIFIERS.contains(&word) {
            // `pub(crate)`, `extern "C"`: the modifier's argument, then the next word.
            let after = after.trim_start();
            let after = match after.chars().next() {
                Some('(') => after.find(')').map_or("", |end| &after[end + 1..]),
                Some('"') => after[1..].find('"').map_or("", |end| &after[end + 2..]),
                _ => after,
            };
            rest = after.trim_start();
            continue;
        }
        return complete && is_signature(word, after);
    }
}

/// Whether `after`, the rest of a line starting with the word `first` (no keyword), is a signature opening a body.
fn is_signature(first: &str, after: &str) -> bool {
    let line = after.trim_end();
    if after.starts_with('.') || first.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return false;
    }
    let Some(paren) = line.find('(') else { return false };
    let opens_body = line.ends_with('{');
    let assigned = line[..paren].contains('=');
    opens_body && (!assigned || line.contains("=>") || line.contains("function"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(line: &str) -> LineShape {
        LineShape::of(Codec::Whatwg(encoding_rs::UTF_8), line.as_bytes(), true)
    }

    #[test]
    fn indentation_counts_spaces_and_tab_stops() {
        assert_eq!(shape("x").indent, 0);
        assert_eq!(shape("   x").indent, 3);
        assert_eq!(shape("\tx").indent, 4);
        assert_eq!(shape("  \tx").indent, 4, "a tab after two spaces reaches column 4");
        assert_eq!(shape("    \t x").indent, 9);
        assert_eq!(shape("\t\tx").indent, 8);
    }

    #[test]
    fn blank_lines_hold_only_whitespace_and_a_cut_prefix_is_not_blank() {
        assert!(shape("").blank);
        assert!(shape("  \t \r").blank);
        assert!(!shape("  x").blank);
        let cut = LineShape::of(Codec::Whatwg(encoding_rs::UTF_8), b"        ", false);
        assert!(!cut.blank, "whitespace up to the kept prefix may hide text after it");
        assert_eq!(cut.indent, 8);
    }

    #[test]
    fn closers_are_brackets_closing_tags_and_whole_closing_words() {
        for line in ["}", "  });", "]", ")", "</div>", "end", "end.", "  end # done", "fi", "done", "esac", "};"] {
            assert!(shape(line).closer, "{line:?}");
        }
        for line in ["endpoint = 3", "end_of_it", "fifo", "donet", "<div>", "x }", "endé"] {
            assert!(!shape(line).closer, "{line:?}");
        }
    }

    #[test]
    fn annotations_are_attributes_decorators_and_comments() {
        for line in
            ["@app.route('/')", "#[derive(Debug)]", "/// docs", "// note", "# note", "/* c", " * more", " */", "*"]
        {
            assert!(shape(line).annotation, "{line:?}");
        }
        for line in ["*ptr = 3;", "def f():", "/ 2", "x # trailing"] {
            assert!(!shape(line).annotation, "{line:?}");
        }
    }

    #[test]
    fn definitions_are_told_from_statements_and_data() {
        for line in [
            "fn main() {",
            "pub(crate) async fn load(&self) -> Result<()> {",
            "pub unsafe extern \"C\" fn f() {",
            "impl<T: Debug> Display for Wrapper<T> {",
            "def f(x):",
            "async def handler(request):",
            "class Server(Base):",
            "export default function App() {",
            "export const handler = async (event) => {",
            "const f = function (x) {",
            "func (s *Server) Run() error {",
            "public static void main(String[] args) {",
            "int main(int argc, char **argv) {",
            "it('works', () => {",
            "type Props = {",
            "interface Shape {",
            "module Parser",
            "typedef struct {",
            "defmodule App.Web do",
        ] {
            assert!(shape(line).definition, "{line:?}");
        }
        for line in [
            "if (x) {",
            "} else {",
            "for item in items:",
            "while (true) {",
            "match value {",
            "items.forEach((x) => {",
            "let x = compute(y);",
            "x = f(y) {",
            "return foo(bar) {",
            "server:",
            "\"key\": {",
            "# def commented():",
            "@decorator(x)",
            "f(x)",
            "42(x) {",
        ] {
            assert!(!shape(line).definition, "{line:?}");
        }
        let long = format!("foo({}) {{", "a, ".repeat(100));
        assert!(!shape(&long).definition, "a signature longer than the lead is judged by its keyword only");
        assert!(shape(&format!("fn f({}) {{", "a: u8, ".repeat(40))).definition);
    }

    #[test]
    fn wide_encodings_are_decoded_first() {
        let utf16: Vec<u8> = "\t  @decorator".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let s = LineShape::of(Codec::Whatwg(encoding_rs::UTF_16LE), &utf16, true);
        assert_eq!(s, LineShape { indent: 6, blank: false, closer: false, annotation: true, definition: false });
        let utf32: Vec<u8> = "  }".chars().flat_map(|c| u32::from(c).to_be_bytes()).collect();
        assert!(LineShape::of(Codec::Utf32Be, &utf32, true).closer);
    }

    #[test]
    fn non_ascii_text_is_neither_blank_nor_a_marker() {
        let s = shape("  日本");
        assert_eq!((s.indent, s.blank, s.closer, s.annotation), (2, false, false, false));
        let ideographic = shape("\u{3000}x");
        assert_eq!((ideographic.indent, ideographic.blank), (0, false), "only ASCII spaces and tabs indent");
    }
}
