//! Checks that what the model sees keeps its envelope: the tool's lines and the file's can always be told apart.
//!
//! Written apart from the crate's own escaping (an independent model of the rule the README states), so that tests
//! using it check the crate rather than repeat it. Used by the process-level tests and the property tests.
#![allow(dead_code)] // Each test file uses its own share of these.

/// Whether `c` may never reach the output as it is: every control character but line feed and tab, the line and
/// paragraph separators, bidirectional controls, and the invisible characters the README lists as escaped.
pub fn forbidden(c: char) -> bool {
    let code = c as u32;
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(code, 0x2028 | 0x2029 | 0x061C | 0x200B | 0x200E | 0x200F | 0x2060..=0x2064 | 0xFEFF)
        || matches!(code, 0x202A..=0x202E | 0x2066..=0x206F | 0x180E | 0x115F | 0x1160 | 0x3164 | 0xFFA0)
        || matches!(code, 0xFFF9..=0xFFFB | 0xE0000..=0xE007F)
}

/// What a character is, as a window's notices count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Not counted.
    Plain,
    /// NUL.
    Nul,
    /// Another control character (not tab or line feed), or a line or paragraph separator.
    Control,
    /// A bidirectional control or an invisible character, the joiners and the soft hyphen included.
    Invisible,
}

/// Classifies one character of a file's text.
pub fn class(c: char) -> Class {
    match c {
        '\0' => Class::Nul,
        '\u{2028}' | '\u{2029}' => Class::Control,
        c if c.is_control() && c != '\t' && c != '\n' => Class::Control,
        '\u{ad}' | '\u{200c}' | '\u{200d}' => Class::Invisible,
        c if forbidden(c) => Class::Invisible,
        _ => Class::Plain,
    }
}

/// Panics when `output` holds a character that may never reach it as it is.
pub fn assert_nothing_raw(output: &str) {
    if let Some((at, c)) = output.char_indices().find(|(_, c)| forbidden(*c)) {
        panic!("raw U+{:04X} at byte {at} of the output:\n{output:?}", c as u32);
    }
}

/// The text a shown line stands for: control pictures (`␀`…`␟`, `␡`) and `⟨U+XXXX⟩` escapes turned back into the
/// characters they show. Panics on a `⟨` that is neither an escape nor followed by what the tool writes.
pub fn unshow(shown: &str) -> String {
    let mut out = String::with_capacity(shown.len());
    let mut rest = shown;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c as u32 {
            code @ 0x2400..=0x241F => out.push(char::from_u32(code - 0x2400).expect("a C0 control")),
            0x2421 => out.push('\u{7F}'),
            _ if c == '⟨' => {
                let (inside, after) = rest.split_once('⟩').unwrap_or_else(|| panic!("unclosed ⟨ in {shown:?}"));
                let hex = inside.strip_prefix("U+").unwrap_or_else(|| panic!("⟨{inside}⟩ is not an escape"));
                let code = u32::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("bad escape ⟨{inside}⟩"));
                out.push(char::from_u32(code).unwrap_or_else(|| panic!("⟨{inside}⟩ is not a character")));
                rest = after;
            }
            _ => out.push(c),
        }
    }
    out
}

/// Splits an output into its lines before the footer and the footer, which must be its last line.
pub fn split_footer(output: &str) -> (Vec<&str>, &str) {
    let mut lines: Vec<&str> = output.split('\n').collect();
    let footer = lines.pop().unwrap_or_default();
    assert!(footer.starts_with('(') && footer.ends_with(')'), "the last line is not a footer: {output:?}");
    (lines, footer)
}

/// A line window's output (`N: text` lines, then the footer): its lines as (number, text shown), and the footer.
/// Panics on any unnumbered line or raw character.
pub fn numbered(output: &str) -> (Vec<(u64, &str)>, &str) {
    assert_nothing_raw(output);
    let (lines, footer) = split_footer(output);
    let parsed = lines
        .iter()
        .map(|line| {
            let (number, text) = line.split_once(": ").unwrap_or_else(|| panic!("unnumbered line {line:?}"));
            (number.parse().unwrap_or_else(|_| panic!("unnumbered line {line:?}")), text)
        })
        .collect();
    (parsed, footer)
}

/// A byte range's output (`@OFFSET: text` lines, then the footer): its lines as (offset, text shown), and the footer.
/// Panics on any line without its offset or any raw character.
pub fn ranged(output: &str) -> (Vec<(u64, &str)>, &str) {
    assert_nothing_raw(output);
    let (lines, footer) = split_footer(output);
    let parsed = lines
        .iter()
        .map(|line| {
            let rest = line.strip_prefix('@').unwrap_or_else(|| panic!("line without its offset {line:?}"));
            let (offset, text) = rest.split_once(": ").unwrap_or_else(|| panic!("line without its offset {line:?}"));
            (offset.parse().unwrap_or_else(|_| panic!("line without its offset {line:?}")), text)
        })
        .collect();
    (parsed, footer)
}

/// The text behind a rendering's gutter (`│ text`, or `│` alone for an empty line); `None` for the tool's own lines.
pub fn behind_gutter(line: &str) -> Option<&str> {
    line.strip_prefix("│ ").or_else(|| (line == "│").then_some(""))
}
