//! The block finder on small sources in several languages and layouts. Fixtures are numbered in comments so the
//! expected spans can be checked by eye.

use super::*;
use crate::classify::Codec;
use std::io::Write;

fn utf8() -> Codec {
    Codec::Whatwg(encoding_rs::UTF_8)
}

fn find_in(codec: Codec, bytes: &[u8], anchor: u64) -> Found {
    let source = Source::in_memory(bytes, codec.newline_layout());
    find(&source, codec, anchor).unwrap()
}

fn block_of(text: &str, anchor: u64) -> Block {
    match find_in(utf8(), text.as_bytes(), anchor) {
        Found::Block(block) => block,
        other => panic!("no block around line {anchor}: {other:?}"),
    }
}

/// `(start, end, header, parent)` of the block around `anchor`.
fn span(text: &str, anchor: u64) -> (u64, u64, Option<u64>, Option<u64>) {
    let b = block_of(text, anchor);
    (b.start, b.end, b.header, b.parent)
}

const PYTHON: &str = include_str!("../../../tests/fixtures/block_server.py");

#[test]
fn python_blocks_nest_by_indentation_and_take_their_decorators() {
    assert_eq!(span(PYTHON, 12), (10, 15, Some(11), Some(4)), "the method around a statement, decorator first");
    assert_eq!(span(PYTHON, 14), (10, 15, Some(11), Some(4)), "inside an `if` inside a method: the method");
    assert_eq!(span(PYTHON, 13), (10, 15, Some(11), Some(4)), "an `if` header: the method around it");
    assert_eq!(span(PYTHON, 11), (10, 15, Some(11), Some(4)), "a definition's header gives the block it opens");
    assert_eq!(span(PYTHON, 8), (7, 8, Some(7), Some(4)));
    assert_eq!(span(PYTHON, 5), (4, 15, Some(4), None), "the class, blank lines inside it included");
    assert_eq!(span(PYTHON, 4), (4, 15, Some(4), None));
    assert_eq!(span(PYTHON, 10), (10, 15, Some(11), Some(4)), "a decorator anchor gives what it decorates");
}

#[test]
fn first_and_last_lines_can_be_anchors() {
    assert_eq!(span(PYTHON, 1), (1, 1, None, None), "a top-level line: its paragraph");
    assert_eq!(span(PYTHON, 19), (18, 19, Some(18), None));
    assert_eq!(span("a:\n  b", 2), (1, 2, Some(1), None), "no final newline");
    assert_eq!(span("  only\n", 1), (1, 1, None, None));
}

#[test]
fn a_blank_anchor_is_read_as_the_nearest_text_line_below_on_a_tie() {
    let b = block_of(PYTHON, 16);
    assert_eq!((b.start, b.end, b.resolved, b.anchor), (10, 15, 15, 16), "line 15 is nearer than 18");
    assert_eq!(block_of(PYTHON, 17).resolved, 18, "line 18 is nearer than 15");
    assert_eq!(span(PYTHON, 17), (18, 19, Some(18), None));
    assert_eq!(block_of(PYTHON, 6).resolved, 7, "a tie goes to the line below");
    assert_eq!(block_of(PYTHON, 9).resolved, 10);
    assert_eq!(span(PYTHON, 9), (10, 15, Some(11), Some(4)));
    let trailing = block_of("def f():\n    x\n\n\n", 4);
    assert_eq!((trailing.start, trailing.end, trailing.resolved), (1, 2, 2), "after the last text line");
    let all_blank = block_of("\n  \n\n", 2);
    assert_eq!((all_blank.start, all_blank.end, all_blank.header), (2, 2, None), "nothing but blank lines");
}

const RUST: &str = include_str!("../../../tests/fixtures/block_parse.rs");

#[test]
fn rust_blocks_end_with_their_closing_brace_and_start_with_their_attributes() {
    assert_eq!(span(RUST, 6), (3, 8, Some(5), None), "doc comment and attribute above the header");
    assert_eq!(span(RUST, 13), (11, 16, Some(11), Some(10)), "inside an `if`: the method around it");
    assert_eq!(span(RUST, 15), (11, 16, Some(11), Some(10)), "the closer at the header's indentation ends it");
    assert_eq!(span(RUST, 3), (3, 8, Some(5), None), "a doc comment anchor gives what it documents");
    assert_eq!(span(RUST, 4), (3, 8, Some(5), None));
}

#[test]
fn a_closing_anchor_gives_the_block_it_closes() {
    assert_eq!(span(RUST, 14), (11, 16, Some(11), Some(10)), "the `if`'s closer: the method around it");
    assert_eq!(span(RUST, 16), (11, 16, Some(11), Some(10)));
    let data = "config {\n    items [\n        1,\n    ]\n    x\n}\n";
    assert_eq!(span(data, 4), (2, 4, Some(2), Some(1)), "no definition around: the block the closer closes");
    assert_eq!(span(RUST, 17), (10, 17, Some(10), None));
    assert_eq!(span(RUST, 8), (3, 8, Some(5), None));
    // A closer right under its opener has no body to close: it is an ordinary line.
    assert_eq!(span("call(\n)\n", 2), (1, 2, None, None));
}

#[test]
fn else_branches_are_blocks_of_their_own() {
    // In a loop, not a definition, so the innermost blocks show.
    let text = "loop {\n    if a {\n        x();\n    } else {\n        y();\n    }\n}\n";
    assert_eq!(span(text, 3), (2, 4, Some(2), Some(1)), "the if branch ends at `}} else {{`");
    assert_eq!(span(text, 5), (4, 6, Some(4), Some(1)));
    assert_eq!(span(text, 4), (4, 6, Some(4), Some(1)), "`}} else {{` opens the else branch");
}

#[test]
fn closing_words_and_tags_end_blocks() {
    let ruby = "items.each do |name|\n  if name\n    puts name\n  end\nend\n";
    assert_eq!(span(ruby, 3), (2, 4, Some(2), Some(1)));
    assert_eq!(span(ruby, 5), (1, 5, Some(1), None));
    let method = ruby.replace("items.each do |name|", "def greet(names)");
    assert_eq!(span(&method, 3), (1, 5, Some(1), None), "in a method: the method");
    let shell = "case \"$1\" in\n  start)\n    run\n    ;;\nesac\n";
    assert_eq!(span(shell, 3), (2, 4, Some(2), Some(1)), "`esac` is less indented than `start)`");
    assert_eq!(span(shell, 5), (1, 5, Some(1), None));
    let html = "<ul>\n  <li>a</li>\n</ul>\n<p>after</p>\n";
    assert_eq!(span(html, 2), (1, 3, Some(1), None));
}

#[test]
fn yaml_nesting_without_closers() {
    let yaml = "server:\n  host: a\n  tls:\n    cert: x\n    key: y\n  port: 80\nlogging:\n  level: info\n";
    assert_eq!(span(yaml, 4), (3, 5, Some(3), Some(1)));
    assert_eq!(span(yaml, 3), (3, 5, Some(3), Some(1)));
    assert_eq!(span(yaml, 2), (1, 6, Some(1), None));
    assert_eq!(span(yaml, 6), (1, 6, Some(1), None));
    assert_eq!(span(yaml, 8), (7, 8, Some(7), None));
}

#[test]
fn annotations_must_sit_directly_above_at_the_same_indentation() {
    let text = "# helper\n\n# Says hello.\n# Twice.\ndef hello():\n    print('hi')\n";
    assert_eq!(span(text, 6), (3, 6, Some(5), None), "the blank line cuts off `# helper`");
    assert_eq!(span(text, 4), (3, 6, Some(5), None));
    assert_eq!(span(text, 1), (1, 1, None, None), "a comment with a blank line after it annotates nothing");
    let stacked = "@a\n@b(1)\ndef f():\n    pass\n";
    assert_eq!(span(stacked, 1), (1, 4, Some(3), None));
    assert_eq!(span(stacked, 4), (1, 4, Some(3), None));
    let no_header = "x = 1\n# note\ny = 2\n";
    assert_eq!(span(no_header, 2), (1, 3, None, None), "annotating a plain line: the paragraph");
    let deeper = "class A:\n    # note\n    x = 1\n";
    assert_eq!(span(deeper, 2), (1, 3, Some(1), None), "annotating a plain line inside a block: that block");
}

#[test]
fn top_level_paragraphs_are_bounded_by_blank_lines() {
    let text = "alpha\nbeta\n\ngamma\ndelta\nepsilon\n\nzeta\n";
    assert_eq!(span(text, 5), (4, 6, None, None));
    assert_eq!(span(text, 4), (4, 6, None, None));
    assert_eq!(span(text, 1), (1, 2, None, None));
    assert_eq!(span(text, 8), (8, 8, None, None));
}

#[test]
fn tabs_advance_to_the_next_multiple_of_four() {
    let text = "for f in x:\n\tif x:\n\t\tbreak\n    continue\n  \tdone()\n";
    assert_eq!(span(text, 3), (2, 3, Some(2), Some(1)));
    assert_eq!(span(text, 4), (1, 5, Some(1), None), "four spaces, a tab and two spaces then a tab: all column 4");
    assert_eq!(span(text, 5), (1, 5, Some(1), None));
}

#[test]
fn crlf_files_give_the_same_blocks_and_whitespace_lines_stay_blank() {
    let crlf = PYTHON.replace('\n', "\r\n");
    for anchor in [1, 5, 8, 12, 14, 16, 17, 19] {
        assert_eq!(span(&crlf, anchor), span(PYTHON, anchor), "line {anchor}");
    }
    let padded = "def f():\r\n    a\r\n   \r\n    b\r\nc\r\n";
    assert_eq!(span(padded, 3), (1, 4, Some(1), None), "a line of spaces is blank, inside the body");
}

fn utf16(text: &str, little: bool) -> Vec<u8> {
    text.encode_utf16().flat_map(|u| if little { u.to_le_bytes() } else { u.to_be_bytes() }).collect()
}

#[test]
fn utf16_indentation_is_decoded() {
    let codec = Codec::Whatwg(encoding_rs::UTF_16BE);
    let Found::Block(b) = find_in(codec, &utf16(RUST, false), 13) else { panic!("no block") };
    assert_eq!((b.start, b.end, b.parent), (11, 16, Some(10)));
    // A file with its byte order mark, read past it.
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&[0xFF, 0xFE]).unwrap();
    file.write_all(&utf16(&PYTHON.replace('\n', "\r\n"), true)).unwrap();
    let size = file.metadata().unwrap().len();
    let codec = Codec::Whatwg(encoding_rs::UTF_16LE);
    let source = Source::new(&file, 2, size, codec.newline_layout());
    let Found::Block(b) = find(&source, codec, 12).unwrap() else { panic!("no block") };
    assert_eq!((b.start, b.end, b.header, b.parent), (10, 15, Some(11), Some(4)));
}

#[test]
fn deep_nesting_keeps_every_level() {
    let text: String = (0..300).map(|level| format!("{}l{level}:\n", "  ".repeat(level))).collect();
    assert_eq!(span(&text, 300), (299, 300, Some(299), Some(298)));
    assert_eq!(span(&text, 150), (150, 300, Some(150), Some(149)));
    assert_eq!(span(&text, 1), (1, 300, Some(1), None));
    let far = format!("a:\n{}b\n", " ".repeat(KEEP_BYTES + 1000));
    assert_eq!(span(&far, 2), (1, 2, Some(1), None), "indentation past the kept prefix still counts as deeper");
}

#[test]
fn blocks_deep_in_a_long_file_span_chunk_borders() {
    let text: String = (0..20_000).map(|n| format!("def f{n}():\n    a = {n}\n    return a\n\n")).collect();
    assert!(text.len() > 4 * crate::window::CHUNK_LEN);
    for k in [0u64, 4_000, 16_383, 19_999] {
        assert_eq!(span(&text, 4 * k + 2), (4 * k + 1, 4 * k + 3, Some(4 * k + 1), None), "function {k}");
    }
}

#[test]
fn anchors_past_the_end_report_the_line_count() {
    assert_eq!(find_in(utf8(), b"a\nb\n", 3), Found::PastEnd(2));
    assert_eq!(find_in(utf8(), b"a\nb", 9), Found::PastEnd(2));
    assert_eq!(find_in(utf8(), b"", 1), Found::PastEnd(0));
}

#[test]
fn the_search_stops_at_the_first_line_after_the_block() {
    let shape = |line: &str| LineShape::of_chars(line.chars(), true);
    let mut finder = Finder::new(2, 1);
    assert_eq!(finder.feed(1, shape("def f():")), Flow::More);
    assert_eq!(finder.feed(2, shape("    x")), Flow::More);
    assert_eq!(finder.feed(3, shape("")), Flow::More, "a blank line decides nothing");
    assert_eq!(finder.feed(4, shape("    y")), Flow::More);
    assert_eq!(finder.feed(5, shape("z")), Flow::Done);
    assert_eq!(
        finder.finish(),
        Found::Block(Block { start: 1, end: 4, anchor: 2, resolved: 2, header: Some(1), parent: None })
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Lines made of the pieces the rules look at: indentation (spaces, tabs), blanks, closers, annotations, text.
    fn line() -> impl Strategy<Value = String> {
        let indent = prop::sample::select(vec!["", "  ", "    ", "\t", "      ", "        ", "  \t"]);
        let text =
            prop::sample::select(vec!["x = 1", "def f():", "}", "end", "@d", "# c", "fi", ")", "</a>", "} else {"]);
        prop_oneof![
            4 => (indent, text).prop_map(|(indent, text)| format!("{indent}{text}\n")),
            1 => prop::sample::select(vec!["\n", "   \n", "\t\n"]).prop_map(String::from),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Every block holds the line its anchor was read as, and its parent's block holds it, strictly wider: so
        /// following `widen` always shows more and always ends.
        #[test]
        fn blocks_hold_their_anchor_and_the_parent_block_holds_them(
            lines in prop::collection::vec(line(), 1..40),
            pick in any::<prop::sample::Index>(),
        ) {
            let text = lines.concat();
            let total = lines.len() as u64;
            let anchor = pick.index(lines.len()) as u64 + 1;
            let b = block_of(&text, anchor);
            prop_assert!(1 <= b.start && b.start <= b.resolved && b.resolved <= b.end && b.end <= total, "{b:?}");
            if !lines[pick.index(lines.len())].trim().is_empty() {
                prop_assert_eq!(b.resolved, anchor);
            }
            if let Some(header) = b.header {
                prop_assert!(b.start <= header && header <= b.end, "{b:?}");
            }
            if let Some(parent) = b.parent {
                let wider = block_of(&text, parent);
                prop_assert_eq!(wider.header, Some(parent));
                prop_assert!(wider.start < b.start && b.end <= wider.end, "{b:?} in {wider:?}");
            }
        }
    }
}

/// `(start, end, header, parent)` of the block `levels` definitions out around `anchor`.
fn span_at(text: &str, anchor: u64, levels: u32) -> (u64, u64, Option<u64>, Option<u64>) {
    let source = Source::in_memory(text.as_bytes(), utf8().newline_layout());
    match super::find_in(&source, utf8(), anchor, levels, None).unwrap() {
        Found::Block(b) => (b.start, b.end, b.header, b.parent),
        other => panic!("no block around line {anchor}: {other:?}"),
    }
}

#[test]
fn a_line_deep_in_statements_gives_the_definition_around_it_in_every_common_language() {
    // (language, text, anchor: the innermost statement, expected span of the definition)
    let cases: [(&str, &str, u64, (u64, u64)); 9] = [
        (
            "python",
            "class A:\n    def f(self):\n        for x in y:\n            if x:\n                go(x)\n",
            5,
            (2, 5),
        ),
        (
            "javascript",
            "export async function load(url) {\n  try {\n    if (url) {\n      fetch(url);\n    }\n  } catch (e) {}\n}\n",
            4,
            (1, 7),
        ),
        ("arrow", "const handler = async (req) => {\n  if (req) {\n    send(req);\n  }\n};\n", 3, (1, 5)),
        (
            "go",
            "func (s *Server) Run() error {\n\tfor {\n\t\tif s.done {\n\t\t\treturn nil\n\t\t}\n\t}\n}\n",
            4,
            (1, 7),
        ),
        (
            "java",
            "class A {\n    public static void main(String[] args) {\n        while (true) {\n            step();\n        }\n    }\n}\n",
            4,
            (2, 6),
        ),
        ("c", "int main(int argc, char **argv) {\n    if (argc) {\n        return 1;\n    }\n}\n", 3, (1, 5)),
        ("ruby", "module M\n  def f\n    if x\n      y\n    end\n  end\nend\n", 4, (2, 6)),
        (
            "rust",
            "pub(crate) async fn f() {\n    match x {\n        A => {\n            b();\n        }\n    }\n}\n",
            4,
            (1, 7),
        ),
        ("test", "describe('a', () => {\n  it('b', () => {\n    if (x) {\n      y();\n    }\n  });\n});\n", 4, (2, 6)),
    ];
    for (language, text, anchor, (start, end)) in cases {
        let (s, e, header, _) = span_at(text, anchor, 1);
        assert_eq!((s, e), (start, end), "{language}: {text}");
        assert_eq!(header, Some(start), "{language}");
    }
}

#[test]
fn levels_go_out_one_definition_at_a_time_and_stop_at_the_outermost() {
    let text = "class Outer:\n    class Inner:\n        def f(self):\n            if x:\n                y()\n";
    assert_eq!(span_at(text, 5, 1), (3, 5, Some(3), Some(2)), "the method");
    assert_eq!(span_at(text, 5, 2), (2, 5, Some(2), Some(1)), "its class");
    assert_eq!(span_at(text, 5, 3), (1, 5, Some(1), None), "the class around that");
    assert_eq!(span_at(text, 5, 9), (1, 5, Some(1), None), "no further out than the outermost");
    // The widen call anchors at the parent, which gives the next definition out.
    assert_eq!(span_at(text, 2, 1), span_at(text, 5, 2));
    // Without a definition around the line, levels count the headers around it.
    let yaml = "server:\n  tls:\n    cert:\n      path: x\n";
    assert_eq!(span_at(yaml, 4, 1), (3, 4, Some(3), Some(2)));
    assert_eq!(span_at(yaml, 4, 2), (2, 4, Some(2), Some(1)));
    assert_eq!(span_at(yaml, 4, 5), (1, 4, Some(1), None));
}

#[test]
fn a_definition_inside_a_plain_block_widens_to_that_block() {
    // `if TYPE_CHECKING:` is no definition: the function is the block; widening goes to the `if`.
    let text = "if TYPE_CHECKING:\n    def f():\n        if x:\n            y()\n";
    assert_eq!(span_at(text, 4, 1), (2, 4, Some(2), Some(1)));
    assert_eq!(span_at(text, 1, 1), (1, 4, Some(1), None));
}
