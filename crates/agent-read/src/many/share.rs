//! The arithmetic of one shared output cap: how many files get a useful share, how each share is computed, and
//! how much of the skipped list is spelled out.
//!
//! Shares are max-min fair: files are read smallest first, each offered an equal part of what is still free
//! (`remaining / files_left`). A small file uses only what it needs and leaves the rest to the larger ones that follow;
//! since no file uses more than its share, every later share is at least as large as the first.

/// Bytes a file's read gets at least: the smallest output cap the engine is built for (its footer reserve alone is
/// 768 bytes, so a smaller cap would leave a file almost no lines).
pub const MIN_READ_CAP: usize = crate::limits::MIN_OUTPUT_BYTES;

/// Bytes between two pieces of the output: a blank line.
pub const SEPARATOR: usize = 2;

/// Running fair shares of a budget among a number of files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shares {
    remaining: usize,
    left: usize,
}

impl Shares {
    /// `budget` bytes for `files` files.
    pub fn new(budget: usize, files: usize) -> Shares {
        Shares { remaining: budget, left: files }
    }

    /// The next file's share: an equal part of what is left (0 once every file had its turn).
    pub fn next(&self) -> usize {
        self.remaining.checked_div(self.left).unwrap_or(0)
    }

    /// Records that the file whose turn it was used `used` bytes (callers keep it within the share).
    pub fn spend(&mut self, used: usize) {
        self.remaining = self.remaining.saturating_sub(used);
        self.left = self.left.saturating_sub(1);
    }
}

/// Bytes a small file's answer may add beside its lines and the path it names: its footer with every notice, or the
/// error it answers instead (`BINARY: …` and its hint).
const SMALL_ANSWER_EXTRA: usize = 256;

/// Bytes of lines one byte of a file gives at most: a line feed becomes a line of its own (`NNN: ` and a line feed,
/// in a file of under a thousand lines), and any other byte at most three bytes of UTF-8 (a legacy or invalid byte)
/// or, shown escaped, six (`⟨U+0085⟩` from two bytes). A byte a legacy encoding decodes to a C1 control gives twelve
/// (`⟨U+0081⟩`): a small file full of them can outgrow this bound, and is then skipped as not fitting its share,
/// never shown past it.
const LINE_BYTES_PER_BYTE: usize = 6;

/// Bytes a read of a file of `size` bytes, whose header is `header` bytes long (it names the path, as an error
/// would), is counted on to need: for a small file, a bound on its whole output, whatever its encoding and lines; for
/// any other, [`MIN_READ_CAP`], the least a useful share offers.
pub fn read_need(size: u64, header: usize) -> usize {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let lines = size.saturating_add(1).saturating_mul(LINE_BYTES_PER_BYTE);
    lines.saturating_add(SMALL_ANSWER_EXTRA).saturating_add(header).min(MIN_READ_CAP)
}

/// One file to share the cap with: its size (files are read smallest first) and the length of its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The file's size in bytes.
    pub size: u64,
    /// The length of its section's header.
    pub header: usize,
}

impl Claim {
    /// What the file's section needs: its header, its read and the separator after it.
    pub fn need(&self) -> usize {
        self.header + read_need(self.size, self.header) + SEPARATOR
    }

    /// Whether the file is small enough for [`read_need`] to bound its whole output: it then takes no more than
    /// that, and its read must not be cut short of it.
    pub fn is_small(&self) -> bool {
        read_need(self.size, self.header) < MIN_READ_CAP
    }
}

/// How many of the first files can be read with a useful share each: the largest `k` for which sharing `room(k)`
/// (the bytes left for the files when the first `k` are read and the others listed) among the first `k` as the
/// reads will (smallest first, each offered an equal part of what is left) offers every file its need, counting that
/// a small file uses its need and a larger one all it is offered.
pub fn files_that_fit(claims: &[Claim], room: impl Fn(usize) -> usize) -> usize {
    (1..=claims.len()).rev().find(|&k| each_gets_its_need(&claims[..k], room(k))).unwrap_or(0)
}

fn each_gets_its_need(claims: &[Claim], room: usize) -> bool {
    let mut by_size = claims.to_vec();
    by_size.sort_by_key(|claim| claim.size);
    let mut shares = Shares::new(room, by_size.len());
    by_size.iter().all(|claim| {
        let (offered, need) = (shares.next(), claim.need());
        shares.spend(if claim.is_small() { need } else { offered });
        offered >= need
    })
}

/// Which lines of a list are spelled out within `limit` bytes: the longest prefix whose lines (each with its
/// newline) fit while keeping `more_reserve` bytes free for a line that counts the rest.
pub fn listed_prefix(line_lengths: &[usize], limit: usize, more_reserve: usize) -> usize {
    let mut used = more_reserve;
    line_lengths
        .iter()
        .take_while(|&&len| {
            used += len + 1;
            used <= limit
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spends shares on files of the given needs (read smallest first); returns what each got, in the given order.
    fn share_out(budget: usize, needs: &[usize]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..needs.len()).collect();
        order.sort_by_key(|&i| (needs[i], i));
        let mut shares = Shares::new(budget, needs.len());
        let mut got = vec![0; needs.len()];
        for i in order {
            got[i] = needs[i].min(shares.next());
            shares.spend(got[i]);
        }
        got
    }

    #[test]
    fn small_files_take_what_they_need_and_leave_the_rest_to_larger_ones() {
        // 9,000 bytes for three: 1,000 fits whole; the two big ones split the other 8,000.
        assert_eq!(share_out(9000, &[50_000, 1000, 70_000]), vec![4000, 1000, 4000]);
        // Everything fits: everyone gets what they need.
        assert_eq!(share_out(9000, &[100, 200, 300]), vec![100, 200, 300]);
        // Equal needs over the budget: equal shares; what integer division leaves over goes to the last file.
        assert_eq!(share_out(10, &[9, 9, 9]), vec![3, 3, 4]);
    }

    #[test]
    fn leftovers_of_each_small_file_raise_the_later_shares() {
        let mut shares = Shares::new(10_000, 4);
        assert_eq!(shares.next(), 2500);
        shares.spend(100);
        assert_eq!(shares.next(), 3300);
        shares.spend(3300);
        assert_eq!(shares.next(), 3300);
        shares.spend(1);
        assert_eq!(shares.next(), 6599);
        shares.spend(6599);
        assert_eq!(shares.next(), 0, "no file left");
    }

    fn claims(headers: &[usize], size: u64) -> Vec<Claim> {
        headers.iter().map(|&header| Claim { size, header }).collect()
    }

    #[test]
    fn the_first_files_that_fit_get_a_useful_share() {
        let big = claims(&[20; 10], 1 << 20);
        let each = MIN_READ_CAP + 20 + SEPARATOR;
        assert_eq!(files_that_fit(&big, |_| 10 * each), 10);
        assert_eq!(files_that_fit(&big, |_| 10 * each - 1), 9);
        assert_eq!(files_that_fit(&big, |_| 3 * each + 5), 3);
        assert_eq!(files_that_fit(&big, |_| each - 1), 0);
        assert_eq!(files_that_fit(&[], |_| 1 << 20), 0);
        // Listing the files left out costs room: fewer listed lines when more files are read.
        assert_eq!(files_that_fit(&big, |k| 8 * each - (10 - k) * 10), 7);
        // One long header sets the bar for the files read with it.
        let long_last = [claims(&[20, 20], 1 << 20), claims(&[4000], 1 << 20)].concat();
        assert_eq!(files_that_fit(&long_last, |_| 3 * each), 2);
    }

    #[test]
    fn small_files_are_counted_at_a_bound_of_their_output_not_at_the_least_a_large_one_gets() {
        // 200 files of 20 bytes with 20-byte headers: 6 × 21 + 256 + 20 = 402 bytes of answer at most, 424 with
        // header and separator, where a floor of 1 KiB each would have let 84,800 / 1,046 = 81 through.
        let tiny = claims(&[20; 200], 20);
        assert_eq!(read_need(20, 20), 402);
        assert!(tiny[0].is_small());
        assert_eq!(files_that_fit(&tiny, |_| 200 * 424), 200);
        assert_eq!(files_that_fit(&tiny, |_| 200 * 424 - 1), 199);
        // Small files leave the rest to a large one, which must still be offered its least.
        let mixed = [claims(&[20; 5], 20), claims(&[20], 1 << 20)].concat();
        assert_eq!(files_that_fit(&mixed, |_| 5 * 424 + MIN_READ_CAP + 22), 6);
        assert_eq!(files_that_fit(&mixed, |_| 5 * 424 + MIN_READ_CAP + 21), 5);
        // A file is small while the bound stays under the least a large one gets; a long path counts against it.
        assert_eq!(read_need(120, 20), 1002);
        assert_eq!(read_need(124, 20), MIN_READ_CAP);
        assert!(!Claim { size: 20, header: 700 }.is_small());
        assert_eq!(read_need(u64::MAX, 20), MIN_READ_CAP);
    }

    #[test]
    fn the_listed_prefix_keeps_room_for_the_count_of_the_rest() {
        assert_eq!(listed_prefix(&[10, 10, 10], 100, 0), 3);
        assert_eq!(listed_prefix(&[10, 10, 10], 33, 0), 3);
        assert_eq!(listed_prefix(&[10, 10, 10], 32, 0), 2);
        assert_eq!(listed_prefix(&[10, 10, 10], 40, 20), 1);
        assert_eq!(listed_prefix(&[50, 1], 40, 0), 0, "a prefix: a long line stops the listing");
    }
}
