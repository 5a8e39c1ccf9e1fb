//! HTML → readable text: headings as `#` lines, paragraphs, lists as `-` and `1.` items, links as `[text](url)`,
//! images by their alternative text, preformatted text fenced, tables as pipe tables; nothing of what a browser does
//! not show (script, style, template, the head, `hidden`, `aria-hidden="true"`, `display:none`, `visibility:hidden`).
//!
//! html5ever parses the page as a browser would, into scraper's arena tree, fed in chunks with the time budget checked
//! between them (building the tree of a deeply nested page takes time that grows with the square of its depth); the
//! tree is walked by its open/close edges, without recursion, so a deeply nested page costs no stack.
//!
//! The tree takes far more memory than the page (a node per tag and per text between tags, each many times the bytes
//! of `<p>`), so what it holds is reserved, chunk by chunk, from the budget every read in the process shares
//! ([`crate::media::memory`]): a page whose tree outgrows it is refused (its markup stays readable by byte ranges).

use super::markdown::pipe_table;
use super::{Check, DocumentError, Out};
use crate::media::memory::{Growing, Refusal, busy_error};
use crate::render::human_size;
use ego_tree::iter::Edge;
use ego_tree::{NodeId, Tree};
use html5ever::tendril::TendrilSink;
use scraper::node::Element;
use scraper::{Html, HtmlTreeSink, Node, StrTendril};

/// Nodes between two checks of the time budget.
const CHECK_EVERY: u32 = 4096;
/// Bytes of a page fed to the parser between two checks of the time budget (and of its tree's memory).
const PARSE_CHUNK: usize = 16 * 1024;
/// Memory a tree is taken to hold per node (with its share of the arena's growth), per attribute, and per byte of the
/// page fed (the page itself, and its texts and attribute values at most twice: they grow as the parser appends to
/// them). A start tag makes at most two nodes (its element, and the text after it), which is what is reserved up front.
const NODE_BYTES: u64 = 128;
const ATTRIBUTE_BYTES: u64 = 48;
pub const FED_BYTE_BYTES: u64 = 3;
const NODES_PER_START_TAG: u64 = 2;

/// Elements whose content is never shown.
const UNSHOWN: &[&str] =
    &["script", "style", "noscript", "template", "head", "svg", "iframe", "object", "embed", "canvas", "title"];

/// Converts an HTML page into `out`, its tree held in `memory` on top of `base`: what the read holds there besides the
/// page and its tree (a book's file; nothing for a page read on its own, whose bytes are reserved as the tree's).
pub fn convert(
    page: &str,
    out: &mut Out<'_>,
    check: Check<'_>,
    memory: &mut Growing,
    base: u64,
) -> Result<(), DocumentError> {
    let html = parse(page, check, memory, base)?;
    let mut walk = Walk::new(out);
    let mut skip: Option<NodeId> = None;
    let mut seen = 0u32;
    for edge in html.tree.root().traverse() {
        seen += 1;
        if seen.is_multiple_of(CHECK_EVERY) {
            check()?;
            if walk.out.stopped() {
                break;
            }
        }
        match edge {
            Edge::Open(node) if skip.is_none() => match node.value() {
                Node::Element(element) if is_hidden(element) => skip = Some(node.id()),
                Node::Element(element) => walk.open(element),
                Node::Text(text) => walk.text(text),
                _ => {}
            },
            Edge::Close(node) if skip == Some(node.id()) => skip = None,
            Edge::Close(node) if skip.is_none() => {
                if let Node::Element(element) = node.value() {
                    walk.close(element);
                }
            }
            _ => {}
        }
    }
    walk.flush();
    Ok(())
}

/// Parses a page in chunks, checking the time budget between them and holding in `memory` what the tree has grown to.
fn parse(page: &str, check: Check<'_>, memory: &mut Growing, base: u64) -> Result<Html, DocumentError> {
    // What the whole tree will likely take, first: a read waits for memory only while it holds none.
    let likely = start_tags(page) * NODES_PER_START_TAG * NODE_BYTES + page.len() as u64 * FED_BYTE_BYTES;
    memory.cover(base + likely).map_err(|refusal| tree_refused(refusal, base, 0, page.len() as u64))?;
    let mut parser = html5ever::parse_document(HtmlTreeSink::new(Html::new_document()), Default::default());
    let mut size = TreeSize::default();
    let mut rest = page;
    while !rest.is_empty() {
        let mut end = rest.len().min(PARSE_CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from(&rest[..end]));
        rest = &rest[end..];
        check()?;
        let fed = (page.len() - rest.len()) as u64;
        let bytes = size.bytes_after(&parser.tokenizer.sink.sink.0.borrow().tree, fed);
        memory.cover(base + bytes).map_err(|refusal| tree_refused(refusal, base, fed, page.len() as u64))?;
    }
    Ok(parser.finish())
}

/// The nodes and attributes of a tree being parsed, counted as it grows (nodes are only ever added to the arena:
/// one the parser removes stays there, detached).
#[derive(Default)]
struct TreeSize {
    counted: usize,
    nodes: u64,
    attributes: u64,
}

impl TreeSize {
    /// The memory `tree` holds once `fed` bytes of the page went in: the nodes added since the last count are counted.
    /// A repeated `<html>` or `<body>` tag adds its attributes to the element the first one made, so theirs are
    /// counted afresh each time.
    fn bytes_after(&mut self, tree: &Tree<Node>, fed: u64) -> u64 {
        let len = tree.values().len();
        // From the end: the arena's values are a slice, but this iterator skips forward one by one.
        for node in tree.values().rev().take(len - self.counted) {
            self.nodes += 1;
            self.attributes += attributes(node);
        }
        self.counted = len;
        let html = tree.root().children().find(|node| node.value().is_element());
        let body = html
            .iter()
            .flat_map(|html| html.children())
            .find(|node| node.value().as_element().is_some_and(|element| element.name() == "body"));
        let added = [html, body].into_iter().flatten().map(|node| attributes(node.value())).sum::<u64>();
        (self.nodes * NODE_BYTES + (self.attributes + added) * ATTRIBUTE_BYTES).saturating_add(fed * FED_BYTE_BYTES)
    }
}

/// The start tags a page may hold: each `<` before a letter.
fn start_tags(page: &str) -> u64 {
    let bytes = page.as_bytes();
    memchr::memchr_iter(b'<', bytes).filter(|&at| bytes.get(at + 1).is_some_and(u8::is_ascii_alphabetic)).count() as u64
}

fn attributes(node: &Node) -> u64 {
    node.as_element().map_or(0, |element| element.attrs().count() as u64)
}

/// Why a page's tree cannot be held on top of `base`, in the model's terms.
fn tree_refused(refusal: Refusal, base: u64, fed: u64, len: u64) -> DocumentError {
    match refusal {
        Refusal::TooLargeAlone { needed, capacity } => {
            let when = match fed {
                0 => format!("its {} counted before parsing", human_size(len)),
                _ => format!("{} into its {}", human_size(fed), human_size(len)),
            };
            DocumentError::TooLarge(format!(
                "its tree of elements would take about {} of memory, more than the {} all reads share ({when})",
                human_size(needed - base),
                human_size(capacity),
            ))
        }
        Refusal::Busy { needed, held, capacity, waited } => {
            let need = format!("the page's tree needs about {} of memory", human_size(needed - base));
            DocumentError::Stopped(busy_error("converted", &need, held, capacity, waited))
        }
        Refusal::Stopped(error) => DocumentError::Stopped(error),
    }
}

/// Whether a browser would show nothing of this element.
fn is_hidden(element: &Element) -> bool {
    let name = element.name();
    if UNSHOWN.contains(&name) || element.attr("hidden").is_some() {
        return true;
    }
    if element.attr("aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return true;
    }
    if name == "input" && element.attr("type").is_some_and(|t| t.eq_ignore_ascii_case("hidden")) {
        return true;
    }
    element.attr("style").is_some_and(|style| {
        let style: String = style.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        style.contains("display:none") || style.contains("visibility:hidden")
    })
}

/// A table under way; `saved` is the text that was under way when its current cell opened.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    saved: Vec<String>,
}

struct Walk<'o, 'w> {
    out: &'o mut Out<'w>,
    /// The text of the block under way.
    inline: String,
    /// Open lists: ordered, and the count so far.
    lists: Vec<(bool, u32)>,
    /// The marker the next line of a list item starts with.
    marker: Option<String>,
    quotes: usize,
    pre: usize,
    links: Vec<(usize, Option<String>)>,
    tables: Vec<Table>,
}

impl<'o, 'w> Walk<'o, 'w> {
    fn new(out: &'o mut Out<'w>) -> Walk<'o, 'w> {
        Walk {
            out,
            inline: String::new(),
            lists: Vec::new(),
            marker: None,
            quotes: 0,
            pre: 0,
            links: Vec::new(),
            tables: Vec::new(),
        }
    }

    fn open(&mut self, element: &Element) {
        match element.name() {
            "br" => self.flush(),
            "hr" => {
                self.flush();
                self.out.line("---");
            }
            "ul" | "ol" => {
                self.flush();
                self.lists.push((element.name() == "ol", 0));
            }
            "li" => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some((true, count)) => {
                        *count += 1;
                        format!("{count}.")
                    }
                    _ => "-".to_string(),
                };
                self.marker = Some(format!("{}{marker} ", "  ".repeat(depth)));
            }
            "blockquote" => {
                self.flush();
                self.quotes += 1;
            }
            "pre" => {
                self.flush();
                self.pre += 1;
            }
            "a" => self.links.push((self.inline.len(), element.attr("href").map(str::to_string))),
            "img" => {
                if let Some(alt) = element.attr("alt").filter(|alt| !alt.trim().is_empty()) {
                    let src = element.attr("src").unwrap_or_default();
                    self.inline.push_str(&format!("![{}]({src})", alt.trim()));
                }
            }
            "code" if self.pre == 0 => self.inline.push('`'),
            "table" => {
                self.flush();
                self.tables.push(Table::default());
            }
            "td" | "th" => {
                if let Some(table) = self.tables.last_mut() {
                    table.saved.push(std::mem::take(&mut self.inline));
                }
            }
            name if is_block(name) => self.flush(),
            _ => {}
        }
    }

    fn close(&mut self, element: &Element) {
        match element.name() {
            name @ ("h1" | "h2" | "h3" | "h4" | "h5" | "h6") => {
                let level = usize::from(name.as_bytes()[1] - b'0');
                let text = collapse(&std::mem::take(&mut self.inline));
                if !text.is_empty() {
                    self.out.blank();
                    self.out.line(&format!("{} {text}", "#".repeat(level)));
                    self.out.blank();
                }
            }
            "ul" | "ol" => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.out.blank();
                }
            }
            "li" => {
                self.flush();
                self.marker = None;
            }
            "blockquote" => {
                self.flush();
                self.quotes = self.quotes.saturating_sub(1);
                self.out.blank();
            }
            "pre" => self.close_pre(),
            "a" => self.close_link(),
            "code" if self.pre == 0 => self.inline.push('`'),
            "td" | "th" => {
                if let Some(table) = self.tables.last_mut() {
                    let text = collapse(&std::mem::take(&mut self.inline));
                    table.row.push(text);
                    self.inline = table.saved.pop().unwrap_or_default();
                }
            }
            "tr" => {
                if let Some(table) = self.tables.last_mut() {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            "table" => self.close_table(),
            name if is_block(name) => {
                self.flush();
                if self.lists.is_empty() {
                    self.out.blank();
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        self.inline.push_str(text);
    }

    /// Writes the block under way as one line (behind its list marker and quote marks); nothing when it is empty.
    fn flush(&mut self) {
        if self.pre > 0 || !self.tables.is_empty() && self.tables.last().is_some_and(|t| !t.saved.is_empty()) {
            return;
        }
        let text = collapse(&std::mem::take(&mut self.inline));
        if text.is_empty() {
            return;
        }
        let marker = self
            .marker
            .take()
            .unwrap_or_else(|| if self.lists.is_empty() { String::new() } else { "  ".repeat(self.lists.len()) });
        self.out.line(&format!("{}{marker}{text}", "> ".repeat(self.quotes)));
    }

    fn close_pre(&mut self) {
        self.pre = self.pre.saturating_sub(1);
        if self.pre > 0 {
            return;
        }
        let text = std::mem::take(&mut self.inline);
        self.out.blank();
        self.out.line("```");
        for line in text.trim_matches('\n').lines() {
            self.out.line(line);
        }
        self.out.line("```");
        self.out.blank();
    }

    /// Ends a link: its text becomes `[text](url)`; a link without a usable URL stays its text.
    fn close_link(&mut self) {
        let Some((start, href)) = self.links.pop() else { return };
        let start = start.min(self.inline.len());
        let label = collapse(&self.inline[start..]);
        let Some(url) = href.map(|h| h.trim().to_string()).filter(|h| usable_url(h)) else { return };
        if label.is_empty() {
            return;
        }
        // The spaces around the link's text stay outside the brackets, as many as the page had (none glued on).
        let raw = &self.inline[start..];
        let before = if raw.starts_with(char::is_whitespace) { " " } else { "" };
        let after = if raw.ends_with(char::is_whitespace) { " " } else { "" };
        let link = format!("{before}[{label}]({}){after}", url.replace(' ', "%20"));
        self.inline.truncate(start);
        self.inline.push_str(&link);
    }

    fn close_table(&mut self) {
        let Some(table) = self.tables.pop() else { return };
        let rows: Vec<Vec<String>> = table.rows.into_iter().filter(|row| row.iter().any(|c| !c.is_empty())).collect();
        if rows.is_empty() {
            return;
        }
        if self.tables.last().is_some_and(|outer| !outer.saved.is_empty()) {
            let flat: Vec<String> = rows.iter().map(|row| row.join(" / ")).collect();
            self.inline.push(' ');
            self.inline.push_str(&flat.join("; "));
            return;
        }
        self.out.blank();
        for line in pipe_table(&rows).lines() {
            self.out.line(line);
        }
        self.out.blank();
    }
}

/// Block elements: each starts a new line.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "main"
            | "nav"
            | "aside"
            | "figure"
            | "figcaption"
            | "form"
            | "fieldset"
            | "address"
            | "dl"
            | "dt"
            | "dd"
            | "details"
            | "summary"
            | "body"
            | "caption"
            | "tr"
            | "thead"
            | "tbody"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
    )
}

/// Whether an `href` leads somewhere a reader can go (not a script).
fn usable_url(href: &str) -> bool {
    !href.is_empty() && !href.to_ascii_lowercase().starts_with("javascript:")
}

/// Runs of whitespace as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, Cancel};
    use crate::media::memory::Pool;
    use std::time::{Duration, Instant};

    fn unlimited() -> Growing {
        let budget = Budget::new(Instant::now() + Duration::from_secs(3600), Cancel::new());
        Growing::new(Pool::shared(), budget)
    }

    fn text_of(page: &str) -> String {
        let mut sink = Vec::new();
        let mut out = Out::flow(&mut sink);
        assert!(convert(page, &mut out, &mut || Ok(()), &mut unlimited(), 0).is_ok() && out.finish().is_ok());
        String::from_utf8_lossy(&sink).into_owned()
    }

    #[test]
    fn hidden_content_is_left_out_and_structure_kept() {
        let page = r#"<html><head><title>T</title><style>p{}</style></head><body>
            <h2>Intro</h2><p>Hello <a href="https://x.test/a">the site</a>.</p>
            <script>alert(1)</script><div hidden>secret1</div><p style="display: none">secret2</p>
            <span aria-hidden="true">secret3</span><ul><li>one</li><li>two<ol><li>deep</li></ol></li></ul>
            <table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table></body></html>"#;
        let text = text_of(page);
        for secret in ["secret", "alert", "p{}", "T\n"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("## Intro"), "{text}");
        assert!(text.contains("Hello [the site](https://x.test/a)."), "{text}");
        assert!(text.contains("- one\n- two\n  1. deep"), "{text}");
        assert!(text.contains("| k | v |\n| --- | --- |\n| a | 1 |"), "{text}");
    }

    #[test]
    fn a_tree_is_held_as_it_grows_refused_past_the_whole_budget_and_waits_while_others_hold_it() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(4 << 20)));
        let within = Budget::new(Instant::now() + Duration::from_secs(60), Cancel::new());
        // About 20,000 nodes: within the pool, and held while the tree lives.
        let page = format!("<p>{}</p>", "<i>x</i>".repeat(10_000));
        let mut memory = Growing::new(pool, within.clone());
        let html = parse(&page, &mut || Ok(()), &mut memory, 0).unwrap();
        assert!(html.tree.values().len() > 20_000);
        let held = memory.held();
        assert!((20_000 * NODE_BYTES..4 << 20).contains(&held), "{held}");
        drop((html, memory));
        assert_eq!(pool.held(), 0);
        // On top of what the read holds besides (a book's file): the same tree, reserved beyond it.
        let mut memory = Growing::new(pool, within.clone());
        memory.cover(1 << 20).unwrap();
        let _html = parse(&page, &mut || Ok(()), &mut memory, 1 << 20).unwrap();
        assert!(memory.held() >= (1 << 20) + held, "{} on top of 1 MiB", memory.held());
        drop((_html, memory));
        // Five times that: past the whole pool.
        let page = format!("<p>{}</p>", "<i>x</i>".repeat(50_000));
        let refused = parse(&page, &mut || Ok(()), &mut Growing::new(pool, within), 0);
        let Err(DocumentError::TooLarge(why)) = refused else { panic!("{:?}", refused.map(|_| ())) };
        let says = "its tree of elements would take about 13.4 MiB of memory, more than the 4.0 MiB all reads share \
                    (its 390.6 KiB counted before parsing)";
        assert_eq!(why, says);
        // Few tags, but elements cloned again and again as misnested formatting tags make a browser do: past the pool
        // while parsing.
        let page = format!("<p><b><i><u><s>{}", "</p><p>x".repeat(8_000));
        let refused = parse(&page, &mut || Ok(()), &mut Growing::new(pool, within_a_second()), 0);
        let Err(DocumentError::TooLarge(why)) = refused else { panic!("{:?}", refused.map(|_| ())) };
        assert!(why.contains(" into its "), "{why}");
        // Within the pool, but others hold most of it: waits half its time, then is busy.
        let others = pool.reserve(3 << 20, &within_a_second()).unwrap();
        let page = format!("<p>{}</p>", "<i>x</i>".repeat(10_000));
        let busy = parse(&page, &mut || Ok(()), &mut Growing::new(pool, within_a_second()), 0);
        let Err(DocumentError::Stopped(error)) = busy else { panic!("{:?}", busy.map(|_| ())) };
        assert_eq!(error.kind(), std::io::ErrorKind::ResourceBusy, "{error}");
        assert!(error.to_string().contains("other reads hold 3.0 MiB of the 4.0 MiB they share"), "{error}");
        assert!(error.to_string().contains("and it waited 0."), "it waited for memory, holding none: {error}");
        drop(others);
        assert_eq!(pool.held(), 0);
    }

    fn within_a_second() -> Budget {
        Budget::new(Instant::now() + Duration::from_secs(1), Cancel::new())
    }

    #[test]
    fn attributes_a_repeated_body_tag_adds_are_counted_too() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(1 << 30)));
        let budget = Budget::new(Instant::now() + Duration::from_secs(60), Cancel::new());
        let plain = "<body>".repeat(20_000);
        let named: String = (0..20_000).map(|i| format!("<body a{i}>")).collect();
        let held = |page: &str| {
            let html = parse(page, &mut || Ok(()), &mut Growing::new(pool, budget.clone()), 0).unwrap();
            (html.tree.values().len(), TreeSize::default().bytes_after(&html.tree, 0))
        };
        let ((plain_nodes, plain_bytes), (named_nodes, named_bytes)) = (held(&plain), held(&named));
        assert_eq!(plain_nodes, named_nodes, "one body element either way");
        assert!(named_bytes - plain_bytes >= 20_000 * ATTRIBUTE_BYTES, "{plain_bytes} then {named_bytes}");
    }

    #[test]
    fn deep_nesting_costs_no_stack() {
        let page = format!("{}deep{}", "<blockquote>".repeat(1500), "</blockquote>".repeat(1500));
        assert!(text_of(&page).contains("deep"));
    }

    #[test]
    fn the_time_budget_stops_the_parse_of_a_deeply_nested_page() {
        let page = "<div>".repeat(200_000);
        let mut checks = 0;
        let mut check = || {
            checks += 1;
            if checks > 1 { Err(std::io::Error::from(std::io::ErrorKind::TimedOut)) } else { Ok(()) }
        };
        let mut sink = Vec::new();
        let stopped = convert(&page, &mut Out::flow(&mut sink), &mut check, &mut unlimited(), 0);
        assert!(matches!(stopped, Err(DocumentError::Stopped(_))), "{stopped:?}");
    }
}
