//! Characters a file holds that would change how the text around them is read, shown so that they cannot.
//!
//! A terminal obeys escape sequences (clear the screen, write the clipboard), a harness that reads with universal
//! newlines breaks a line at a lone carriage return, a line or paragraph separator (U+2028, U+2029, NEL) ends a line
//! in some readers, and bidirectional controls reorder what a person sees (Trojan Source). None of them may reach
//! the output as they are, or a file could print a line the tool never wrote. So, in content:
//!
//! - a C0 control (other than tab) and DEL are shown as their Unicode control pictures: `␀` … `␟`, `␡` (ESC is `␛`,
//!   a lone CR `␍`);
//! - every other control (C1, NEL), the line and paragraph separators, bidirectional controls and invisible
//!   characters with no visible role (zero width space, word joiner, a byte order mark inside the text, tag
//!   characters, Hangul fillers) are shown as `⟨U+202E⟩`;
//! - the characters these forms are made of, a file's own `⟨` and control pictures, are shown as `⟨U+27E8⟩` and
//!   `⟨U+241B⟩`, so that every form reads back one way: the mapping is reversible;
//! - the zero width non-joiner, the zero width joiner and the soft hyphen, which scripts and emoji need, are shown
//!   as they are, and counted with the invisible characters.
//!
//! Within a line of content, then, `⟨` always starts the tool's own words: an escape, or a marker such as a cut
//! line's. Names are shown JSON-quoted instead (see [`one_line_name`]), since a name is what a request spells.
//!
//! A leaf: it imports nothing of the crate, so that error messages (`crate::error`) and every rendering
//! (`crate::render`) show text one way without depending on each other.

use std::fmt::Write;

/// What a character is, for showing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Shown as it is.
    Plain,
    /// NUL: shown as `␀`, counted on its own (it often means binary data).
    Nul,
    /// A control character, or a line or paragraph separator: shown escaped, counted.
    Control,
    /// A bidirectional control or an invisible character: shown escaped, counted.
    Invisible,
    /// An invisible character that scripts and emoji need: shown as it is, counted with [`Kind::Invisible`].
    Joiner,
    /// A character the escapes are made of: shown escaped, not counted.
    Reserved,
}

/// The character that opens an escape, and any other in-line word of the tool.
pub const OPEN: char = '⟨';
/// The character that closes it.
pub const CLOSE: char = '⟩';

/// Classifies one character.
pub fn kind(c: char) -> Kind {
    match c {
        '\t' => Kind::Plain,
        '\0' => Kind::Nul,
        '\u{1}'..='\u{1F}' | '\u{7F}'..='\u{9F}' | '\u{2028}' | '\u{2029}' => Kind::Control,
        '\u{061C}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{180E}'
        | '\u{200B}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}' => Kind::Invisible,
        '\u{00AD}' | '\u{200C}' | '\u{200D}' => Kind::Joiner,
        OPEN | '\u{2400}'..='\u{2421}' => Kind::Reserved,
        _ => Kind::Plain,
    }
}

/// Whether every character of `text` is shown as it is and none is counted: the common case, decided mostly on
/// bytes (only the lead bytes of the few multi-byte characters that matter send it to a closer look).
pub fn is_plain(text: &str) -> bool {
    let suspect = |b: &u8| match *b {
        b'\t' | 0x20..=0x7E => false,
        0xC2 | 0xD8 | 0xE1 | 0xE2 | 0xE3 | 0xEF | 0xF3 => true,
        0x80.. => false,
        _ => true,
    };
    !text.as_bytes().iter().any(suspect) || text.chars().all(|c| kind(c) == Kind::Plain)
}

/// How a shown character is written: itself, a control picture, or `⟨U+XXXX⟩`.
fn write_shown(out: &mut String, c: char) {
    match (kind(c), c) {
        (Kind::Plain | Kind::Joiner, c) => out.push(c),
        (Kind::Nul | Kind::Control, '\0'..='\u{1F}') => {
            out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}'))
        }
        (Kind::Control, '\u{7F}') => out.push('\u{2421}'),
        _ => {
            // Writing to a String cannot fail.
            let _ = write!(out, "{OPEN}U+{:04X}{CLOSE}", c as u32);
        }
    }
}

/// Bytes `c` takes when shown.
fn shown_len_of(c: char) -> usize {
    match (kind(c), c) {
        (Kind::Plain | Kind::Joiner, c) => c.len_utf8(),
        (Kind::Nul | Kind::Control, '\0'..='\u{1F}' | '\u{7F}') => 3,
        (_, c) => {
            let digits = if (c as u32) > 0xFFFF { 5 } else { 4 };
            OPEN.len_utf8() + 2 + digits + CLOSE.len_utf8()
        }
    }
}

/// Characters of one class met in shown text: how many, and the byte index (in the text before showing) of the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Met {
    /// How many.
    pub count: u64,
    /// Byte index of the first in the text it was met in.
    pub first: usize,
}

/// The characters worth a notice met in shown text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// NUL characters.
    pub nul: Option<Met>,
    /// Other control characters and line or paragraph separators.
    pub control: Option<Met>,
    /// Bidirectional controls and invisible characters.
    pub invisible: Option<Met>,
}

impl Counts {
    fn add(&mut self, kind: Kind, at: usize) {
        let slot = match kind {
            Kind::Nul => &mut self.nul,
            Kind::Control => &mut self.control,
            Kind::Invisible | Kind::Joiner => &mut self.invisible,
            Kind::Plain | Kind::Reserved => return,
        };
        match slot {
            Some(met) => met.count += 1,
            None => *slot = Some(Met { count: 1, first: at }),
        }
    }

    /// Whether nothing was met.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.nul.is_none() && self.control.is_none() && self.invisible.is_none()
    }
}

/// Appends `text` as shown to `out`; returns what it met.
pub fn push_shown(out: &mut String, text: &str) -> Counts {
    let mut counts = Counts::default();
    if is_plain(text) {
        out.push_str(text);
        return counts;
    }
    for (at, c) in text.char_indices() {
        counts.add(kind(c), at);
        write_shown(out, c);
    }
    counts
}

/// Appends text of several lines as shown, its line feeds kept (for a rendering whose every line starts with the
/// tool's own prefix); returns what it met.
#[cfg(any(feature = "pdf", test))]
pub fn push_shown_lines(out: &mut String, text: &str) -> Counts {
    let mut counts = Counts::default();
    let mut start = 0;
    for line in text.split('\n') {
        if start > 0 {
            out.push('\n');
        }
        let met = push_shown(out, line);
        for (slot, met) in
            [(&mut counts.nul, met.nul), (&mut counts.control, met.control), (&mut counts.invisible, met.invisible)]
        {
            let Some(met) = met else { continue };
            match slot {
                Some(seen) => seen.count += met.count,
                None => *slot = Some(Met { count: met.count, first: start + met.first }),
            }
        }
        start += line.len() + 1;
    }
    counts
}

/// `text` as shown (error messages and hints, whose only foreign words are paths).
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_shown(&mut out, text);
    out
}

/// Bytes `text` takes when shown.
pub fn shown_len(text: &str) -> usize {
    if is_plain(text) { text.len() } else { text.chars().map(shown_len_of).sum() }
}

/// The length of the longest prefix of `text` (ending on a character boundary) whose shown form fits `max_bytes`.
pub fn fitting_prefix(text: &str, max_bytes: usize) -> usize {
    fitting(text, max_bytes, shown_len_of)
}

/// [`fitting_prefix`] for text shown by `push_shown_lines`.
#[cfg(any(feature = "pdf", test))]
pub fn fitting_prefix_lines(text: &str, max_bytes: usize) -> usize {
    fitting(text, max_bytes, |c| if c == '\n' { 1 } else { shown_len_of(c) })
}

fn fitting(text: &str, max_bytes: usize, len_of: impl Fn(char) -> usize) -> usize {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += len_of(c);
        if used > max_bytes {
            return at;
        }
    }
    text.len()
}

/// Whether a name can stand in a one-line list as it is: every character shown as it is, no tab, and no opening
/// quote or parenthesis (a quoted name, or the footer, starts so).
fn name_stands_alone(name: &str) -> bool {
    !name.starts_with(['"', '(']) && !name.contains('\t') && is_plain(name)
}

/// A name as it can stand in a one-line list: itself, or, when it holds anything [`name_stands_alone`] refuses,
/// JSON-quoted — how a request spells it — with every character that is not shown as it is written `\uXXXX`.
pub fn one_line_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name_stands_alone(name) {
        return std::borrow::Cow::Borrowed(name);
    }
    std::borrow::Cow::Owned(quoted(name))
}

/// `text` as a JSON string, with every character that is not shown as it is written `\uXXXX`.
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if kind(c) != Kind::Plain => push_json_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// JSON text (a request, as a next call spells it) with every character that is not shown as it is written
/// `\uXXXX`. Such characters can only stand inside JSON strings, where the escape means the same.
pub fn json_shown(json: &str) -> String {
    if is_plain(json) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if kind(c) == Kind::Plain {
            out.push(c);
        } else {
            push_json_escape(&mut out, c);
        }
    }
    out
}

fn push_json_escape(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        // Writing to a String cannot fail.
        let _ = write!(out, "\\u{unit:04x}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_pictures_and_the_rest_code_points() {
        assert_eq!(shown("a\u{1b}[2Jb\u{7}\r\u{0}\u{7f}"), "a␛[2Jb␇␍␀␡");
        assert_eq!(shown("x\u{85}y\u{2028}z\u{2029}"), "x⟨U+0085⟩y⟨U+2028⟩z⟨U+2029⟩");
        assert_eq!(shown("if\u{202E} \u{2066}x\u{2069}"), "if⟨U+202E⟩ ⟨U+2066⟩x⟨U+2069⟩");
        assert_eq!(shown("a\u{200B}b\u{FEFF}c\u{E0041}"), "a⟨U+200B⟩b⟨U+FEFF⟩c⟨U+E0041⟩");
        assert_eq!(shown("tab\tstays"), "tab\tstays");
        assert_eq!(shown("👨\u{200D}👩"), "👨\u{200D}👩", "a joiner is shown as it is");
    }

    #[test]
    fn the_tools_own_characters_are_escaped_so_every_form_reads_back_one_way() {
        assert_eq!(shown("⟨U+202E⟩ and ␛"), "⟨U+27E8⟩U+202E⟩ and ⟨U+241B⟩");
        assert_eq!(shown("⟩ alone is plain"), "⟩ alone is plain");
    }

    #[test]
    fn lengths_and_prefixes_agree_with_what_is_shown() {
        for text in ["plain", "a\u{1b}b", "\u{202E}\u{202E}x", "é\u{85}😀\u{E0001}", "⟨", ""] {
            assert_eq!(shown_len(text), shown(text).len(), "{text:?}");
            for max in 0..=shown(text).len() {
                let prefix = &text[..fitting_prefix(text, max)];
                assert!(shown_len(prefix) <= max, "{text:?} {max}");
                let next = text[prefix.len()..].chars().next();
                assert!(next.is_none_or(|c| shown_len(prefix) + shown_len_of(c) > max), "{text:?} {max}");
            }
        }
    }

    #[test]
    fn is_plain_agrees_with_the_character_classes() {
        for c in (0..0x3_0000).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            assert_eq!(is_plain(&text), kind(c) == Kind::Plain, "{:04X}", c as u32);
        }
    }

    #[test]
    fn counts_say_how_many_and_where_the_first_is() {
        let mut out = String::new();
        let counts = push_shown(&mut out, "ab\u{1b}c\u{0}\u{1b}\u{200D}\u{202E}");
        assert_eq!(counts.control, Some(Met { count: 2, first: 2 }));
        assert_eq!(counts.nul, Some(Met { count: 1, first: 4 }));
        assert_eq!(counts.invisible, Some(Met { count: 2, first: 6 }));
        assert!(push_shown(&mut out, "plain ⟨ text").is_empty(), "reserved characters are escaped, not counted");
    }

    #[test]
    fn lines_keep_their_line_feeds_and_count_from_the_start() {
        let mut out = String::new();
        let counts = push_shown_lines(&mut out, "ab\nc\u{1b}\r\n\u{202E}");
        assert_eq!(out, "ab\nc␛␍\n⟨U+202E⟩");
        assert_eq!(counts.control, Some(Met { count: 2, first: 4 }));
        assert_eq!(counts.invisible, Some(Met { count: 1, first: 7 }));
        assert_eq!(fitting_prefix_lines("a\n\u{1b}b", 5), 3);
    }

    #[test]
    fn names_are_quoted_when_anything_in_them_is_not_shown_as_it_is() {
        assert_eq!(one_line_name("plain name.txt"), "plain name.txt");
        assert_eq!(one_line_name("a\nb"), "\"a\\nb\"");
        assert_eq!(one_line_name("a\u{2028}b\u{202E}"), "\"a\\u2028b\\u202e\"");
        assert_eq!(one_line_name("tag\u{E0041}"), "\"tag\\udb40\\udc41\"");
        assert_eq!(one_line_name("\"quoted\""), "\"\\\"quoted\\\"\"");
        assert_eq!(one_line_name("(entries 1-2 of 2 · end of directory)"), "\"(entries 1-2 of 2 · end of directory)\"");
        assert_eq!(one_line_name("a\tb"), "\"a\\tb\"");
        for name in ["a\nb", "a\u{2028}b\u{202E}", "tag\u{E0041}", "\"q\\\"", "\u{1b}]52;c;x\u{7}"] {
            let back: String = serde_json::from_str(&one_line_name(name)).unwrap();
            assert_eq!(back, name, "a quoted name is the JSON string a request spells it with");
        }
    }

    #[test]
    fn json_calls_stay_valid_json_with_nothing_raw() {
        let call = serde_json::to_string(&serde_json::json!({"path": "a\u{2028}b\u{85}\u{1b}"})).unwrap();
        let safe = json_shown(&call);
        assert!(safe.chars().all(|c| kind(c) == Kind::Plain), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap()["path"], "a\u{2028}b\u{85}\u{1b}");
    }
}
