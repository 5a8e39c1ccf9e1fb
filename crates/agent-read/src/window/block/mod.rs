//! The indentation block around a line — "the function around line 812" — found from indentation alone, without a
//! language parser, in one forward pass and constant memory.
//!
//! Rules (a line's *indentation* is its leading spaces and tabs, see [`LineShape`]; blank lines never decide
//! anything and belong to the block they sit in):
//! - **A blank anchor** is read as the nearest non-blank line (the one below on a tie: a blank line usually
//!   introduces what follows); the rules below then apply to that line.
//! - **A header anchor** — the next non-blank line is more indented — gives the block it opens.
//! - **A closing anchor** (`}`, `end`, …) gives the block it closes: the nearest line above at its indentation, when
//!   lines more indented stand between them.
//! - **An annotation anchor** (`@decorator`, `#[attr]`, `// comment`) followed directly by more annotations and then
//!   a header at its indentation gives that header's block.
//! - **Otherwise** the header is the nearest line above with less indentation than the anchor; with none, the
//!   anchor is at top level and its paragraph (the lines between blank lines) is returned.
//! - **Definitions first**: the header those rules find is the *innermost* one. Of it and the headers enclosing it,
//!   the block is opened by the nearest that reads as a definition (a function, method, class, impl…: see
//!   [`LineShape::definition`]), so a line inside an `if` inside a function gives the function; `levels` = 2 gives
//!   the definition around that one, and so on (the outermost when there are fewer). Where no definition encloses
//!   the line (data, a script's top level), the innermost header is taken, and `levels` counts headers instead.
//!
//! A block runs from its header through every line more indented than the header, plus one closing line at the
//! header's indentation when it starts with a closer; annotations directly above the header at its indentation
//! come first. The *parent* — the header of the enclosing block — is the anchor that widens it.
//!
//! The pass keeps the open headers above the current line as a stack of strictly increasing indentation (one entry
//! per indentation level in use, whatever the file's size), and stops as soon as the block's end is known.

mod shape;

pub use shape::LineShape;

use super::Source;
use super::scan::{self, Flow, Pass, Start};
use crate::classify::Codec;
use std::io;

/// Bytes of each line looked at: indentation deeper than this prefix counts as far as the prefix goes.
pub const KEEP_BYTES: usize = 4096;

/// A block around an anchor line, by line numbers (1-based, inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// First line: the header, or the first annotation directly above it; a paragraph's first line.
    pub start: u64,
    /// Last line: the last line of the body, or the closing line.
    pub end: u64,
    /// The line asked about.
    pub anchor: u64,
    /// The non-blank line the anchor was read as: the anchor itself unless it is blank.
    pub resolved: u64,
    /// The line that opens the block; `None` for a top-level paragraph.
    pub header: Option<u64>,
    /// The header of the enclosing block, whose block contains this one; `None` at top level.
    pub parent: Option<u64>,
}

/// What a search for a block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The block around the anchor.
    Block(Block),
    /// The anchor is past the last line; the content has this many lines.
    PastEnd(u64),
}

/// Finds the block around line `anchor` of `source`, whose text is in `codec`. Reads from the first line to the
/// block's end, holding one chunk and the open headers; stops with an error when the source's budget runs out.
#[cfg(test)]
pub fn find(source: &Source<'_>, codec: Codec, anchor: u64) -> io::Result<Found> {
    find_in(source, codec, anchor, 1, None)
}

/// [`find`] in a rendering whose document lines stand behind `gutter` (a UTF-8 prefix such as `│ `; the gutter
/// without its trailing space stands for an empty line): the indentation measured is the document's own, after it.
pub fn find_in(source: &Source<'_>, codec: Codec, anchor: u64, levels: u32, gutter: Option<&str>) -> io::Result<Found> {
    let mut finder = Finder::new(anchor, levels);
    let pass = Pass { stop_when_done: true, ..Pass::whole(source) };
    scan::scan_pass(source, pass, Start::Line(1), u64::MAX, KEEP_BYTES, |line| {
        let whole = line.kept.len() as u64 == line.content_end - line.start;
        let kept = match gutter {
            Some(gutter) if whole && line.kept == gutter.trim_end().as_bytes() => &[][..],
            Some(gutter) => line.kept.strip_prefix(gutter.as_bytes()).unwrap_or(line.kept),
            None => line.kept,
        };
        finder.feed(line.number, LineShape::of(codec, kept, whole))
    })?;
    Ok(finder.finish())
}

/// One non-blank line, as the finder remembers it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    line: u64,
    indent: u32,
    /// First of the annotations directly above it at its indentation; the line itself when there are none.
    first: u64,
    /// First line of its paragraph.
    paragraph: u64,
    closer: bool,
    annotation: bool,
    definition: bool,
}

/// Where the search stands.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Before the anchor.
    Seeking,
    /// The anchor is blank: the next non-blank line decides which line it is read as.
    BlankAnchor,
    /// The anchor is read as this line (the latest non-blank one); its successor decides what it is.
    Resolving(Entry),
    /// The anchor is an annotation followed directly by more of them: looking for what they annotate.
    Annotations(Entry),
    /// The anchor's annotations end on `candidate`, which is the header if the next line is more indented.
    Annotated { target: Entry, candidate: Entry },
    /// The header is known: looking for the end of its body.
    Body { header: Entry, parent: Option<u64>, body_end: u64 },
    /// A top-level paragraph: looking for the blank line that ends it.
    Paragraph { start: u64, end: u64 },
    /// Found.
    Done(Block),
}

/// The search as a state machine fed one line at a time, so it can be tested without files.
#[derive(Debug)]
struct Finder {
    anchor: u64,
    /// Which enclosing definition to give: 1 the nearest.
    levels: u32,
    /// Non-blank lines before `prev` that may still open a block around what follows: each entry is the nearest line
    /// above the next one with less indentation, so indentation strictly increases.
    stack: Vec<Entry>,
    /// The latest non-blank line; it joins the stack once its successor is known.
    prev: Option<Entry>,
    /// Lines fed so far.
    lines: u64,
    /// The non-blank line the anchor is read as, once known.
    resolved: Option<u64>,
    state: State,
}

impl Finder {
    fn new(anchor: u64, levels: u32) -> Finder {
        let levels = levels.max(1);
        Finder { anchor, levels, stack: Vec::new(), prev: None, lines: 0, resolved: None, state: State::Seeking }
    }

    /// Takes line `number`; `Flow::Done` once the block is known.
    fn feed(&mut self, number: u64, shape: LineShape) -> Flow {
        self.lines = number;
        if !matches!(self.state, State::Body { .. } | State::Paragraph { .. } | State::Done(_)) {
            self.seek(number, shape);
        }
        self.extend(number, shape)
    }

    /// Before the header is known: follows the anchor's neighbourhood and keeps the stack of open lines.
    fn seek(&mut self, number: u64, shape: LineShape) {
        if shape.blank {
            if number == self.anchor {
                self.state = State::BlankAnchor;
            }
            return;
        }
        let entry = self.entry(number, shape);
        self.state = match self.state {
            State::Seeking if number == self.anchor => self.read_anchor_as(entry),
            State::BlankAnchor => match self.prev {
                Some(above) if self.anchor - above.line < number - self.anchor => {
                    self.resolved = Some(above.line);
                    self.resolve(above, Some(entry))
                }
                _ => self.read_anchor_as(entry),
            },
            State::Resolving(target) => self.resolve(target, Some(entry)),
            State::Annotations(target) => self.follow_annotations(target, entry),
            State::Annotated { candidate, .. } if entry.indent > candidate.indent => self.body(candidate),
            State::Annotated { target, .. } => self.enclosing(target),
            state => state,
        };
        if let Some(prev) = self.prev.replace(entry) {
            while self.stack.last().is_some_and(|top| top.indent >= prev.indent) {
                self.stack.pop();
            }
            self.stack.push(prev);
        }
    }

    fn read_anchor_as(&mut self, entry: Entry) -> State {
        self.resolved = Some(entry.line);
        State::Resolving(entry)
    }

    fn entry(&self, number: u64, shape: LineShape) -> Entry {
        let above = self.prev.filter(|p| p.line + 1 == number);
        let annotated = above.filter(|p| p.annotation && p.indent == shape.indent);
        Entry {
            line: number,
            indent: shape.indent,
            first: annotated.map_or(number, |p| p.first),
            paragraph: above.map_or(number, |p| p.paragraph),
            closer: shape.closer,
            annotation: shape.annotation,
            definition: shape.definition,
        }
    }

    /// Decides what `target` (the latest non-blank line) is, now that its successor `next` is known.
    fn resolve(&self, target: Entry, next: Option<Entry>) -> State {
        if next.is_some_and(|n| n.indent > target.indent) {
            return self.body(target);
        }
        if target.closer
            && let Some(found) = self.closed_by(target)
        {
            return found;
        }
        if let Some(n) = next.filter(|n| target.annotation && n.line == target.line + 1 && n.indent == target.indent) {
            return if n.annotation { State::Annotations(target) } else { State::Annotated { target, candidate: n } };
        }
        self.enclosing(target)
    }

    /// The block a closing line ends: opened by the nearest line above at its indentation, with deeper lines between.
    fn closed_by(&self, closer: Entry) -> Option<State> {
        let before = self.stack.last()?;
        let opener = self.stack.iter().rev().find(|e| e.indent <= closer.indent)?;
        if opener.indent != closer.indent || opener.line == before.line {
            return None;
        }
        let (header, parent) = self.choose(*opener);
        if header.line == opener.line {
            return Some(State::Done(self.block(opener.first, closer.line, Some(header), parent)));
        }
        // A definition around the closed block: its body goes on past the closer.
        Some(State::Body { header, parent, body_end: closer.line })
    }

    fn follow_annotations(&self, target: Entry, entry: Entry) -> State {
        let directly_below = self.prev.is_some_and(|p| p.line + 1 == entry.line);
        match entry {
            e if !directly_below || e.indent != target.indent => self.enclosing(target),
            e if e.annotation => State::Annotations(target),
            candidate => State::Annotated { target, candidate },
        }
    }

    /// The block `target` sits in: opened by the nearest line above with less indentation, else its paragraph.
    /// Lines already followed past the target (annotations at its indentation, directly below) are in it too.
    fn enclosing(&self, target: Entry) -> State {
        let last = self.prev.map_or(target.line, |p| p.line.max(target.line));
        match self.stack.iter().rev().find(|e| e.indent < target.indent) {
            Some(innermost) => {
                let (header, parent) = self.choose(*innermost);
                State::Body { header, parent, body_end: last }
            }
            None => State::Paragraph { start: target.paragraph, end: last },
        }
    }

    /// The block opened by the innermost header `innermost`, or by a definition around it (see the module's rules).
    fn body(&self, innermost: Entry) -> State {
        let (header, parent) = self.choose(innermost);
        // Every line since a header around `innermost` is in that header's body (it is still on the stack).
        let body_end = self.prev.map_or(innermost.line, |p| p.line.max(innermost.line));
        State::Body { header, parent, body_end: if header.line == innermost.line { innermost.line } else { body_end } }
    }

    /// The header the block is opened by, given the innermost one: the `levels`-th definition among it and the headers
    /// around it (nearest first), or the `levels`-th header when none is a definition; and the anchor that widens
    /// the block: the nearest definition around the chosen header, else the nearest header around it.
    fn choose(&self, innermost: Entry) -> (Entry, Option<u64>) {
        let around = |inner: Entry| {
            self.stack.iter().rev().filter(move |e| e.line < inner.line && e.indent < inner.indent).copied()
        };
        let level = self.levels as usize - 1;
        let chain: Vec<Entry> = std::iter::once(innermost).chain(around(innermost)).collect();
        let definitions: Vec<Entry> = chain.iter().filter(|e| e.definition).copied().collect();
        let candidates = if definitions.is_empty() { &chain } else { &definitions };
        let header = candidates[level.min(candidates.len() - 1)];
        let parent = around(header).find(|e| e.definition).or_else(|| around(header).next()).map(|e| e.line);
        (header, parent)
    }

    fn block(&self, start: u64, end: u64, header: Option<Entry>, parent: Option<u64>) -> Block {
        Block {
            start,
            end,
            anchor: self.anchor,
            resolved: self.resolved.unwrap_or(self.anchor),
            header: header.map(|h| h.line),
            parent,
        }
    }

    /// Once the header is known: follows the body (or paragraph) to its end.
    fn extend(&mut self, number: u64, shape: LineShape) -> Flow {
        let end = match &mut self.state {
            State::Body { .. } if shape.blank => return Flow::More,
            State::Body { header, body_end, .. } if shape.indent > header.indent => {
                *body_end = number;
                return Flow::More;
            }
            State::Body { header, .. } if shape.indent == header.indent && shape.closer => number,
            State::Body { body_end, .. } => *body_end,
            State::Paragraph { end, .. } if !shape.blank && number == *end + 1 => {
                *end = number;
                return Flow::More;
            }
            State::Paragraph { end, .. } => *end,
            State::Done(_) => return Flow::Done,
            _ => return Flow::More,
        };
        self.state = State::Done(self.finished(end));
        Flow::Done
    }

    /// The block of the current state, ending at `end`.
    fn finished(&self, end: u64) -> Block {
        match self.state {
            State::Body { header, parent, .. } => self.block(header.first, end, Some(header), parent),
            State::Paragraph { start, .. } => self.block(start, end, None, None),
            State::Done(block) => block,
            _ => self.block(self.anchor, end, None, None),
        }
    }

    /// What the search found once every line was fed.
    fn finish(mut self) -> Found {
        if self.lines < self.anchor {
            return Found::PastEnd(self.lines);
        }
        loop {
            self.state = match self.state {
                State::Seeking => return Found::PastEnd(self.lines),
                State::BlankAnchor => match self.prev {
                    Some(above) => {
                        self.resolved = Some(above.line);
                        self.resolve(above, None)
                    }
                    // Nothing but blank lines: the anchor alone.
                    None => State::Done(self.block(self.anchor, self.anchor, None, None)),
                },
                State::Resolving(target) => self.resolve(target, None),
                State::Annotations(target) | State::Annotated { target, .. } => self.enclosing(target),
                State::Body { body_end: end, .. } | State::Paragraph { end, .. } => State::Done(self.finished(end)),
                State::Done(block) => return Found::Block(block),
            };
        }
    }
}

#[cfg(test)]
mod tests;
