//! How many tokens a model will count in a text: a byte heuristic by default, exact counts (OpenAI's `o200k_base`
//! encoding, bundled, offline) with the `tiktoken` cargo feature. And what an image costs each family of models, by
//! the rules their providers publish (docs/formats.md, "Tokens").

use serde::{Deserialize, Serialize};

/// How a session counts tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenCounting {
    /// A byte heuristic: a token for every 4 bytes of ASCII, one for every other character. It is close for code and
    /// English prose, and errs high for CJK text.
    #[default]
    Estimate,
    /// Exact counts in the `o200k_base` encoding (needs the `tiktoken` cargo feature).
    O200k,
}

impl TokenCounting {
    /// Parses `estimate` or `o200k`; the error names the valid choices, and the feature when it is missing.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "estimate" => Ok(TokenCounting::Estimate),
            "o200k" => TokenCounting::O200k.available(),
            other => Err(format!("unknown token counting `{other}`; use `estimate` or `o200k`")),
        }
    }

    /// `Ok(self)` when this build can count this way.
    pub fn available(self) -> Result<Self, String> {
        if self == TokenCounting::O200k && !cfg!(feature = "tiktoken") {
            return Err("exact token counts (`o200k`) need agent-read built with the `tiktoken` feature \
                        (cargo install agent-read --features tiktoken); or use `estimate`"
                .to_string());
        }
        Ok(self)
    }

    /// The tokens in `text`.
    pub fn count(self, text: &str) -> u64 {
        match self {
            TokenCounting::Estimate => estimate(text),
            TokenCounting::O200k => exact(text),
        }
    }

    /// Bytes of output that hold about `tokens` tokens of typical text; used to size a window to what is left.
    pub fn bytes_for(self, tokens: u64) -> u64 {
        tokens.saturating_mul(4)
    }
}

/// The byte heuristic: ASCII bytes / 4, rounded up, plus one token per non-ASCII character.
pub fn estimate(text: &str) -> u64 {
    // In valid UTF-8 every non-ASCII character has exactly one leading byte, 0b11xx_xxxx, so one pass over bytes
    // counts both. Byte-sized counters over blocks of 255 let the compiler vectorise the loop (decoding `chars()`
    // took 4 µs per 10 KB answer).
    let (mut ascii, mut other) = (0u64, 0u64);
    for block in text.as_bytes().chunks(255) {
        let (mut block_ascii, mut block_other) = (0u8, 0u8);
        for &byte in block {
            block_ascii += u8::from(byte < 0x80);
            block_other += u8::from(byte >= 0xC0);
        }
        ascii += u64::from(block_ascii);
        other += u64::from(block_other);
    }
    ascii.div_ceil(4) + other
}

/// An image's estimated cost in tokens for each family of models, from its width and height.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ImageTokens {
    /// Claude: width × height ÷ 750, after Anthropic's own downscale to at most 1568 pixels on the long side and
    /// about 1.2 megapixels.
    pub anthropic: u64,
    /// GPT-4o and its successors at high detail: 85, plus 170 per 512-pixel tile once fitted in 2048 × 2048 and
    /// the shortest side brought down to 768.
    pub openai: u64,
    /// Gemini: 258 for an image within 384 × 384, else 258 per 768 × 768 tile.
    pub gemini: u64,
}

impl ImageTokens {
    /// The estimates for an image of `width` × `height` pixels.
    pub fn of(width: u32, height: u32) -> ImageTokens {
        let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
        ImageTokens { anthropic: anthropic(w, h), openai: openai(w, h), gemini: gemini(w, h) }
    }

    /// The largest of the estimates: what a session's budget charges, not knowing the model.
    pub fn most(&self) -> u64 {
        self.anthropic.max(self.openai).max(self.gemini)
    }
}

/// Longest side Claude takes before downscaling, in pixels.
const ANTHROPIC_LONG_SIDE: f64 = 1568.0;
/// Pixels Claude takes before downscaling (about 1,600 tokens).
const ANTHROPIC_PIXELS: f64 = 1_200_000.0;

fn anthropic(w: f64, h: f64) -> u64 {
    let scale = (ANTHROPIC_LONG_SIDE / w.max(h)).min((ANTHROPIC_PIXELS / (w * h)).sqrt()).min(1.0);
    let (w, h) = ((w * scale).round().max(1.0), (h * scale).round().max(1.0));
    (w * h / 750.0).ceil() as u64
}

fn openai(w: f64, h: f64) -> u64 {
    let fit = (2048.0 / w.max(h)).min(1.0);
    let (w, h) = (w * fit, h * fit);
    let short = (768.0 / w.min(h)).min(1.0);
    let (w, h) = ((w * short).round(), (h * short).round());
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    85 + 170 * tiles as u64
}

fn gemini(w: f64, h: f64) -> u64 {
    if w <= 384.0 && h <= 384.0 {
        return 258;
    }
    258 * ((w / 768.0).ceil() * (h / 768.0).ceil()) as u64
}

#[cfg(feature = "tiktoken")]
fn exact(text: &str) -> u64 {
    use std::sync::OnceLock;
    static ENCODING: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
    // Built once per process from the tables bundled in the crate (no network); about 0.3 s.
    match ENCODING.get_or_init(|| tiktoken_rs::o200k_base().ok()) {
        Some(encoding) => encoding.encode_ordinary(text).len() as u64,
        None => estimate(text),
    }
}

#[cfg(not(feature = "tiktoken"))]
fn exact(text: &str) -> u64 {
    // Unreachable through `parse`/`available`; a hand-built setting still gets a sensible count.
    estimate(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_ascii_by_fours_and_other_characters_one_each() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("日本語"), 3);
        assert_eq!(estimate("ab日本"), 3);
        assert_eq!(estimate("é😀"), 2, "two- and four-byte characters count one each");
    }

    #[test]
    fn choices_are_parsed_and_a_missing_feature_is_named() {
        assert_eq!(TokenCounting::parse("estimate"), Ok(TokenCounting::Estimate));
        assert!(TokenCounting::parse("words").unwrap_err().contains("`estimate` or `o200k`"));
        let exact = TokenCounting::parse("o200k");
        if cfg!(feature = "tiktoken") {
            assert_eq!(exact, Ok(TokenCounting::O200k));
        } else {
            assert!(exact.unwrap_err().contains("`tiktoken` feature"));
        }
    }

    #[test]
    fn image_tokens_follow_each_published_rule() {
        // Anthropic's own examples: 200 × 200 is about 54 tokens, 1000 × 1000 about 1334, 1092 × 1092 about 1590.
        assert_eq!(ImageTokens::of(200, 200).anthropic, 54);
        assert_eq!(ImageTokens::of(1000, 1000).anthropic, 1334);
        assert_eq!(ImageTokens::of(1092, 1092).anthropic, 1590);
        // Larger images are downscaled first: they cost what their downscaled copy costs.
        assert_eq!(ImageTokens::of(4000, 3000).anthropic, ImageTokens::of(1265, 949).anthropic);
        assert!(ImageTokens::of(8000, 1000).anthropic <= 1568 * 196 / 750 + 1);
        // OpenAI's examples: 1024 × 1024 is 765 tokens, 2048 × 4096 is 1105; a small image is one tile.
        assert_eq!(ImageTokens::of(1024, 1024).openai, 765);
        assert_eq!(ImageTokens::of(2048, 4096).openai, 1105);
        assert_eq!(ImageTokens::of(100, 100).openai, 255);
        // Gemini: 258 within 384 × 384, else 258 a 768-pixel tile.
        assert_eq!(ImageTokens::of(384, 200).gemini, 258);
        assert_eq!(ImageTokens::of(2000, 1500).gemini, 258 * 6);
        let tokens = ImageTokens::of(2000, 1500);
        assert_eq!(tokens.most(), tokens.anthropic.max(tokens.openai).max(tokens.gemini));
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn exact_counts_come_from_o200k() {
        // "hello world" is two tokens in o200k_base.
        assert_eq!(TokenCounting::O200k.count("hello world"), 2);
    }
}
