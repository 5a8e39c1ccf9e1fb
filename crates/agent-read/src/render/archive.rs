//! Archives as the model sees them: a member's line in a listing (the shape of a directory entry's, with the size
//! inside the archive), and the notices that say what a listing or a member read went through. The engine hands the
//! facts; nothing here reads an archive.

use super::human_size;
use crate::escape::one_line_name;

/// What a member is, as its line shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A directory, stored or implied by deeper names.
    Dir,
    /// A file: its size, its size inside the archive (zip), and whether it is stored uncompressed.
    File { size: u64, compressed: Option<u64>, stored: bool },
    /// A symbolic link.
    Symlink,
    /// A tar hard link.
    HardLink,
    /// A device or a FIFO.
    Special,
}

/// One name in an archive's listing, as facts.
#[derive(Debug, Clone, Copy)]
pub struct MemberEntry<'a> {
    /// Its name within the directory listed (or a whole stored name no request can spell).
    pub name: &'a str,
    /// What it is.
    pub shape: Shape,
    /// Encrypted (zip).
    pub encrypted: bool,
    /// No request can spell its name.
    pub unsafe_name: bool,
    /// Members stored under exactly this name.
    pub copies: usize,
    /// Of several, the last stored is the one read (else the first).
    pub last_copy_read: bool,
    /// The read policy refuses it.
    pub denied: bool,
}

/// A member's line in a listing: its name on one line, `/` after a directory, its size (and for a zip member its size
/// inside the archive), what else it is, and whether a request can read it.
pub fn member_line(entry: &MemberEntry<'_>) -> String {
    let name = one_line_name(entry.name);
    let mut line = match entry.shape {
        Shape::Dir => format!("{name}/"),
        Shape::File { size, stored: true, .. } => format!("{name}  ({} · stored)", human_size(size)),
        Shape::File { size, compressed: Some(compressed), .. } => {
            format!("{name}  ({} · {} compressed)", human_size(size), human_size(compressed))
        }
        Shape::File { size, .. } => format!("{name}  ({})", human_size(size)),
        Shape::Symlink => format!("{name}  (symlink, not followed)"),
        Shape::HardLink => format!("{name}  (hard link, not followed)"),
        Shape::Special => format!("{name}  (device or FIFO)"),
    };
    if entry.encrypted {
        line.push_str("  (encrypted)");
    }
    if entry.unsafe_name {
        line.push_str("  (unsafe name: cannot be read by path)");
    }
    if entry.copies > 1 {
        let which = if entry.last_copy_read { "last" } else { "first" };
        line.push_str(&format!("  (stored {} times: the {which} is read)", entry.copies));
    }
    if entry.denied {
        line.push_str("  (denied)");
    }
    line
}

/// The notices of an archive's listing: its format and member count (or where its catalog stopped), and whether names
/// stored twice were dropped.
pub fn listing_notices(format: &str, members: usize, stopped: bool, duplicates_dropped: bool) -> Vec<String> {
    let mut notices = vec![match stopped {
        true => format!("{format} archive, listed up to its first {members} members (a listing holds no more)"),
        false => format!("{format} archive, {members} member{}", if members == 1 { "" } else { "s" }),
    }];
    if duplicates_dropped {
        notices.push("some names are stored more than once: each is listed and read as its last copy".to_string());
    }
    notices
}

/// How a member is stored inside its archive (zip), for its read's notice.
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    /// `stored`, `deflate`, …
    pub method: Option<&'a str>,
    /// Its size inside the archive.
    pub compressed: Option<u64>,
}

/// The notice of a member's read: which archive it came out of (`format`; `sequential` when reaching it decompresses
/// everything before it), and how it was stored.
pub fn member_notice(archive: &str, format: &str, sequential: bool, stored: Stored<'_>) -> String {
    let how = match (stored.method, stored.compressed) {
        (Some("stored"), _) => ", stored".to_string(),
        (Some(method), Some(compressed)) => format!(", {method}, {} compressed", human_size(compressed)),
        _ => String::new(),
    };
    let mut notice = format!("member of {} ({format}{how})", one_line_name(archive));
    if sequential {
        notice.push_str(&format!("; each read decompresses the {format} up to it"));
    }
    notice
}

/// Adds a member's notice to an answer another road wrote for its copy: into the footer, before the next call or
/// the end word; after an attachment's one-line description.
pub fn add_member_notice(output: &mut String, notice: &str) {
    let line_start = output.rfind('\n').map_or(0, |at| at + 1);
    let last = &output[line_start..];
    let footer_end = (last.starts_with('(') && last.ends_with(')')).then(|| last.rfind(" · ")).flatten();
    match footer_end {
        Some(at) => output.insert_str(line_start + at, &format!(" · {notice}")),
        None => output.push_str(&format!(" · {notice}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_notice_goes_before_the_footers_last_part_or_after_a_description() {
        let mut text = "1: a\n(lines 1-1 of 1 · 2 B · end of file)".to_string();
        add_member_notice(&mut text, "member of a.zip (zip)");
        assert_eq!(text, "1: a\n(lines 1-1 of 1 · 2 B · member of a.zip (zip) · end of file)");
        let mut image = "PNG image · 2×2 · 70 B".to_string();
        add_member_notice(&mut image, "member of a.zip (zip)");
        assert_eq!(image, "PNG image · 2×2 · 70 B · member of a.zip (zip)");
    }
}
