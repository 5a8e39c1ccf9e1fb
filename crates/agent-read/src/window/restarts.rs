//! Restart points: places in a streamed text (a decompressed file) where its decoder can resume without decoding
//! what comes before them. A pass from the text's start collects them; the text's [index](super::index::streamed)
//! keeps them, so a later read starts decoding shortly before its window.
//!
//! Contract:
//! - A restart point is made and used by the decoder alone, which knows what resuming needs (for gzip the bits left
//!   in the last input byte and the last 32 KiB of text; for zstd nothing but the offset of a frame): here it is an
//!   offset in the text, an offset in the compressed file, and opaque state.
//! - It carries a fingerprint of the compressed bytes where decoding resumes, checked before resuming: a file changed
//!   since is caught there, and the read decodes from the start instead.
//! - Memory is bounded: at most [`MAX_POINTS`] points and [`MAX_STATE_BYTES`] of state per text. Beyond either, every
//!   other point is dropped and the spacing between points doubles.

/// Text between restart points while a text's points are few: the most a later read decodes before its window until
/// the bounds below widen the spacing.
const INITIAL_SPACING: u64 = 1 << 20;
/// Most restart points one text keeps.
pub const MAX_POINTS: usize = 1024;
/// Most state (dictionaries) one text's restart points keep, in bytes.
pub const MAX_STATE_BYTES: usize = 2 << 20;

/// A place in a streamed text where its decoder can resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// Offset in the text of the first byte the resumed decoder yields.
    pub at: u64,
    /// Offset in the compressed file where the resumed decoder's input starts.
    pub input: u64,
    /// CRC-32 of the compressed bytes around `input` when the point was made (the decoder says which).
    pub check: u32,
    /// What else the decoder needs to resume, in its own encoding.
    pub state: Box<[u8]>,
}

/// The restart points of one text, in the order of the text, bounded in number and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restarts {
    points: Vec<Restart>,
    /// Text wanted between points.
    spacing: u64,
    /// Bytes of state the points hold.
    state_bytes: usize,
}

impl Default for Restarts {
    fn default() -> Self {
        Restarts { points: Vec::new(), spacing: INITIAL_SPACING, state_bytes: 0 }
    }
}

impl Restarts {
    /// No restart point yet.
    pub fn new() -> Self {
        Restarts::default()
    }

    /// The text offset from which the next point is wanted.
    pub fn next_wanted(&self) -> u64 {
        self.points.last().map_or(0, |last| last.at).saturating_add(self.spacing)
    }

    /// Adds `point`, made after every point kept (an earlier one, met again by a decoder started afresh, is left
    /// out), and thins the points when they exceed their bounds.
    pub fn push(&mut self, point: Restart) {
        if self.points.last().is_some_and(|last| last.at >= point.at) {
            return;
        }
        self.state_bytes += point.state.len();
        self.points.push(point);
        while self.points.len() > MAX_POINTS || (self.state_bytes > MAX_STATE_BYTES && self.points.len() > 1) {
            // Keep every other point: half the memory, twice the text decoded at most to reach a window.
            let mut keep = false;
            self.points.retain(|_| {
                keep = !keep;
                keep
            });
            self.state_bytes = self.points.iter().map(|point| point.state.len()).sum();
            self.spacing = self.spacing.saturating_mul(2);
        }
    }

    /// The last point at or before text offset `offset`.
    pub fn before(&self, offset: u64) -> Option<&Restart> {
        let after = self.points.partition_point(|point| point.at <= offset);
        after.checked_sub(1).map(|at| &self.points[at])
    }

    /// Bytes of state the points hold (what keeping them costs beyond their count).
    pub fn state_bytes(&self) -> usize {
        self.state_bytes
    }

    /// Number of points.
    pub fn count(&self) -> usize {
        self.points.len()
    }

    /// The points, in the order of the text.
    #[cfg(test)]
    pub fn points(&self) -> &[Restart] {
        &self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at: u64, state_len: usize) -> Restart {
        Restart { at, input: at / 4, check: 0, state: vec![0u8; state_len].into() }
    }

    #[test]
    fn points_are_found_before_an_offset_and_later_ones_only_are_added() {
        let mut restarts = Restarts::new();
        assert_eq!(restarts.next_wanted(), INITIAL_SPACING);
        for at in [100, 5_000, 9_000] {
            restarts.push(point(at, 10));
        }
        restarts.push(point(5_000, 10));
        assert_eq!(restarts.count(), 3, "a point met again is not kept twice");
        assert_eq!(restarts.before(99), None);
        assert_eq!(restarts.before(100).map(|p| p.at), Some(100));
        assert_eq!(restarts.before(8_999).map(|p| p.at), Some(5_000));
        assert_eq!(restarts.before(u64::MAX).map(|p| p.at), Some(9_000));
        assert_eq!(restarts.next_wanted(), 9_000 + INITIAL_SPACING);
    }

    #[test]
    fn too_many_points_or_too_much_state_thins_them_and_widens_the_spacing() {
        let mut restarts = Restarts::new();
        for k in 1..=(MAX_POINTS as u64 * 3) {
            restarts.push(point(k * 1000, 0));
        }
        assert!(restarts.count() <= MAX_POINTS && restarts.count() > MAX_POINTS / 2, "{}", restarts.count());
        assert!(restarts.spacing > INITIAL_SPACING);
        let mut restarts = Restarts::new();
        for k in 1..=200u64 {
            restarts.push(point(k * 1000, 32 * 1024));
        }
        assert!(restarts.state_bytes() <= MAX_STATE_BYTES, "{}", restarts.state_bytes());
        assert!(restarts.count() >= MAX_STATE_BYTES / (32 * 1024) / 2, "{}", restarts.count());
        let ats: Vec<u64> = restarts.points().iter().map(|p| p.at).collect();
        assert!(ats.windows(2).all(|w| w[0] < w[1]), "still in order: {ats:?}");
    }
}
