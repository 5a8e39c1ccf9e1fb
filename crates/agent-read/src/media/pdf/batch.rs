//! A page's content handed to the extractor in bounded batches, so that no page — whatever its number of operators —
//! is parsed whole: pdf-extract parses the content it is given into a list of every operation (lopdf's
//! `Content::decode`, some 500 bytes an operator), and 8 million operators would take gigabytes.
//!
//! The [`Batcher`] reads the content's tokens in place (`lex`) and passes on whole operations, a batch at a time: a
//! batch ends at the first *clean point* after [`SOFT_TOKENS`] tokens — outside a text object, or right after an
//! operator that puts the text position at the start of a line (`BT`, `Td`, `TD`, `T*`, `Tm`) — and at
//! [`HARD_TOKENS`] in any case. Each batch after the first starts with a prologue that restores what pdf-extract
//! carries from one operation to the next and the batch boundary would lose: the saved graphics states (`q`), the
//! transformation matrix, the font and size, the text state parameters and, inside a text object, `BT` and the line
//! matrix. At a clean point the restored state is exactly pdf-extract's; a batch cut at the hard limit inside a line of
//! text loses only the advance along that line (the next word may join the previous one). The extractor's output
//! device lives across batches, so its spacing decisions carry over.
//!
//! Also bounded here: an operation of more than [`MAX_OPERATION_TOKENS`] tokens or [`MAX_OPERATION_BYTES`] bytes (no
//! real text operation comes near) is skipped and counted; saved graphics states nest at most [`MAX_SAVED_STATES`]
//! deep (deeper `q`/`Q` pairs are dropped); inline images (`BI … ID … EI`), which hold no text, are dropped whole.

use super::lex::{Kind, Lexer, Token, number_of};
use std::fmt::Write;
use std::ops::ControlFlow;

/// Tokens in a batch after which it ends at the next clean point.
pub(super) const SOFT_TOKENS: usize = 32 * 1024;
/// Tokens in a batch at most (besides its prologue).
pub(super) const HARD_TOKENS: usize = 64 * 1024;
/// Tokens of the largest operation passed on.
pub(super) const MAX_OPERATION_TOKENS: usize = 16 * 1024;
/// Bytes of the largest operation passed on.
pub(super) const MAX_OPERATION_BYTES: usize = 1024 * 1024;
/// Deepest nesting of saved graphics states passed on.
pub(super) const MAX_SAVED_STATES: usize = 64;
/// Top-level operands kept for the operator that follows (no operator that matters here takes more).
const KEPT_OPERANDS: usize = 6;

/// An affine matrix `[a b c d e f]`, as PDF writes it (row vectors: a point is `[x y 1] × M`).
type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the matrix that applies `m` first.
fn then(m: &Matrix, n: &Matrix) -> Matrix {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

/// The inverse of `m`, when there is one.
fn inverse(m: &Matrix) -> Option<Matrix> {
    let det = m[0] * m[3] - m[1] * m[2];
    let inverse = [
        m[3] / det,
        -m[1] / det,
        -m[2] / det,
        m[0] / det,
        (m[2] * m[5] - m[3] * m[4]) / det,
        (m[1] * m[4] - m[0] * m[5]) / det,
    ];
    (det != 0.0 && inverse.iter().all(|v| v.is_finite())).then_some(inverse)
}

fn translation(x: f64, y: f64) -> Matrix {
    [1.0, 0.0, 0.0, 1.0, x, y]
}

/// What pdf-extract keeps in a graphics state (saved by `q`, restored by `Q`) that bears on text.
#[derive(Clone, Debug, PartialEq)]
struct Graphics {
    ctm: Matrix,
    /// The `Tf` operands: the font's name token and the size token, as written.
    font: Option<(Vec<u8>, Vec<u8>)>,
    /// The operands of `Tc`, `Tw`, `Tz` and `Ts`, as written.
    parameters: [Option<Vec<u8>>; 4],
    /// The leading (`TL`, or `TD`'s negated y).
    leading: Option<f64>,
}

/// The text state parameter operators kept in [`Graphics::parameters`], in order.
const PARAMETERS: [&[u8]; 4] = [b"Tc", b"Tw", b"Tz", b"Ts"];

impl Default for Graphics {
    fn default() -> Graphics {
        Graphics { ctm: IDENTITY, font: None, parameters: Default::default(), leading: None }
    }
}

/// A top-level operand kept for the operator that follows: its kind and its bytes (up to OPERAND_BYTES of them; a
/// longer one is kept empty, since no operand that matters here is that long).
#[derive(Clone, Copy)]
struct Operand {
    kind: Kind,
    len: usize,
    bytes: [u8; OPERAND_BYTES],
}

/// Bytes of an operand kept.
const OPERAND_BYTES: usize = 48;

impl Operand {
    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn number(&self) -> Option<f64> {
        (self.kind == Kind::Number).then(|| number_of(self.bytes())).flatten()
    }
}

/// The last `N` operands, when they are all numbers.
fn last_numbers<const N: usize>(operands: &[Operand]) -> Option<[f64; N]> {
    let last = operands.get(operands.len().checked_sub(N)?..)?;
    let mut numbers = [0.0; N];
    for (number, operand) in numbers.iter_mut().zip(last) {
        *number = operand.number()?;
    }
    Some(numbers)
}

/// Cuts content into batches of whole operations; see the module's documentation.
pub(super) struct Batcher {
    graphics: Graphics,
    saved: Vec<Graphics>,
    /// `q`s dropped past MAX_SAVED_STATES, whose `Q`s are dropped too.
    dropped_saves: usize,
    /// The line matrix, inside a text object.
    line: Option<Matrix>,
    batch: Vec<u8>,
    batch_tokens: usize,
    batches_sent: usize,
    /// The operation being read: its top-level operands (the last few), its tokens, its nesting of arrays and
    /// dictionaries, whether it is an inline image, and its bytes from earlier calls to `feed`.
    operands: Vec<Operand>,
    operation_tokens: usize,
    nesting: usize,
    in_image: bool,
    carried: Vec<u8>,
    /// The operation being read is past the size limits: it will be skipped.
    oversized: bool,
    skipped: usize,
}

impl Batcher {
    pub(super) fn new() -> Batcher {
        Batcher {
            graphics: Graphics::default(),
            saved: Vec::new(),
            dropped_saves: 0,
            line: None,
            batch: Vec::new(),
            batch_tokens: 0,
            batches_sent: 0,
            operands: Vec::new(),
            operation_tokens: 0,
            nesting: 0,
            in_image: false,
            carried: Vec::new(),
            oversized: false,
            skipped: 0,
        }
    }

    /// Operations skipped for their size so far.
    pub(super) fn skipped(&self) -> usize {
        self.skipped
    }

    /// Reads `data`, the next part of the content (one content stream: an operation may run on into the next),
    /// passing each full batch to `sink`; stops when `sink` breaks.
    pub(super) fn feed(&mut self, data: &[u8], sink: &mut dyn FnMut(Vec<u8>) -> ControlFlow<()>) -> ControlFlow<()> {
        let mut start = 0;
        for token in Lexer::new(data) {
            if self.operation_tokens == 0 && self.carried.is_empty() {
                start = token.start;
            }
            self.operation_tokens += 1;
            if let Some(operator) = self.take(&token) {
                let carried = std::mem::take(&mut self.carried);
                self.operation(operator, &carried, &data[start..token.end], sink)?;
            }
        }
        if self.operation_tokens > 0 && !self.oversized {
            self.carried.extend_from_slice(&data[start..]);
            self.carried.push(b'\n');
        }
        self.check_size();
        ControlFlow::Continue(())
    }

    /// Ends the content: what is left of an operation is dropped, the last batch passed on.
    pub(super) fn finish(&mut self, sink: &mut dyn FnMut(Vec<u8>) -> ControlFlow<()>) -> ControlFlow<()> {
        self.reset_operation();
        self.flush(sink)
    }

    /// Takes one token into the operation being read; returns the operator when it ends the operation.
    fn take<'a>(&mut self, token: &Token<'a>) -> Option<&'a [u8]> {
        match token.kind {
            Kind::ArrayOpen | Kind::DictOpen => {
                self.keep_operand(token);
                self.nesting += 1;
            }
            Kind::ArrayClose | Kind::DictClose => self.nesting = self.nesting.saturating_sub(1),
            Kind::InlineData => return Some(b"BI"),
            Kind::Operator if token.bytes == b"BI" => self.in_image = true,
            Kind::Operator if !self.in_image => return Some(token.bytes),
            Kind::Operator => {}
            Kind::Number | Kind::Name | Kind::String | Kind::Constant => self.keep_operand(token),
        }
        self.check_size();
        None
    }

    fn keep_operand(&mut self, token: &Token<'_>) {
        if self.nesting == 0 && !self.in_image {
            if self.operands.len() == KEPT_OPERANDS {
                self.operands.remove(0);
            }
            let mut operand = Operand { kind: token.kind, len: 0, bytes: [0; OPERAND_BYTES] };
            if token.bytes.len() <= OPERAND_BYTES {
                operand.len = token.bytes.len();
                operand.bytes[..operand.len].copy_from_slice(token.bytes);
            }
            self.operands.push(operand);
        }
    }

    /// Marks the operation oversized once it passes a limit (its bytes are then no longer kept).
    fn check_size(&mut self) {
        if self.operation_tokens > MAX_OPERATION_TOKENS || self.carried.len() > MAX_OPERATION_BYTES {
            self.oversized = true;
            self.carried = Vec::new();
        }
    }

    /// One whole operation (its bytes: `carried` from earlier data, then `bytes`): skipped, dropped, or added to the
    /// batch (which is passed on when full).
    fn operation(
        &mut self,
        operator: &[u8],
        carried: &[u8],
        bytes: &[u8],
        sink: &mut dyn FnMut(Vec<u8>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let malformed = self.nesting > 0;
        let oversized = self.oversized || carried.len() + bytes.len() > MAX_OPERATION_BYTES;
        let tokens = self.operation_tokens;
        if oversized {
            self.skipped += 1;
        }
        // An operator inside an array or dictionary, which lopdf would not parse; an inline image, which holds no
        // text: both dropped.
        let passed = !oversized && !malformed && operator != b"BI";
        if passed && self.batch_tokens + tokens > HARD_TOKENS {
            self.flush(sink)?;
        }
        let kept = passed && self.interpret(operator);
        self.reset_operation();
        if !kept {
            return ControlFlow::Continue(());
        }
        if self.batch.is_empty() && self.batches_sent > 0 {
            self.write_prologue();
        }
        self.batch.extend_from_slice(carried);
        self.batch.extend_from_slice(bytes);
        self.batch.push(b'\n');
        self.batch_tokens += tokens;
        let clean = self.line.is_none() || matches!(operator, b"BT" | b"Td" | b"TD" | b"T*" | b"Tm");
        if self.batch_tokens >= HARD_TOKENS || (self.batch_tokens >= SOFT_TOKENS && clean) {
            self.flush(sink)?;
        }
        ControlFlow::Continue(())
    }

    fn reset_operation(&mut self) {
        self.operands.clear();
        self.operation_tokens = 0;
        self.nesting = 0;
        self.in_image = false;
        self.carried.clear();
        self.oversized = false;
    }

    /// Passes the batch on, if it holds anything.
    fn flush(&mut self, sink: &mut dyn FnMut(Vec<u8>) -> ControlFlow<()>) -> ControlFlow<()> {
        if self.batch.is_empty() {
            return ControlFlow::Continue(());
        }
        self.batch_tokens = 0;
        self.batches_sent += 1;
        sink(std::mem::take(&mut self.batch))
    }

    /// Follows the state an operator changes (its operands are those kept); false when the operation is dropped (a
    /// `q` too deep, its `Q`).
    fn interpret(&mut self, operator: &[u8]) -> bool {
        let operands = &self.operands;
        match operator {
            b"q" if self.saved.len() >= MAX_SAVED_STATES => {
                self.dropped_saves += 1;
                return false;
            }
            b"q" => self.saved.push(self.graphics.clone()),
            b"Q" if self.dropped_saves > 0 => {
                self.dropped_saves -= 1;
                return false;
            }
            b"Q" => {
                if let Some(graphics) = self.saved.pop() {
                    self.graphics = graphics;
                }
            }
            b"cm" => {
                if let Some(m) = last_numbers::<6>(operands) {
                    self.graphics.ctm = then(&m, &self.graphics.ctm);
                }
            }
            b"Tf" => {
                if let [.., name, size] = operands.as_slice()
                    && name.kind == Kind::Name
                    && size.kind == Kind::Number
                {
                    self.graphics.font = Some((name.bytes().to_vec(), size.bytes().to_vec()));
                }
            }
            b"TL" => self.graphics.leading = last_numbers::<1>(operands).map(|[leading]| leading),
            b"BT" => self.line = Some(IDENTITY),
            b"ET" => self.line = None,
            b"Tm" => {
                if let (Some(_), Some(m)) = (self.line, last_numbers::<6>(operands)) {
                    self.line = Some(m);
                }
            }
            b"Td" | b"TD" => {
                if let Some([x, y]) = last_numbers::<2>(operands) {
                    self.move_line(operator == b"TD", x, y);
                }
            }
            b"T*" => self.move_line(false, 0.0, -self.graphics.leading.unwrap_or(0.0)),
            _ => {
                if let Some(index) = PARAMETERS.iter().position(|name| *name == operator) {
                    let value = operands.last().filter(|operand| operand.kind == Kind::Number);
                    self.graphics.parameters[index] = value.map(|operand| operand.bytes().to_vec());
                }
            }
        }
        true
    }

    /// `Td`, `TD` and `T*`: the line matrix moves by (x, y); `TD` also sets the leading.
    fn move_line(&mut self, sets_leading: bool, x: f64, y: f64) {
        if sets_leading {
            self.graphics.leading = Some(-y);
        }
        if let Some(line) = self.line {
            self.line = Some(then(&translation(x, y), &line));
        }
    }

    /// Restores the state at the start of a batch: the saved states, then the current one, then the text object.
    fn write_prologue(&mut self) {
        let mut prologue = String::new();
        let mut previous = Graphics::default();
        for graphics in &self.saved {
            write_change(&mut prologue, &previous, graphics);
            prologue.push_str("q\n");
            previous = graphics.clone();
        }
        write_change(&mut prologue, &previous, &self.graphics);
        if let Some(line) = self.line {
            prologue.push_str("BT\n");
            if let Some(numbers) = numbers_of(&line) {
                let _ = writeln!(prologue, "{numbers} Tm");
            }
        }
        self.batch_tokens += prologue.split_ascii_whitespace().count();
        self.batch.extend_from_slice(prologue.as_bytes());
    }
}

/// Writes the operators that take pdf-extract's state from `from` to `to`.
fn write_change(out: &mut String, from: &Graphics, to: &Graphics) {
    if to.ctm != from.ctm {
        // `cm` multiplies: the change is what takes the current matrix to the wanted one.
        if let Some(change) = inverse(&from.ctm).map(|inverse| then(&to.ctm, &inverse)).as_ref().and_then(numbers_of) {
            let _ = writeln!(out, "{change} cm");
        }
    }
    if to.font != from.font
        && let Some((name, size)) = &to.font
    {
        let _ = writeln!(out, "{} {} Tf", String::from_utf8_lossy(name), String::from_utf8_lossy(size));
    }
    for (index, operator) in PARAMETERS.iter().enumerate() {
        if to.parameters[index] != from.parameters[index]
            && let Some(value) = &to.parameters[index]
        {
            let _ = writeln!(out, "{} {}", String::from_utf8_lossy(value), String::from_utf8_lossy(operator));
        }
    }
    if to.leading != from.leading
        && let Some(leading) = to.leading.and_then(number)
    {
        let _ = writeln!(out, "{leading} TL");
    }
}

/// A matrix as six PDF numbers, when all are finite.
fn numbers_of(m: &Matrix) -> Option<String> {
    let numbers: Option<Vec<String>> = m.iter().map(|&v| number(v)).collect();
    numbers.map(|numbers| numbers.join(" "))
}

/// A number as PDF writes it (no exponent), when it is finite.
fn number(value: f64) -> Option<String> {
    if !value.is_finite() {
        return None;
    }
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return Some(format!("{}", value as i64));
    }
    Some(format!("{value:.6}"))
}

#[cfg(test)]
mod tests;
