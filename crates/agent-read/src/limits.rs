//! The bounds every read is held to. A leaf: the engine, the stages and the configuration all take limits from here,
//! and it imports nothing of the crate beyond the error a bad value gives.

use crate::config_error::{ConfigError, ValueBound};
use serde::Deserialize;

/// Bounds applied to every read. All sizes are in bytes unless named otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Lines (or directory entries) returned when a request gives no `limit`.
    pub default_lines: u64,
    /// Largest `limit` honoured; larger requests are clamped to it and the clamp is reported.
    pub max_lines: u64,
    /// Characters shown of one line before it is cut and marked.
    pub max_line_chars: usize,
    /// Cap on the whole `output` text, line prefixes and footer included.
    pub max_output_bytes: usize,
    /// Time budget of one read, in milliseconds; past it the read stops with `TIMEOUT`.
    pub timeout_ms: u64,
    /// Longest side of an image attachment in pixels; larger images are downscaled to it.
    pub max_image_side: u32,
    /// Largest image attachment in bytes (before base64); larger ones are re-encoded smaller.
    pub max_image_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            default_lines: 2000,
            max_lines: 10_000,
            max_line_chars: 2000,
            max_output_bytes: 50 * 1024,
            timeout_ms: 30_000,
            max_image_side: 2000,
            // Base64 makes it 5,000,000 bytes: the per-image limit of the major model APIs.
            max_image_bytes: 3_750_000,
        }
    }
}

/// Smallest output cap accepted: below it a footer and one cut line could not fit together.
pub const MIN_OUTPUT_BYTES: usize = 1024;

impl Limits {
    /// Checks that the limits can be honoured together; the error names the bad field and the valid range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let smallest = [
            ("limits.default_lines", self.default_lines, 1),
            ("limits.max_lines", self.max_lines, 1),
            ("limits.max_line_chars", self.max_line_chars as u64, 16),
            ("limits.max_image_side", u64::from(self.max_image_side), 16),
            ("limits.max_image_bytes", self.max_image_bytes, 16 * 1024),
            ("limits.max_output_bytes", self.max_output_bytes as u64, MIN_OUTPUT_BYTES as u64),
        ];
        match smallest.into_iter().find(|(_, value, min)| value < min) {
            Some((key, _, min)) => Err(ConfigError::OutOfRange { key, bound: ValueBound::AtLeast(min) }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_validation_names_field() {
        let limits = Limits { max_output_bytes: 10, ..Limits::default() };
        assert!(limits.validate().unwrap_err().to_string().contains("max_output_bytes"));
        assert!(Limits::default().validate().is_ok());
    }
}
