//! A content stream read for its tokens only, without building anything: what parsing it will cost (lopdf makes each
//! operator a ~500-byte operation, so a few megabytes of content can take gigabytes) and which XObjects it draws, so
//! the guards can refuse what would exhaust memory and follow forms as pdf-extract will.

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

/// Reads a content stream's tokens, without building anything from them.
pub(super) fn scan_content(content: &[u8]) -> Scanned {
    fn is_space(byte: u8) -> bool {
        matches!(byte, b'\0' | b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
    }
    fn is_delimiter(byte: u8) -> bool {
        matches!(byte, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
    }
    let mut scanned = Scanned { operators: 0, operands: 0, invoked: HashSet::new() };
    let mut last_name: Option<Vec<u8>> = None;
    let mut at = 0;
    while let Some(&byte) = content.get(at) {
        if is_space(byte) {
            at += 1;
            continue;
        }
        if byte == b'%' {
            while content.get(at).is_some_and(|&b| b != b'\n' && b != b'\r') {
                at += 1;
            }
            continue;
        }
        match byte {
            b'(' => {
                scanned.operands += 1;
                let mut nesting = 0usize;
                while let Some(&b) = content.get(at) {
                    at += 1;
                    match b {
                        b'\\' => at += 1,
                        b'(' => nesting += 1,
                        b')' => {
                            nesting -= 1;
                            if nesting == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                last_name = None;
            }
            b'<' | b'>' if content.get(at + 1) == Some(&byte) => {
                scanned.operands += usize::from(byte == b'<');
                at += 2;
                last_name = None;
            }
            b'<' => {
                scanned.operands += 1;
                while content.get(at).is_some_and(|&b| b != b'>') {
                    at += 1;
                }
                at += 1;
                last_name = None;
            }
            b'/' => {
                scanned.operands += 1;
                at += 1;
                let mut name = Vec::new();
                while let Some(&b) = content.get(at).filter(|&&b| !is_space(b) && !is_delimiter(b)) {
                    let escaped = (b == b'#')
                        .then(|| content.get(at + 1..at + 3))
                        .flatten()
                        .and_then(|hex| std::str::from_utf8(hex).ok())
                        .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                    match escaped {
                        Some(decoded) => {
                            name.push(decoded);
                            at += 3;
                        }
                        None => {
                            name.push(b);
                            at += 1;
                        }
                    }
                }
                last_name = Some(name);
            }
            _ if is_delimiter(byte) => {
                scanned.operands += usize::from(byte == b'[');
                at += 1;
                last_name = None;
            }
            _ => {
                let start = at;
                while content.get(at).is_some_and(|&b| !is_space(b) && !is_delimiter(b)) {
                    at += 1;
                }
                let token = &content[start..at];
                if token == b"Do" {
                    scanned.invoked.extend(last_name.take());
                }
                if matches!(token[0], b'0'..=b'9' | b'+' | b'-' | b'.') || matches!(token, b"true" | b"false" | b"null")
                {
                    scanned.operands += 1;
                } else {
                    scanned.operators += 1;
                }
                last_name = None;
            }
        }
    }
    scanned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_scans_count_tokens_and_find_the_drawn_xobjects() {
        let content =
            b"q /Fm1 Do Q (a /Str Do) Tj /F#6fo Do % /Commented Do\n/Fm1 Do /X1 12 Do <</A 1>> BI /W 1 ID x EI";
        let scanned = scan_content(content);
        assert_eq!(scanned.invoked, HashSet::from([b"Fm1".to_vec(), b"Foo".to_vec()]));
        // Operators: q Do Q Tj Do Do Do BI ID x EI; operands: /Fm1 (…) /F#6fo /Fm1 /X1 12 << /A 1 /W 1.
        assert_eq!((scanned.operators, scanned.operands), (11, 11));
        assert!(scan_content(b"(unbalanced /X Do").invoked.is_empty());
        let array = scan_content(b"[1 -2 .3 (s) <ab>] TJ true");
        assert_eq!((array.operators, array.operands), (1, 7));
    }
}
