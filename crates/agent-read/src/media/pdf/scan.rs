//! A content stream read for its tokens only, without building anything: what parsing it will cost (lopdf makes each
//! operator a ~500-byte operation, so a few megabytes of content can take gigabytes) and which XObjects it draws, so
//! the guards can refuse what would exhaust memory and follow forms as pdf-extract will.

use super::lex::{Kind, Lexer, name_of};
use std::collections::HashSet;

/// What a content stream holds, as far as the guards care.
pub(super) struct Scanned {
    /// Operators: each becomes an operation of lopdf's, about 500 bytes (its operand list starts with room for 4).
    operators: usize,
    /// Operands (numbers, names, strings, arrays, dictionaries): each becomes an object of about 120 bytes.
    operands: usize,
    /// The names before each `Do` operator: the XObjects it draws (over-approximated: a `Do` inside an inline
    /// image's data counts too).
    pub(super) invoked: HashSet<Vec<u8>>,
}

impl Scanned {
    /// About what parsing the content takes in memory: measured at 500 to 600 bytes an operator (`q Q`, `m l S`,
    /// text), and 126 bytes an operand of a long `TJ` array.
    pub(super) fn parsed_bytes(&self) -> usize {
        self.operators.saturating_mul(512).saturating_add(self.operands.saturating_mul(128))
    }
}

/// Reads a content stream's tokens, without building anything from them; inline image data is read as tokens too, so
/// a `Do` that a reader could find there is not missed.
pub(super) fn scan_content(content: &[u8]) -> Scanned {
    let mut scanned = Scanned { operators: 0, operands: 0, invoked: HashSet::new() };
    let mut last_name: Option<Vec<u8>> = None;
    for token in Lexer::everywhere(content) {
        match token.kind {
            Kind::Operator => {
                scanned.operators += 1;
                if token.bytes == b"Do" {
                    scanned.invoked.extend(last_name.take());
                }
            }
            Kind::Name => {
                scanned.operands += 1;
                last_name = Some(name_of(token.bytes));
                continue;
            }
            Kind::ArrayClose | Kind::DictClose => {}
            Kind::Number | Kind::String | Kind::Constant | Kind::ArrayOpen | Kind::DictOpen | Kind::InlineData => {
                scanned.operands += 1;
            }
        }
        last_name = None;
    }
    scanned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_scans_count_tokens_and_find_the_drawn_xobjects() {
        let content =
            b"q /Fm1 Do Q (a /Str Do) Tj /F#6fo Do % /Commented Do\n/Fm1 Do /X1 12 Do <</A 1>> BI /W 1 ID /X Do EI";
        let scanned = scan_content(content);
        assert_eq!(scanned.invoked, HashSet::from([b"Fm1".to_vec(), b"Foo".to_vec(), b"X".to_vec()]));
        // Operators: q Do Q Tj Do Do Do BI ID Do EI; operands: /Fm1 (…) /F#6fo /Fm1 /X1 12 << /A 1 /W 1 /X.
        assert_eq!((scanned.operators, scanned.operands), (11, 12));
        assert!(scan_content(b"(unbalanced /X Do").invoked.is_empty());
        let array = scan_content(b"[1 -2 .3 (s) <ab>] TJ true");
        assert_eq!((array.operators, array.operands), (1, 7));
    }
}
