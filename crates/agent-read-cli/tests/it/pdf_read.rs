//! PDFs read through the `agent-read` binary (JSON mode): page windows with their headers and exact next calls, the
//! `pages` field in all its forms, line mode over the rendered pages, oversized pages, and broken or hostile PDFs.
//!
//! Fixtures are made here with lopdf (the same way as `tests/pdf.rs`) in the workspace of each test.

use crate::common::pdf::{Fixture, encrypted, long_pdf, long_pdf_text, pdf_of, show, zeros_zlib};
#[cfg(unix)]
use crate::common::pdf::{handmade, operator_flood, stream_object};
use crate::common::{Bin, Ws, envelope, output, parse_one_json};
use lopdf::{Dictionary, Stream, dictionary};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The default output cap: 50 KiB, footer included.
const CAP: usize = 50 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------------

/// The text of page `page` of the 40-page fixture: 26 lines of about 80 characters (a little over 2 KB), every line
/// unique to its page.
fn page_text(page: u32) -> String {
    (1..=26)
        .map(|line| {
            format!("p{page:02}-l{line:02} the quick brown fox jumps over the lazy dog, page {page} line {line}.")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `count` pages of [`page_text`].
fn book(count: u32) -> Vec<u8> {
    pdf_of(&(1..=count).map(page_text).collect::<Vec<_>>())
}

// ---------------------------------------------------------------------------------------------------------------
// Running the binary and reading its answers
// ---------------------------------------------------------------------------------------------------------------

/// Sends one JSON request on standard input; the run must exit 0 quickly, print one JSON result and nothing on
/// standard error (no panic).
fn read(ws: &Ws, request: Value) -> Value {
    let started = Instant::now();
    let out = ws.cmd().write_stdin(request.to_string()).output().expect("run");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "request {request}; stderr: {stderr}");
    assert!(stderr.is_empty(), "request {request}: unexpected stderr: {stderr}");
    assert!(took < Duration::from_secs(10), "request {request} took {took:?}");
    parse_one_json(&out.stdout)
}

/// `read` of `path` with extra request fields.
fn read_with(ws: &Ws, path: &str, fields: Value) -> Value {
    let mut request = json!({ "path": path });
    if let (Some(obj), Value::Object(extra)) = (request.as_object_mut(), fields) {
        obj.extend(extra);
    }
    read(ws, request)
}

/// Asserts a successful text result rendered from a PDF; returns its output.
fn pdf_text(v: &Value) -> &str {
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["kind"], "text", "{v}");
    assert_eq!(v["meta"]["rendered_from"], "pdf", "{v}");
    let out = output(v);
    assert!(out.len() <= CAP, "output of {} bytes passes the cap", out.len());
    out
}

/// Asserts a failed result with `code`; returns its output (message and hint).
fn failure<'a>(v: &'a Value, code: &str) -> &'a str {
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["kind"], "error", "{v}");
    assert_eq!(v["error_code"], code, "{v}");
    output(v)
}

/// The last line of an output: the footer.
fn footer(out: &str) -> &str {
    out.rsplit('\n').next().expect("a footer line")
}

/// The pages of a page-mode output, as (number, of, body) from their `── page N of T ──` headers; the body is the text
/// between a header and the blank line before the next header (or the footer), its lines taken from behind the gutter
/// (`│ `) and unescaped; the tool's own lines in it (no text, a cut) kept as they are. Fails on text before the first
/// header, and on any raw control character.
fn split_pages(out: &str) -> Vec<(u32, u32, String)> {
    envelope::assert_nothing_raw(out);
    let body = out.rsplit_once('\n').map_or("", |(body, _)| body);
    let mut pages: Vec<(u32, u32, String)> = Vec::new();
    for line in body.split('\n') {
        if let Some(header) = line.strip_prefix("── page ").and_then(|rest| rest.strip_suffix(" ──")) {
            let (number, total) = header.split_once(" of ").expect("a header reads `page N of T`");
            pages.push((number.parse().expect("a page number"), total.parse().expect("a page count"), String::new()));
        } else {
            let (_, _, text) = pages.last_mut().unwrap_or_else(|| panic!("text before the first header: {line:?}"));
            match envelope::behind_gutter(line) {
                Some(content) => text.push_str(&envelope::unshow(content)),
                None => text.push_str(line),
            }
            text.push('\n');
        }
    }
    for (_, _, text) in &mut pages {
        // Each page ends with a blank line before the next header (the last page's was trimmed before the footer).
        text.truncate(text.trim_end_matches('\n').len());
    }
    pages
}

/// The numbered lines of a line-mode output (`N: text`), as (N, text) with the page text's gutter taken off, checked
/// to be consecutive.
fn numbered_lines(out: &str) -> Vec<(u64, String)> {
    let body = out.rsplit_once('\n').map_or("", |(body, _)| body);
    let lines: Vec<(u64, String)> = body
        .split('\n')
        .map(|line| {
            let (number, text) = line.split_once(": ").unwrap_or_else(|| {
                let number = line.strip_suffix(':').unwrap_or_else(|| panic!("not a numbered line: {line:?}"));
                (number, "")
            });
            let text = envelope::behind_gutter(text).unwrap_or(text);
            (number.parse().unwrap_or_else(|_| panic!("not a numbered line: {line:?}")), text.to_string())
        })
        .collect();
    for pair in lines.windows(2) {
        assert_eq!(pair[1].0, pair[0].0 + 1, "line numbers are consecutive: {out}");
    }
    lines
}

// ---------------------------------------------------------------------------------------------------------------
// 1. The default read: whole pages to the cap, then the exact next call, to the end
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn a_40_page_pdf_is_read_in_whole_pages_and_next_pages_walks_it_to_the_end_exactly_once() {
    let ws = Ws::new();
    ws.file("book.pdf", book(40));
    let first = read(&ws, json!({"path": "book.pdf"}));
    let out = pdf_text(&first);
    assert_eq!(first["meta"]["page_count"], 40);
    assert!(out.starts_with("── page 1 of 40 ──\n"), "{out}");
    let pages = split_pages(out);
    let shown = pages.len() as u32;
    assert!((2..40).contains(&shown), "a few whole pages fit, not all: {shown}");
    for (index, (number, total, text)) in pages.iter().enumerate() {
        assert_eq!((*number, *total), (index as u32 + 1, 40));
        assert_eq!(*text, page_text(*number), "page {number} is whole");
    }
    // As many whole pages as fit: the next one would have passed the cap.
    let gutter_text: String = page_text(shown + 1).lines().map(|line| format!("│ {line}\n")).collect();
    let next_piece = format!("── page {} of 40 ──\n{gutter_text}\n", shown + 1);
    assert!(out.len() + next_piece.len() > CAP - 768, "page {} would have fit: {} bytes shown", shown + 1, out.len());
    assert!(!out.contains(&format!("p{:02}-l01 ", shown + 1)), "no part of page {} is shown", shown + 1);
    let expected_footer = format!("(pages 1-{shown} of 40 · ");
    assert!(footer(out).starts_with(&expected_footer), "{}", footer(out));
    assert!(footer(out).ends_with(&format!(" · next: pages={}-40)", shown + 1)), "{}", footer(out));
    assert_eq!(first["meta"]["pages_shown"], format!("1-{shown}"));
    assert_eq!(first["meta"]["next_pages"], format!("{}-40", shown + 1));
    assert_eq!(first["meta"]["more_after"], true);
    assert_eq!(first["meta"]["more_before"], false);

    // Follow next_pages to the end: every page once, in order.
    let mut seen: Vec<u32> = pages.iter().map(|(number, _, _)| *number).collect();
    let mut next = first["meta"]["next_pages"].as_str().map(str::to_string);
    let mut calls = 1;
    while let Some(pages_field) = next {
        calls += 1;
        assert!(calls <= 40, "the walk does not end");
        let result = read_with(&ws, "book.pdf", json!({"pages": pages_field}));
        let out = pdf_text(&result);
        let pages = split_pages(out);
        assert!(!pages.is_empty(), "a call shows at least one page: {out}");
        for (number, total, text) in &pages {
            assert_eq!(*total, 40);
            assert_eq!(*text, page_text(*number), "page {number} is whole");
            seen.push(*number);
        }
        let last = pages.last().map(|(number, _, _)| *number).unwrap_or_default();
        assert!(footer(out).starts_with(&format!("(pages {}-{last} of 40 · ", pages[0].0)), "{}", footer(out));
        next = result["meta"]["next_pages"].as_str().map(str::to_string);
        match &next {
            Some(rest) => {
                assert_eq!(*rest, format!("{}-40", last + 1));
                assert!(footer(out).ends_with(&format!(" · next: pages={rest})")), "{}", footer(out));
            }
            None => {
                assert!(footer(out).ends_with(" · end of document)"), "{}", footer(out));
                assert_eq!(result["meta"]["more_after"], false);
            }
        }
    }
    assert_eq!(seen, (1..=40).collect::<Vec<_>>(), "no gap, no overlap");
    assert!(calls >= 2, "{calls} calls");
}

// ---------------------------------------------------------------------------------------------------------------
// 2. The forms of `pages`, and the wrong ones
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn each_form_of_pages_shows_exactly_those_pages_in_order_under_headers() {
    let ws = Ws::new();
    ws.file("book.pdf", book(40));
    // After the chosen pages, the footer names the pages the document goes on with.
    let cases: [(Value, Vec<u32>, &str, Option<&str>); 4] = [
        (json!("3"), vec![3], "pages 3 of 40", Some("4-40")),
        (json!("2,4-6"), vec![2, 4, 5, 6], "pages 2,4-6 of 40", Some("7-40")),
        (json!("38-"), vec![38, 39, 40], "pages 38-40 of 40", None),
        (json!(5), vec![5], "pages 5 of 40", Some("6-40")),
    ];
    for (pages, expected, window, next) in cases {
        let result = read_with(&ws, "book.pdf", json!({ "pages": pages }));
        let out = pdf_text(&result);
        let shown: Vec<u32> = split_pages(out).iter().map(|(number, _, _)| *number).collect();
        assert_eq!(shown, expected, "pages {pages}: {out}");
        for (number, total, text) in split_pages(out) {
            assert_eq!((total, text), (40, page_text(number)), "pages {pages}: page {number}");
        }
        assert!(out.starts_with(&format!("── page {} of 40 ──\n", expected[0])), "{out}");
        assert!(footer(out).starts_with(&format!("({window} · ")), "pages {pages}: {}", footer(out));
        assert_eq!(result["meta"]["page_count"], 40);
        match next {
            Some(next) => {
                assert!(footer(out).ends_with(&format!(" · next: pages={next})")), "pages {pages}: {}", footer(out));
                assert_eq!(result["meta"]["next_pages"], next, "{}", result["meta"]);
                assert_eq!(result["meta"]["more_after"], true);
            }
            None => {
                assert!(footer(out).ends_with(" · end of document)"), "pages {pages}: {}", footer(out));
                assert!(result["meta"].get("next_pages").is_none(), "{}", result["meta"]);
            }
        }
    }
}

#[test]
fn pages_past_the_end_are_invalid_range_naming_the_page_count() {
    let ws = Ws::new();
    ws.file("book.pdf", book(40));
    for pages in ["41", "39-45", "50-"] {
        let result = read_with(&ws, "book.pdf", json!({ "pages": pages }));
        let out = failure(&result, "INVALID_RANGE");
        assert!(out.contains("book.pdf has 40 page(s)"), "pages {pages}: {out}");
        assert!(out.contains("choose pages between 1 and 40"), "pages {pages}: {out}");
    }
    let out = output(&read_with(&ws, "book.pdf", json!({"pages": "41"}))).to_string();
    assert!(out.starts_with("INVALID_RANGE: page 41 is past the end"), "{out}");
}

#[test]
fn malformed_pages_are_invalid_param_with_the_valid_forms() {
    let ws = Ws::new();
    ws.file("book.pdf", book(3));
    let cases = [
        (json!("0"), "there is no page 0"),
        (json!("5-3"), "runs backwards"),
        (json!("abc"), "\"abc\" is not a page number"),
        (json!(""), "no page given"),
        (json!("1,,2"), "an empty item between commas"),
        (json!("-3"), "has no first page"),
        (json!(0), "there is no page 0"),
    ];
    for (pages, problem) in cases {
        let result = read_with(&ws, "book.pdf", json!({ "pages": pages }));
        let out = failure(&result, "INVALID_PARAM");
        assert!(out.contains(problem), "pages {pages}: {out}");
        assert!(out.contains(r#"valid forms: "3", "1-5", "2,4-6", "7-""#), "pages {pages}: {out}");
    }
    // Not a string or a page number at all.
    for pages in [json!(-2), json!(1.5), json!(true), json!(["1"])] {
        let result = read_with(&ws, "book.pdf", json!({ "pages": pages }));
        let out = failure(&result, "INVALID_PARAM");
        assert!(out.contains("`pages` must be a string"), "pages {pages}: {out}");
        assert!(out.contains(r#""2,4-6""#), "pages {pages}: {out}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Line mode: offset/limit over the rendered pages
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn offset_and_limit_window_the_rendered_pages_and_the_next_call_repeats_pages() {
    let ws = Ws::new();
    ws.file("book.pdf", book(40));
    let result = read_with(&ws, "book.pdf", json!({"pages": "3", "offset": 2, "limit": 3}));
    let out = pdf_text(&result);
    let page3: Vec<String> = page_text(3).lines().map(str::to_string).collect();
    let lines = numbered_lines(out);
    assert_eq!(lines, vec![(2, page3[0].clone()), (3, page3[1].clone()), (4, page3[2].clone())], "{out}");
    assert!(out.starts_with("2: │ p03-l01 "), "{out}");
    // The rendering of page 3: header and 26 lines (the blank line after the last page is trimmed).
    assert!(footer(out).starts_with("(lines 2-4 of 27 · "), "{}", footer(out));
    assert!(footer(out).contains(" · PDF: 40 page(s) · later pages: pages=4-40 · "), "{}", footer(out));
    assert!(footer(out).ends_with(" · next: pages=3 offset=5 limit=3)"), "{}", footer(out));
    assert_eq!(result["meta"]["next_offset"], 5);
    assert_eq!(result["meta"]["page_count"], 40);
    // The first line of the rendering is the page header.
    let header = read_with(&ws, "book.pdf", json!({"pages": "3", "offset": 1, "limit": 1}));
    assert!(output(&header).starts_with("1: ── page 3 of 40 ──\n"), "{}", output(&header));
    // The footer's next call, made.
    let next = read_with(&ws, "book.pdf", json!({"pages": "3", "offset": 5, "limit": 3}));
    assert_eq!(numbered_lines(output(&next))[0], (5, page3[3].clone()));
}

#[test]
fn a_cut_line_in_line_mode_names_the_byte_range_with_the_pages_it_is_in() {
    let ws = Ws::new();
    let long: String = (0..3000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    ws.file("long.pdf", pdf_of(&[page_text(1), format!("short first line\n{long}")]));
    let result = read_with(&ws, "long.pdf", json!({"pages": "2", "offset": 1, "limit": 10}));
    let out = pdf_text(&result);
    let marker = out.lines().find(|l| l.contains("⟨line truncated:")).unwrap_or_else(|| panic!("no cut line: {out}"));
    let call = marker.split("; use ").nth(1).and_then(|rest| rest.strip_suffix(" to read it⟩")).expect("a call");
    let (pages, range) = call.split_once(' ').expect("pages, then the range");
    assert_eq!(pages, "pages=2", "{marker}");
    let (start, end) = range.split_once(' ').expect("two ends");
    let number = |field: &str, prefix: &str| -> u64 { field.strip_prefix(prefix).unwrap().parse().unwrap() };
    let (start, end) = (number(start, "start_byte="), number(end, "end_byte="));
    // The call made as given returns the rest of the line, which ends where the long line ends.
    let rest = read_with(&ws, "long.pdf", json!({"pages": "2", "start_byte": start, "end_byte": end}));
    let (lines, _) = envelope::ranged(output(&rest));
    assert_eq!(lines.len(), 1, "the rest of one line is one line: {}", output(&rest));
    let shown = marker.split_once(": │ ").unwrap().1.split('⟨').next().unwrap();
    assert_eq!(format!("{shown}{}", lines[0].1), long, "the shown part and the rest make the line");
}

#[test]
fn paging_by_lines_through_pages_reproduces_the_page_mode_rendering() {
    let ws = Ws::new();
    ws.file("book.pdf", book(40));
    let whole = read_with(&ws, "book.pdf", json!({"pages": "1-4"}));
    let whole = pdf_text(&whole);
    let (body, _) = whole.rsplit_once('\n').expect("a footer");
    // Both take the page text from behind its gutter.
    let expected: Vec<&str> = body.split('\n').map(|line| envelope::behind_gutter(line).unwrap_or(line)).collect();
    assert_eq!(expected.len(), 4 * 28 - 1, "4 pages of header, 26 lines and a blank line, the last blank trimmed");

    let mut got: Vec<String> = Vec::new();
    let mut offset = 1;
    let mut calls = 0;
    loop {
        calls += 1;
        assert!(calls <= 10, "paging does not end");
        let result = read_with(&ws, "book.pdf", json!({"pages": "1-4", "offset": offset, "limit": 20}));
        let out = pdf_text(&result);
        let lines = numbered_lines(out);
        assert_eq!(lines.first().map(|(n, _)| *n), Some(offset), "{out}");
        assert!(lines.len() <= 20);
        got.extend(lines.into_iter().map(|(_, text)| text));
        match result["meta"]["next_offset"].as_u64() {
            Some(next) => {
                assert!(footer(out).ends_with(&format!(" · next: pages=1-4 offset={next} limit=20)")), "{out}");
                offset = next;
            }
            None => {
                assert!(footer(out).ends_with(" · end of file)"), "{}", footer(out));
                break;
            }
        }
    }
    // The rendering ends each page with a blank line; page mode trims the last one before its footer.
    while got.last().is_some_and(String::is_empty) {
        got.pop();
    }
    assert_eq!(got, expected);
    assert_eq!(calls, 6, "112 lines in windows of 20");
}

// ---------------------------------------------------------------------------------------------------------------
// 4. A page larger than the cap alone
// ---------------------------------------------------------------------------------------------------------------

/// 1000 lines of about 90 characters, each ending with `tail`.
fn big_page(tail: &str) -> String {
    (1..=1000)
        .map(|line| format!("big-{line:04} {}{tail}", ["lorem ipsum dolor sit amet"; 3].join(" ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_page_larger_than_the_cap_is_cut_with_the_call_that_reads_it_by_lines() {
    let ws = Ws::new();
    // Page 2: 1000 lines of 90 characters (90 KB).
    let big = big_page("");
    ws.file("big.pdf", pdf_of(&["A short first page".to_string(), big.clone(), "The last page".to_string()]));
    let big_lines: Vec<&str> = big.lines().collect();

    // From page 1: page 1 whole, and page 2 does not fit after it.
    let first = read(&ws, json!({"path": "big.pdf"}));
    let out = pdf_text(&first);
    assert_eq!(split_pages(out), [(1, 3, "A short first page".to_string())], "{out}");
    assert!(footer(out).ends_with(" · next: pages=2-3)"), "{}", footer(out));

    // Page 2 alone: cut, with the call that reads it by lines.
    let cut = read_with(&ws, "big.pdf", json!({"pages": "2-"}));
    let out = pdf_text(&cut);
    assert!(out.starts_with("── page 2 of 3 ──\n│ big-0001 "), "{}", &out[..100]);
    assert!(out.len() > CAP / 2, "most of the cap is used: {}", out.len());
    let marker = "\n… [page 2 is longer than the output cap; read it by lines: pages=2 offset=1 limit=200]\n";
    assert!(out.contains(marker), "{}", &out[out.len() - 400..]);
    assert!(footer(out).contains("page 2 cut at the output cap"), "{}", footer(out));
    assert!(footer(out).starts_with("(pages 2 of 3 · "), "{}", footer(out));
    assert!(footer(out).ends_with(" · next: pages=3)"), "{}", footer(out));
    assert_eq!(cut["meta"]["byte_cap_hit"], true);
    assert_eq!(cut["meta"]["next_pages"], "3");
    // What is shown is the page's own text, from its start.
    let (shown, _) = out.split_once(marker).expect("the marker");
    let shown_lines: Vec<&str> = shown.lines().skip(1).map(|line| envelope::behind_gutter(line).unwrap()).collect();
    assert!(shown_lines.len() > 100, "{} lines shown", shown_lines.len());
    assert_eq!(shown_lines[..shown_lines.len() - 1], big_lines[..shown_lines.len() - 1]);

    // The call the marker gives: the page by lines, all 1000 of them reachable.
    let by_lines = read_with(&ws, "big.pdf", json!({"pages": "2", "offset": 1, "limit": 200}));
    let out = pdf_text(&by_lines);
    let lines = numbered_lines(out);
    assert_eq!(lines.len(), 200);
    assert_eq!(lines[0], (1, "── page 2 of 3 ──".to_string()));
    assert_eq!(lines[1], (2, big_lines[0].to_string()));
    assert_eq!(lines[199], (200, big_lines[198].to_string()));
    assert!(footer(out).ends_with(" · next: pages=2 offset=201 limit=200)"), "{}", footer(out));
    let last = read_with(&ws, "big.pdf", json!({"pages": "2", "offset": 1000, "limit": 200}));
    let lines = numbered_lines(output(&last));
    assert_eq!(lines[0], (1000, big_lines[998].to_string()));
    assert_eq!(lines[1], (1001, big_lines[999].to_string()), "{}", output(&last));
}

// ---------------------------------------------------------------------------------------------------------------
// 5. Broken, hostile and image-only PDFs: clean results with the right code
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn garbage_after_a_pdf_header_is_binary() {
    let ws = Ws::new();
    let mut garbage = b"%PDF-1.7\n".to_vec();
    garbage.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    ws.file("garbage.pdf", garbage);
    let out = failure(&read(&ws, json!({"path": "garbage.pdf"})), "BINARY").to_string();
    assert!(out.starts_with("BINARY: garbage.pdf: the PDF cannot be read: "), "{out}");
    assert!(out.contains("\nNext: the PDF's text cannot be extracted; do not retry it"), "{out}");
}

#[test]
fn a_truncated_pdf_is_binary() {
    let ws = Ws::new();
    let whole = book(20);
    ws.file("half.pdf", &whole[..whole.len() / 2]);
    let out = failure(&read(&ws, json!({"path": "half.pdf"})), "BINARY").to_string();
    assert!(out.starts_with("BINARY: half.pdf: the PDF cannot be read: "), "{out}");
    assert!(out.contains("do not retry it"), "{out}");
}

#[test]
fn an_encrypted_pdf_is_binary_saying_so_and_one_the_empty_password_opens_is_read() {
    let ws = Ws::new();
    ws.file("locked.pdf", encrypted("secret"));
    ws.file("open.pdf", encrypted(""));
    let result = read(&ws, json!({"path": "locked.pdf"}));
    let out = failure(&result, "BINARY");
    assert!(out.contains("encrypted"), "{out}");
    assert!(out.contains("password"), "{out}");
    assert!(!out.contains("Secret page"), "{out}");
    let open = read(&ws, json!({"path": "open.pdf"}));
    assert_eq!(split_pages(pdf_text(&open)), [(1, 1, "Secret page".to_string())]);
}

/// A page whose second content stream is 2 GiB of zeros in 2 MiB of FlateDecode.
fn bomb_pdf() -> Vec<u8> {
    let mut fixture = Fixture::new();
    let text = fixture.doc.add_object(Stream::new(Dictionary::new(), show("Before the bomb")));
    let bomb = Stream::new(dictionary! { "Filter" => "FlateDecode" }, zeros_zlib((2u64 << 30) / 258));
    let bomb = fixture.doc.add_object(bomb);
    fixture.page(vec![text.into(), bomb.into()].into());
    fixture.bytes()
}

#[test]
fn a_decompression_bomb_is_too_large_within_seconds() {
    let ws = Ws::new();
    ws.file("bomb.pdf", bomb_pdf());
    let out = failure(&read(&ws, json!({"path": "bomb.pdf"})), "TOO_LARGE").to_string();
    assert!(out.starts_with("TOO_LARGE: bomb.pdf: "), "{out}");
    assert!(out.contains("\nNext: choose fewer pages with pages=, or skip this file"), "{out}");
}

#[test]
fn a_page_without_text_says_so_and_the_footer_suspects_a_scan() {
    let ws = Ws::new();
    let mut fixture = Fixture::new();
    fixture.text_page("Words on page one");
    let empty = fixture.doc.add_object(Stream::new(Dictionary::new(), b"0 0 m 100 100 l S".to_vec()));
    fixture.page(empty.into());
    fixture.text_page("Words on page three");
    ws.file("scan.pdf", fixture.bytes());
    let result = read(&ws, json!({"path": "scan.pdf"}));
    let out = pdf_text(&result);
    assert_eq!(
        split_pages(out),
        [
            (1, 3, "Words on page one".to_string()),
            (2, 3, "(no text on this page)".to_string()),
            (3, 3, "Words on page three".to_string())
        ],
        "{out}"
    );
    assert!(footer(out).contains(" · pages without text may be scanned images · "), "{}", footer(out));
    assert!(footer(out).ends_with(" · end of document)"), "{}", footer(out));
    // Pages that all have text: no such notice.
    let clean = read_with(&ws, "scan.pdf", json!({"pages": "1,3"}));
    assert!(!pdf_text(&clean).contains("scanned"), "{}", output(&clean));
}

// ---------------------------------------------------------------------------------------------------------------
// 6. `pages` on what is not a PDF; content decides, not the name
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn pages_on_a_text_file_or_a_directory_is_invalid_param() {
    let ws = Ws::new();
    ws.file("notes.txt", "one\ntwo\n").dir("docs");
    ws.file("docs/a.txt", "a\n");
    let out = failure(&read_with(&ws, "notes.txt", json!({"pages": "1"})), "INVALID_PARAM").to_string();
    assert!(out.contains("notes.txt: `pages` applies to PDFs, workbooks, presentations and books only"), "{out}");
    let out = failure(&read_with(&ws, "docs", json!({"pages": "1"})), "INVALID_PARAM").to_string();
    assert!(
        out.contains("docs is a directory; `pages` applies to PDFs, workbooks, presentations and books only"),
        "{out}"
    );
    assert!(!out.contains("a.txt"), "no listing: {out}");
}

#[test]
fn a_pdf_named_txt_is_read_as_a_pdf_and_text_named_pdf_as_text() {
    let ws = Ws::new();
    ws.file("notes.pdf", "Plain notes\nsecond line\n");
    ws.file("report.txt", book(2));
    let notes = read(&ws, json!({"path": "notes.pdf"}));
    assert_eq!(notes["kind"], "text");
    assert!(notes["meta"].get("rendered_from").is_none(), "{}", notes["meta"]);
    assert!(notes["meta"].get("page_count").is_none(), "{}", notes["meta"]);
    assert_eq!(output(&notes), "1: Plain notes\n2: second line\n(lines 1-2 of 2 · 24 B · end of file)");
    let report = read(&ws, json!({"path": "report.txt"}));
    assert_eq!(report["meta"]["page_count"], 2);
    assert_eq!(split_pages(pdf_text(&report)), [(1, 2, page_text(1)), (2, 2, page_text(2))], "{}", output(&report));
}

#[test]
fn the_json_flag_reads_a_pdf_like_a_stdin_request() {
    let ws = Ws::new();
    ws.file("book.pdf", book(2));
    let out = ws.cmd().args(["book.pdf", "--json"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let flag = parse_one_json(&out.stdout);
    let stdin = read(&ws, json!({"path": "book.pdf"}));
    assert_eq!(output(&flag), output(&stdin));
    assert_eq!(split_pages(pdf_text(&flag)), [(1, 2, page_text(1)), (2, 2, page_text(2))]);
}

#[test]
fn a_page_cut_by_extraction_is_never_shown_as_whole() {
    // The same oversized page, its lines ending in spaces (as extracted text often does). Extraction stops at the cap's
    // worth of raw characters; normalization then drops the trailing spaces, and what is left of the page fits under
    // the cap: it must still be reported cut, with the call that reads the rest.
    let ws = Ws::new();
    let big = big_page("   ");
    ws.file("big.pdf", pdf_of(&["A short first page".to_string(), big]));
    let result = read_with(&ws, "big.pdf", json!({"pages": "2"}));
    let out = pdf_text(&result);
    assert!(out.starts_with("── page 2 of 2 ──\n│ big-0001 "), "{}", &out[..100]);
    let whole =
        out.contains("\n│ big-1000 lorem ipsum dolor sit amet lorem ipsum dolor sit amet lorem ipsum dolor sit amet\n");
    assert!(!whole, "the page does not fit the cap");
    let tail = &out[out.len().saturating_sub(300)..];
    assert!(out.contains("read it by lines: pages=2 offset=1 limit=200]"), "no marker; the output ends:\n{tail}");
    assert!(footer(out).contains("page 2 cut at the output cap"), "{}", footer(out));
    assert_eq!(result["meta"]["byte_cap_hit"], true, "{}", result["meta"]);
}

#[test]
fn the_line_mode_next_call_writes_pages_in_the_form_it_reads_back() {
    // `pages` may be sent with spaces around commas and dashes; the footer's next call must still be one exact call.
    let ws = Ws::new();
    ws.file("book.pdf", book(6));
    let result = read_with(&ws, "book.pdf", json!({"pages": " 2 , 4 - 5 ", "limit": 2}));
    let out = pdf_text(&result);
    assert_eq!(
        numbered_lines(out),
        [(1, "── page 2 of 6 ──".to_string()), (2, page_text(2).lines().next().unwrap_or_default().to_string())]
    );
    assert!(footer(out).ends_with(" · next: pages=2,4-5 offset=3 limit=2)"), "{}", footer(out));
    // Without `pages`, the next call names the pages it windows.
    let result = read_with(&ws, "book.pdf", json!({"limit": 2}));
    assert!(footer(output(&result)).ends_with(" · next: pages=1-6 offset=3 limit=2)"), "{}", footer(output(&result)));
}

// ---------------------------------------------------------------------------------------------------------------
// PDFs as document attachments (pdf_as_document)
// ---------------------------------------------------------------------------------------------------------------

fn read_as_document(ws: &Ws, request: Value) -> Value {
    let out = ws.cmd().arg("--pdf-as-document").write_stdin(request.to_string()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    parse_one_json(&out.stdout)
}

#[test]
fn as_a_document_the_pdf_itself_is_attached_after_it_is_seen_to_open() {
    use base64::Engine;
    let ws = Ws::new();
    let bytes = book(3);
    ws.file("book.pdf", &bytes);
    let result = read_as_document(&ws, json!({"path": "book.pdf"}));
    assert_eq!(result["kind"], "attachment", "{result}");
    let attachment = &result["attachments"][0];
    assert_eq!(attachment["mime"], "application/pdf");
    let data = base64::engine::general_purpose::STANDARD.decode(attachment["data"].as_str().unwrap()).unwrap();
    assert_eq!(data, bytes, "the file's own bytes");
    assert!(result["output"].as_str().unwrap().starts_with("PDF document · 3 page(s) · "), "{}", result["output"]);
    assert_eq!(result["meta"]["mime"], "application/pdf");
    // pages or a window still get text.
    let text = read_as_document(&ws, json!({"path": "book.pdf", "pages": "2"}));
    assert_eq!(text["kind"], "text");
    assert!(pdf_text(&text).starts_with("── page 2 of 3 ──\n"));
    let lines = read_as_document(&ws, json!({"path": "book.pdf", "limit": 5}));
    assert_eq!(lines["kind"], "text");
}

#[test]
fn as_a_document_a_broken_pdf_is_an_error_never_an_attachment() {
    let ws = Ws::new();
    ws.file("broken.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\nthis is not a PDF body at all\n");
    let result = read_as_document(&ws, json!({"path": "broken.pdf"}));
    assert_eq!(result["ok"], false, "{result}");
    assert_eq!(result["error_code"], "BINARY");
    assert!(result.get("attachments").is_none());
}

// ---------------------------------------------------------------------------------------------------------------
// 7. Hostile content in bounded memory, and long documents read in proportion to the pages asked for
// ---------------------------------------------------------------------------------------------------------------

/// The address space the hostile PDFs below are read in (the binary and its PDF worker together).
#[cfg(unix)]
const SMALL_MEMORY: u64 = 256 << 20;

/// The time budget of the reads below: what they prove is what they return and the memory they take (their speed is
/// measured by `bench/pdf_long.sh`, in a release build), so a slow debug build on a busy machine must not fail them.
const PATIENT_MS: &str = "120000";

/// `read` with the binary's address space limited to [`SMALL_MEMORY`], and a patient time budget.
#[cfg(unix)]
fn read_in_small_memory(ws: &Ws, request: Value) -> Value {
    let mut cmd = ws.cmd_with_memory_limit(SMALL_MEMORY);
    cmd.args(["--timeout-ms", PATIENT_MS]).timeout(Duration::from_secs(180));
    let out = cmd.write_stdin(request.to_string()).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "request {request}; stderr: {stderr}");
    parse_one_json(&out.stdout)
}

#[cfg(unix)]
#[test]
fn a_page_of_8_million_text_operators_is_read_in_256_mb_and_says_its_text_was_capped() {
    let ws = Ws::new();
    let flood = operator_flood(8_000_000, "a");
    assert!(flood.len() < 150_000, "the fixture is {} bytes", flood.len());
    ws.file("flood.pdf", &flood);
    // The default read: the page starts, and is cut at the output cap with the call that reads it by lines.
    let first = read_in_small_memory(&ws, json!({"path": "flood.pdf"}));
    let out = pdf_text(&first);
    assert!(out.starts_with("── page 1 of 1 ──\n│ aaaaaaaa"), "{}", &out[..out.len().min(200)]);
    assert!(footer(out).contains("page 1 cut at the output cap"), "{}", footer(out));
    // By lines: the page's text stops at the per-page limit — a line of a million characters — and both the page and
    // the footer say so.
    let by_lines = read_in_small_memory(&ws, json!({"path": "flood.pdf", "pages": "1", "offset": 2, "limit": 5}));
    let out = pdf_text(&by_lines);
    let lines = numbered_lines(out);
    let marker = "… [page 1 holds more text than the 1000000 characters read of a page; the rest is not shown]";
    assert_eq!(lines.len(), 2, "{}", footer(out));
    assert_eq!(lines[1], (3, marker.to_string()));
    let (shown, rest) = lines[0].1.split_once("⟨line truncated: ").expect("the long line is cut");
    let more: usize = rest.split_once(" more bytes").and_then(|(n, _)| n.parse().ok()).expect("a byte count");
    assert!(shown.bytes().all(|b| b == b'a'), "{shown}");
    assert_eq!(shown.len() + more, 1_000_000);
    assert!(footer(out).contains("page 1: text stops at the per-page limit of 1000000 characters"), "{}", footer(out));
}

#[cfg(unix)]
#[test]
fn other_operator_floods_are_read_in_256_mb_too() {
    let ws = Ws::new();
    let page = |content: &[u8], contents: &str| {
        handmade(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>".to_vec(),
            format!("<< /Type /Page /Parent 2 0 R /Contents {contents} /Resources << /Font << /F1 5 0 R >> >> >>")
                .into_bytes(),
            stream_object("", content),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        ])
    };
    // The same stream of 100,000 operators drawn 80 times over: 8 million, read one stream at a time.
    let mut repeated = b"BT /F1 12 Tf 72 720 Td ".to_vec();
    repeated.extend("(b) Tj ".repeat(100_000).as_bytes());
    repeated.extend(b"ET");
    let contents = format!("[{}]", "4 0 R ".repeat(80));
    // Saved graphics states nested a million deep, then text.
    let mut nested = "q ".repeat(1_000_000).into_bytes();
    nested.extend(show("deep inside"));
    // One TJ array of two million elements (skipped), then text.
    let mut array = b"BT /F1 12 Tf 72 720 Td [".to_vec();
    array.extend("(c) -1 ".repeat(1_000_000).as_bytes());
    array.extend(b"] TJ 0 -20 Td (after the array) Tj ET");
    ws.file("repeated.pdf", page(&repeated, &contents));
    ws.file("nested.pdf", page(&nested, "4 0 R"));
    ws.file("array.pdf", page(&array, "4 0 R"));

    let out = read_in_small_memory(&ws, json!({"path": "repeated.pdf"}));
    assert!(pdf_text(&out).starts_with("── page 1 of 1 ──\n│ bbbbbbbb"), "{}", footer(output(&out)));
    assert!(footer(output(&out)).contains("page 1 cut at the output cap"), "{}", footer(output(&out)));
    let out = read_in_small_memory(&ws, json!({"path": "nested.pdf"}));
    assert_eq!(split_pages(pdf_text(&out)), [(1, 1, "deep inside".to_string())]);
    let out = read_in_small_memory(&ws, json!({"path": "array.pdf"}));
    assert_eq!(split_pages(pdf_text(&out)), [(1, 1, "after the array".to_string())]);
    let notice = "page 1: 1 content operation(s) too large to read skipped (past 16384 tokens or 1 MiB)";
    assert!(footer(pdf_text(&out)).contains(notice), "{}", footer(pdf_text(&out)));
}

/// `read_with` and a patient time budget.
fn read_patiently(ws: &Ws, path: &str, fields: Value) -> Value {
    let mut request = json!({ "path": path });
    if let (Some(obj), Value::Object(extra)) = (request.as_object_mut(), fields) {
        obj.extend(extra);
    }
    let mut cmd = ws.cmd();
    cmd.args(["--timeout-ms", PATIENT_MS]).timeout(Duration::from_secs(180));
    let out = cmd.write_stdin(request.to_string()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "request {request}; stderr: {}", String::from_utf8_lossy(&out.stderr));
    parse_one_json(&out.stdout)
}

#[test]
fn a_20000_page_pdf_shows_its_first_pages_and_any_page_asked_for() {
    let ws = Ws::new();
    ws.file("long.pdf", long_pdf(20_000));
    let first = read_patiently(&ws, "long.pdf", json!({}));
    let pages = split_pages(pdf_text(&first));
    assert!(pages.len() > 100, "{} pages shown", pages.len());
    for (index, (number, total, text)) in pages.iter().enumerate() {
        assert_eq!((*number, *total, text.as_str()), (index as u32 + 1, 20_000, long_pdf_text(*number).as_str()));
    }
    let next = format!("{}-20000", pages.len() + 1);
    assert_eq!(first["meta"]["next_pages"], next);
    for (asked, expected) in [("1-100", (1..=100).collect::<Vec<u32>>()), ("19990,20000", vec![19_990, 20_000])] {
        let result = read_patiently(&ws, "long.pdf", json!({"pages": asked}));
        let pages = split_pages(pdf_text(&result));
        let numbers: Vec<u32> = pages.iter().map(|(number, _, _)| *number).collect();
        assert_eq!(numbers, expected, "pages {asked}");
        assert!(pages.iter().all(|(number, _, text)| *text == long_pdf_text(*number)), "pages {asked}");
    }
}

#[test]
fn a_100000_page_pdf_reads_pages_1_to_100_and_pages_near_its_end() {
    let ws = Ws::new();
    ws.file("longer.pdf", long_pdf(100_000));
    let first = read_patiently(&ws, "longer.pdf", json!({"pages": "1-100"}));
    assert_eq!(first["meta"]["page_count"], 100_000);
    let pages = split_pages(pdf_text(&first));
    assert_eq!(pages.len(), 100);
    assert!(pages.iter().enumerate().all(|(index, (number, total, text))| {
        *number == index as u32 + 1 && *total == 100_000 && *text == long_pdf_text(*number)
    }));
    let last = read_patiently(&ws, "longer.pdf", json!({"pages": "99998-"}));
    let expected: Vec<(u32, u32, String)> = (99_998..=100_000).map(|n| (n, 100_000, long_pdf_text(n))).collect();
    assert_eq!(split_pages(pdf_text(&last)), expected);
    assert!(footer(pdf_text(&last)).ends_with(" · end of document)"), "{}", footer(pdf_text(&last)));
}

/// The PDF extraction workers among the children of process `parent` (Linux: each process's `stat` names its parent).
#[cfg(target_os = "linux")]
fn extraction_workers(parent: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit())))
        .filter(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // After the name in parentheses: the state, then the parent's id.
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let mut args = cmdline.split(|b| *b == 0);
            let program = args.next().unwrap_or_default();
            ppid == Some(parent.to_string().as_str())
                && program.ends_with(b"agent-read-worker")
                && args.next() == Some(b"pdf".as_slice())
        })
        .count()
}

/// Eight slow PDFs (each measures a 2 GiB bomb before refusing it) read at once by one MCP client: at most four
/// extraction workers run at a time (the server's children, sampled while the reads run), the others wait their turn,
/// and every read gets its own answer.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn at_most_four_pdf_extractions_run_at_once_and_the_others_wait_their_turn() {
    let ws = Ws::new();
    ws.file("bomb.pdf", bomb_pdf());
    let (client, pid) = crate::common::mcp::serve(&ws.root).await;
    let sampler = std::thread::spawn(move || {
        let mut most = 0;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            most = most.max(extraction_workers(pid));
            if most > 0 && extraction_workers(pid) == 0 && started.elapsed() > Duration::from_secs(1) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        most
    });
    let calls = vec![json!({"path": "bomb.pdf", "reread": true}); 8];
    for text in crate::common::mcp::reads_at_once(&client, calls).await {
        assert!(text.starts_with("TOO_LARGE: bomb.pdf: "), "{text}");
    }
    let most = sampler.join().unwrap();
    assert!((2..=4).contains(&most), "{most} workers at once");
    client.cancel().await.expect("shut down");
}
