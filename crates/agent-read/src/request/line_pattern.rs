//! `find`'s pattern as a search over many lines at once: the same pattern, made unable to match across a line feed,
//! so that one search over a chunk of whole lines finds the lines that may match (see `window::scan::Candidates`).
//!
//! Contract: every line whose own text the pattern matches (the text without its line ending, as `find` searches
//! it) holds a match of the line pattern, when the chunk holds no lone carriage return. So the lines the line
//! pattern does not touch need no look, and the lines it does are judged by the pattern itself. A pattern for which
//! this cannot hold — one anchored to the start or end of the text (`\A`, `\z`, `(?-m)^`), or to a bare line feed
//! (`(?-R)$`) — has no line pattern, and is searched line by line.

use regex_automata::meta;
use regex_syntax::ParserBuilder;
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look};

/// The line pattern of `pattern`, compiled within `size_limit` bytes; `None` when it has none (see the module).
pub fn compile(pattern: &str, size_limit: usize) -> Option<meta::Regex> {
    // The syntax the pattern is compiled with as `find`'s own (`regex::bytes`: not bound to UTF-8), with `^` and `$`
    // at line boundaries, a CRLF's CR before `$` included.
    let hir = ParserBuilder::new().utf8(false).multi_line(true).crlf(true).build().parse(pattern).ok()?;
    let looks = hir.properties().look_set();
    if looks.contains_anchor_haystack() || looks.contains(Look::StartLF) || looks.contains(Look::EndLF) {
        return None;
    }
    let config = meta::Config::new().utf8_empty(false).nfa_size_limit(Some(size_limit));
    meta::Builder::new().configure(config).build_from_hir(&without_line_feeds(hir)).ok()
}

/// `hir` with every way of matching a line feed taken out: classes lose it, and a literal holding one can no longer
/// match. Anchors stay: they look at line feeds, they do not consume them.
fn without_line_feeds(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) if literal.0.contains(&b'\n') => Hir::fail(),
        HirKind::Literal(literal) => Hir::literal(literal.0),
        HirKind::Class(Class::Unicode(mut class)) => {
            class.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(mut class)) => {
            class.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(without_line_feeds(*repetition.sub));
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(without_line_feeds(*capture.sub));
            Hir::capture(capture)
        }
        HirKind::Concat(parts) => Hir::concat(parts.into_iter().map(without_line_feeds).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.into_iter().map(without_line_feeds).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(pattern: &str, region: &str) -> Option<usize> {
        compile(pattern, 1 << 20).expect("a line pattern").find(region.as_bytes()).map(|m| m.start())
    }

    #[test]
    fn matches_stay_within_a_line_and_anchors_hold_at_line_boundaries() {
        assert_eq!(first(r"a\sb", "a\nb\na b\n"), Some(4), "`\\s` no longer takes the line feed");
        assert_eq!(first(r"a[^x]*b", "a\nb\nab\n"), Some(4));
        assert_eq!(first("a\nb", "a\nb\n"), None, "a literal line feed cannot match");
        assert_eq!(first("^b$", "ab\r\nb\r\n"), Some(4), "`$` before a CRLF, `^` after it");
        assert_eq!(first(r"(?s)x.y", "x\ny\nx-y\n"), Some(4));
        assert_eq!(first(r"\bword\b", "sword\nword\n"), Some(6));
    }

    #[test]
    fn text_anchors_have_no_line_pattern() {
        for pattern in [r"\Afoo", r"foo\z", "(?-m)^foo", "(?-R)foo$"] {
            assert!(compile(pattern, 1 << 20).is_none(), "{pattern}");
        }
        assert!(compile("^foo$", 1 << 20).is_some());
    }
}
