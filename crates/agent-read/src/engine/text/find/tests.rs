//! The chunk-level search gives the answer of the line-by-line one: same lines shown, same numbers, same counts, same
//! footer, on random texts (CRLF, lone CRs, long lines across chunks, no final newline) and patterns (anchors,
//! classes that could take a line feed, case, word boundaries, text anchors).

use super::*;
use crate::classify::{Codec, EncodingSource};
use crate::request::{ReadRequest, Window};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use std::io::Write;

/// Patterns that stress what the line pattern must keep: every line the pattern matches on its own.
const PATTERNS: &[&str] = &[
    "ab", "a b", "^a", "b$", "^$", r"\bab\b", "(?i)AB", "a.b", r"a\sb", "[^a]b", "a\nb", r"a\r?$", "é", "x{3,}",
    "(ab|ba)+", "a|b", r"\Aa", r"b\z", ".", "b\r", "\r", "(?m)^b", "(?-R)a$", "(?-m)^a", r"\s$", "^.{0,2}$",
];

fn utf8() -> TextFormat {
    TextFormat { codec: Codec::Whatwg(encoding_rs::UTF_8), source: EncodingSource::Detected, bom_len: 0 }
}

fn request(pattern: &str, offset: i64, limit: u64, context: u64) -> FindWindow {
    let json = serde_json::json!({"path": "t", "find": pattern, "offset": offset, "limit": limit, "context": context});
    match ReadRequest::from_value(&json).unwrap().window(&Limits::default()).unwrap() {
        Window::Find(find) => find,
        other => panic!("not a search: {other:?}"),
    }
}

/// The answer to `request` over `text` in a file: its output and its counts, or the error's.
fn answer(text: &[u8], request: &FindWindow) -> String {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(text).unwrap();
    let layout = utf8().codec.newline_layout();
    let source = Source::new(&file, 0, text.len() as u64, layout);
    let limits = Limits { max_output_bytes: 8 * 1024, ..Limits::default() };
    match read(&source, None, &utf8(), request, TextMeta::default(), &limits, &Rendering::default()) {
        Ok(result) => format!("{}\n{:?} {:?}", result.output, result.meta.find_matches, result.meta.find_total),
        Err(error) => format!("{:?}: {}", error.code, error.message),
    }
}

/// A line of a small alphabet, a long one now and then (so lines cross the 64 KiB chunks), and its ending.
fn line() -> impl Strategy<Value = String> {
    let short =
        proptest::collection::vec(prop::sample::select(vec!["a", "b", " ", "x", "é", "\r", "A", "B", "ab"]), 0..8)
            .prop_map(|parts| parts.concat());
    let long =
        (1_000usize..90_000, prop::sample::select(vec!["x", "ab ", "b"])).prop_map(|(n, s)| s.repeat(n / s.len()));
    let content = prop_oneof![20 => short, 1 => long];
    (content, prop::sample::select(vec!["\n", "\n", "\r\n"])).prop_map(|(content, end)| content + end)
}

fn text() -> impl Strategy<Value = Vec<u8>> {
    (proptest::collection::vec(line(), 0..3000), any::<bool>()).prop_map(|(lines, cut)| {
        let mut text = lines.concat().into_bytes();
        if cut && text.ends_with(b"\n") {
            text.pop();
        }
        text
    })
}

#[test]
fn the_chunk_level_search_answers_as_the_line_by_line_one() {
    let cases = std::env::var("FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(96);
    let mut runner = TestRunner::new(RunnerConfig { cases, ..RunnerConfig::default() });
    let inputs = (text(), prop::sample::select(PATTERNS), prop_oneof![1i64..40, -60i64..-1], 1u64..12, 0u64..3);
    runner
        .run(&inputs, |(text, pattern, offset, limit, context)| {
            let fast = request(pattern, offset, limit, context);
            let slow = FindWindow { line_pattern: None, ..fast.clone() };
            prop_assert_eq!(answer(&text, &fast), answer(&text, &slow), "pattern {:?}", pattern);
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_text_with_few_candidate_lines_is_searched_in_jumps_with_the_right_numbers() {
    let mut text: Vec<u8> = (1..=200_000).flat_map(|n| format!("{n} ok\n").into_bytes()).collect();
    text.extend_from_slice(b"the END\n");
    let fast = request("END", 1, 5, 1);
    assert!(fast.line_pattern.is_some());
    let output = answer(&text, &fast);
    assert!(
        output.starts_with("200000- 200000 ok\n200001: the END\n(find \"END\" from line 1: 1 of 1 match(es)"),
        "{output}"
    );
}

#[test]
fn either_form_of_a_line_pattern_finds_the_same_lines_and_the_faster_is_kept_after_the_trials() {
    let mut region: Vec<u8> =
        (0..4000).flat_map(|n| format!("2026-11-27 line {n} took 1.5 ms\n").into_bytes()).collect();
    region.extend_from_slice(b"call 555-0199 now\n");
    for pattern in [r"[0-9]{3}-[0-9]{4}", r"\d+\.\d+\.\d+\.\d+", "a|bcd"] {
        let found = request(pattern, 1, 5, 0);
        let line_pattern = found.line_pattern.as_ref().expect("a line pattern");
        assert!(line_pattern.without_literals.is_some(), "{pattern}: its literals are short");
        let filter = |choice| LineFilter { pattern: line_pattern, choice: Cell::new(choice), jumped: Cell::new(None) };
        let usual = filter(Choice::Usual).search(&region);
        assert_eq!(filter(Choice::WithoutLiterals).search(&region), usual, "{pattern}");
        let trying = filter(Choice::new());
        for _ in 0..Choice::TRIALS {
            assert_eq!(trying.search(&region), usual, "{pattern}");
        }
        assert!(matches!(trying.choice.get(), Choice::Usual | Choice::WithoutLiterals), "{pattern}: chosen");
        assert_eq!(trying.search(&region), usual, "{pattern}");
    }
}
