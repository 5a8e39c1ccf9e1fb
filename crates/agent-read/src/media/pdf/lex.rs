//! The tokens of a content stream, read in place: nothing is built from them, so reading a stream costs no memory
//! beyond the stream itself. Both the guards (what a form costs, which forms it draws) and the batches fed to the
//! extractor (where an operation starts and ends) read content through this one lexer.
//!
//! It reads what lopdf's content parser reads: numbers, names, literal and hexadecimal strings, arrays, dictionaries,
//! `true`/`false`/`null`, operators and comments. An inline image's data (after `ID`) is one [`Kind::InlineData`]
//! token that runs to the `EI` that ends it, so binary data is never read as tokens. Bytes that start no token (a
//! stray `)`, `>` or brace) are skipped; a string left open runs to the end of the data.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A number (`12`, `-.5`, `+3`).
    Number,
    /// A name, its `/` included and its `#xx` escapes as written.
    Name,
    /// A literal `( … )` or hexadecimal `< … >` string, delimiters included.
    String,
    /// `[`.
    ArrayOpen,
    /// `]`.
    ArrayClose,
    /// `<<`.
    DictOpen,
    /// `>>`.
    DictClose,
    /// `true`, `false` or `null`.
    Constant,
    /// Any other word: an operator.
    Operator,
    /// An inline image's data, from after `ID` through the `EI` that ends it.
    InlineData,
}

/// One token: its kind and where it lies in the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Token<'a> {
    pub(super) kind: Kind,
    /// The token's bytes.
    pub(super) bytes: &'a [u8],
    /// Where the token starts in the data.
    pub(super) start: usize,
    /// Where the token ends in the data (exclusive).
    pub(super) end: usize,
}

/// The tokens of `data`, in order.
pub(super) struct Lexer<'a> {
    data: &'a [u8],
    at: usize,
    /// Whether inline image data is one token (or read as tokens like the rest).
    images: bool,
    /// The last token was the `ID` operator: inline image data comes next.
    image_data_next: bool,
}

impl<'a> Lexer<'a> {
    /// The tokens of `data`, inline image data as one token.
    pub(super) fn new(data: &'a [u8]) -> Lexer<'a> {
        Lexer { data, at: 0, images: true, image_data_next: false }
    }

    /// The tokens of `data`, inline image data read as tokens too: what a reader that finds the end of the data
    /// another way could see there is seen (the guards over-approximate what a form draws this way).
    pub(super) fn everywhere(data: &'a [u8]) -> Lexer<'a> {
        Lexer { data, at: 0, images: false, image_data_next: false }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.data.get(at).copied()
    }

    fn token(&mut self, kind: Kind, start: usize, end: usize) -> Token<'a> {
        let end = end.min(self.data.len());
        self.at = end;
        Token { kind, bytes: &self.data[start..end], start, end }
    }

    /// The end of a literal string that starts at `start` (past its closing parenthesis, or the end of the data).
    fn string_end(&self, start: usize) -> usize {
        let mut nesting = 0usize;
        let mut at = start;
        while let Some(byte) = self.byte(at) {
            at += 1;
            match byte {
                b'\\' => at += 1,
                b'(' => nesting += 1,
                b')' => {
                    nesting -= 1;
                    if nesting == 0 {
                        return at;
                    }
                }
                _ => {}
            }
        }
        self.data.len()
    }

    /// The end of a run of regular characters (a number, name body or word) from `at`.
    fn word_end(&self, mut at: usize) -> usize {
        while self.byte(at).is_some_and(is_regular) {
            at += 1;
        }
        at
    }

    /// The end of inline image data that starts at `start`: past the first `EI` with white space before it and
    /// white space, a delimiter or the end of the data after it; the end of the data when there is none.
    fn inline_data_end(&self, start: usize) -> usize {
        let data = &self.data[start..];
        let mut from = 0;
        while let Some(found) = memchr::memmem::find(&data[from..], b"EI") {
            let at = from + found;
            let before = at == 0 || is_space(data[at - 1]);
            let after = data.get(at + 2).is_none_or(|&b| !is_regular(b));
            if before && after {
                return start + at + 2;
            }
            from = at + 1;
        }
        self.data.len()
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if std::mem::take(&mut self.image_data_next) {
            // One white-space byte separates `ID` from the data.
            let start = self.at + usize::from(self.byte(self.at).is_some_and(is_space));
            if start < self.data.len() {
                let end = self.inline_data_end(start);
                return Some(self.token(Kind::InlineData, start, end));
            }
        }
        loop {
            let start = self.at;
            let byte = self.byte(start)?;
            let token = match byte {
                _ if is_space(byte) => {
                    self.at += 1;
                    continue;
                }
                b'%' => {
                    self.at = memchr::memchr2(b'\n', b'\r', &self.data[start..]).map_or(self.data.len(), |n| start + n);
                    continue;
                }
                b'(' => self.token(Kind::String, start, self.string_end(start)),
                b'<' if self.byte(start + 1) == Some(b'<') => self.token(Kind::DictOpen, start, start + 2),
                b'>' if self.byte(start + 1) == Some(b'>') => self.token(Kind::DictClose, start, start + 2),
                b'<' => {
                    let end = memchr::memchr(b'>', &self.data[start..]).map_or(self.data.len(), |n| start + n + 1);
                    self.token(Kind::String, start, end)
                }
                b'[' => self.token(Kind::ArrayOpen, start, start + 1),
                b']' => self.token(Kind::ArrayClose, start, start + 1),
                b'/' => self.token(Kind::Name, start, self.word_end(start + 1)),
                _ if !is_regular(byte) => {
                    self.at += 1;
                    continue;
                }
                _ => {
                    let end = self.word_end(start);
                    let word = &self.data[start..end];
                    let kind = if matches!(byte, b'0'..=b'9' | b'+' | b'-' | b'.') {
                        Kind::Number
                    } else if matches!(word, b"true" | b"false" | b"null") {
                        Kind::Constant
                    } else {
                        self.image_data_next = self.images && word == b"ID";
                        Kind::Operator
                    };
                    self.token(kind, start, end)
                }
            };
            return Some(token);
        }
    }
}

/// White space in PDF syntax.
pub(super) fn is_space(byte: u8) -> bool {
    matches!(byte, b'\0' | b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

/// A regular character: neither white space nor a delimiter.
fn is_regular(byte: u8) -> bool {
    !is_space(byte) && !matches!(byte, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

/// A name token's bytes without its `/`, `#xx` escapes decoded.
pub(super) fn name_of(token: &[u8]) -> Vec<u8> {
    let raw = token.strip_prefix(b"/").unwrap_or(token);
    let mut name = Vec::with_capacity(raw.len());
    let mut at = 0;
    while let Some(&byte) = raw.get(at) {
        let escaped = (byte == b'#')
            .then(|| raw.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(decoded) => {
                name.push(decoded);
                at += 3;
            }
            None => {
                name.push(byte);
                at += 1;
            }
        }
    }
    name
}

/// A number token's value (`None` for what is not a number, or not a finite one).
pub(super) fn number_of(token: &[u8]) -> Option<f64> {
    std::str::from_utf8(token).ok()?.parse::<f64>().ok().filter(|value| value.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(data: &[u8]) -> Vec<(Kind, &[u8])> {
        Lexer::new(data).map(|token| (token.kind, token.bytes)).collect()
    }

    #[test]
    fn tokens_are_read_in_place_with_their_kinds() {
        use Kind::*;
        let data = b"q 1 0 -.5 +2 cm/F#31 12 Tf(a (nested) \\) str)Tj<48 49>Tj [(x) -20] TJ <</A true>> % note\nBT";
        assert_eq!(
            kinds(data),
            [
                (Operator, &b"q"[..]),
                (Number, b"1"),
                (Number, b"0"),
                (Number, b"-.5"),
                (Number, b"+2"),
                (Operator, b"cm"),
                (Name, b"/F#31"),
                (Number, b"12"),
                (Operator, b"Tf"),
                (String, b"(a (nested) \\) str)"),
                (Operator, b"Tj"),
                (String, b"<48 49>"),
                (Operator, b"Tj"),
                (ArrayOpen, b"["),
                (String, b"(x)"),
                (Number, b"-20"),
                (ArrayClose, b"]"),
                (Operator, b"TJ"),
                (DictOpen, b"<<"),
                (Name, b"/A"),
                (Constant, b"true"),
                (DictClose, b">>"),
                (Operator, b"BT"),
            ]
        );
        assert_eq!(name_of(b"/F#31"), b"F1");
        assert_eq!(number_of(b"-.5"), Some(-0.5));
        assert_eq!(number_of(b"1e999"), None);
    }

    #[test]
    fn inline_image_data_is_one_token_whatever_it_holds() {
        use Kind::*;
        let data = b"BI /W 2 /H 1 ID \x00(EI) Tj EIx\xff EI Q";
        assert_eq!(
            kinds(data),
            [
                (Operator, &b"BI"[..]),
                (Name, b"/W"),
                (Number, b"2"),
                (Name, b"/H"),
                (Number, b"1"),
                (Operator, b"ID"),
                (InlineData, b"\x00(EI) Tj EIx\xff EI"),
                (Operator, b"Q"),
            ]
        );
        // Data with no end runs to the end; an open string too.
        assert_eq!(kinds(b"ID xyz").last(), Some(&(InlineData, &b"xyz"[..])));
        assert_eq!(kinds(b"(open"), [(String, &b"(open"[..])]);
        let everywhere: Vec<Kind> = Lexer::everywhere(b"ID /X Do EI").map(|token| token.kind).collect();
        assert_eq!(everywhere, [Operator, Name, Operator, Operator]);
    }
}
