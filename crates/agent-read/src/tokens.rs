//! How many tokens a model will count in a text: a byte heuristic by default, exact counts (OpenAI's `o200k_base`
//! encoding, bundled, offline) with the `tiktoken` cargo feature.

use serde::Deserialize;

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

    #[cfg(feature = "tiktoken")]
    #[test]
    fn exact_counts_come_from_o200k() {
        // "hello world" is two tokens in o200k_base.
        assert_eq!(TokenCounting::O200k.count("hello world"), 2);
    }
}
