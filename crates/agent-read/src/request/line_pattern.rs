//! `find`'s pattern as a search over many lines at once: the same pattern, made unable to match across a line feed,
//! so that one search over a chunk of whole lines finds the lines that may match (see `window::scan::Candidates`).
//!
//! regex looks for a literal of the pattern first when it has one. Where that literal is short and common (the `-`
//! of `[0-9]{3}-[0-9]{4}` in dated lines) this costs more than running its DFA over the whole chunk, and where it is
//! rare it saves nearly everything (the `.` of an IP address pattern in a log without one); only the text can say
//! which. So a pattern without a literal of [`LONG_LITERAL`] bytes or more gets a second form that looks for none,
//! and the search tries both on its first chunks (see `engine::text::find`). Both find the same lines.
//!
//! Contract: every line whose own text the pattern matches (the text without its line ending, as `find` searches
//! it) holds a match of the line pattern, when the chunk holds no lone carriage return. So the lines the line
//! pattern does not touch need no look, and the lines it does are judged by the pattern itself. A pattern for which
//! this cannot hold — one anchored to the start or end of the text (`\A`, `\z`, `(?-m)^`), or to a bare line feed
//! (`(?-R)$`) — has no line pattern, and is searched line by line.

use regex_automata::meta;
use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look};

/// The line pattern: the form regex builds (looking for a literal first when it finds one) and, for a pattern
/// without a long literal, the same with no literal looked for first.
#[derive(Debug, Clone)]
pub struct LinePattern {
    /// The line pattern as regex builds it.
    pub usual: meta::Regex,
    /// The line pattern with no literal looked for first, when its literals are all short.
    pub without_literals: Option<meta::Regex>,
}

/// The line pattern of `pattern`, compiled within `size_limit` bytes; `None` when it has none (see the module).
pub fn compile(pattern: &str, size_limit: usize) -> Option<LinePattern> {
    // The syntax the pattern is compiled with as `find`'s own (`regex::bytes`: not bound to UTF-8), with `^` and `$`
    // at line boundaries, a CRLF's CR before `$` included.
    let hir = ParserBuilder::new().utf8(false).multi_line(true).crlf(true).build().parse(pattern).ok()?;
    let looks = hir.properties().look_set();
    if looks.contains_anchor_haystack() || looks.contains(Look::StartLF) || looks.contains(Look::EndLF) {
        return None;
    }
    let long_literal = has_a_long_literal(&hir);
    let lines = without_line_feeds(hir);
    let config = meta::Config::new().utf8_empty(false).nfa_size_limit(Some(size_limit));
    let usual = meta::Builder::new().configure(config.clone()).build_from_hir(&lines).ok()?;
    let without_literals = (!long_literal)
        .then(|| meta::Builder::new().configure(config.auto_prefilter(false)).build_from_hir(&lines).ok())
        .flatten();
    Some(LinePattern { usual, without_literals })
}

/// Whether every match holds a literal of at least [`LONG_LITERAL`] bytes regex can look for first: a prefix, a
/// suffix, or a piece of the pattern's top-level sequence. Such a literal is rare enough in text to be worth it.
fn has_a_long_literal(hir: &Hir) -> bool {
    let long = |kind| {
        let literals = Extractor::new().kind(kind).extract(hir);
        literals.is_finite() && literals.min_literal_len().is_some_and(|len| len >= LONG_LITERAL)
    };
    let inner = match hir.kind() {
        HirKind::Concat(parts) => {
            parts.iter().any(|part| matches!(part.kind(), HirKind::Literal(literal) if literal.0.len() >= LONG_LITERAL))
        }
        _ => false,
    };
    long(ExtractKind::Prefix) || long(ExtractKind::Suffix) || inner
}

/// The shortest literal always worth looking for first.
const LONG_LITERAL: usize = 3;

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
        let compiled = compile(pattern, 1 << 20).expect("a line pattern");
        let found = compiled.usual.find(region.as_bytes()).map(|m| m.start());
        if let Some(plain) = &compiled.without_literals {
            assert_eq!(plain.find(region.as_bytes()).map(|m| m.start()), found, "both forms find the same");
        }
        found
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
    fn patterns_whose_literals_are_all_short_get_a_form_that_looks_for_none() {
        let plain = |pattern: &str| compile(pattern, 1 << 20).expect("a line pattern").without_literals.is_some();
        for pattern in ["PANIC", "(?i)panic", r"\w+Exception", r"\d+ FATAL \d+", "foo|barbaz", "ERROR.*disk"] {
            assert!(!plain(pattern), "{pattern}");
        }
        for pattern in [r"[0-9]{3}-[0-9]{4}", r"\d+\.\d+\.\d+\.\d+", "a|bcd", r"\w+", "x.y"] {
            assert!(plain(pattern), "{pattern}");
        }
        assert_eq!(first(r"[0-9]{3}-[0-9]{4}", "12-3456\n2026-11-27\n123-4567\n"), Some(19));
        assert_eq!(first(r"\d+\.\d+\.\d+\.\d+", "v1.2\nat 10.0.0.1\n"), Some(8));
    }

    #[test]
    fn text_anchors_have_no_line_pattern() {
        for pattern in [r"\Afoo", r"foo\z", "(?-m)^foo", "(?-R)foo$"] {
            assert!(compile(pattern, 1 << 20).is_none(), "{pattern}");
        }
        assert!(compile("^foo$", 1 << 20).is_some());
    }
}
