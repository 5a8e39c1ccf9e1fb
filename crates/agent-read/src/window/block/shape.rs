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

/// Characters of a line looked at after its indentation: enough for the longest marker and the character after it.
const LEAD_CHARS: usize = 6;

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
        LineShape { indent, blank: false, closer: is_closer(lead), annotation: is_annotation(lead) }
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
    fn wide_encodings_are_decoded_first() {
        let utf16: Vec<u8> = "\t  @decorator".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let s = LineShape::of(Codec::Whatwg(encoding_rs::UTF_16LE), &utf16, true);
        assert_eq!(s, LineShape { indent: 6, blank: false, closer: false, annotation: true });
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
