//! Archives as the model sees them: a member's line in a listing (the shape of a directory entry's, with the size
//! inside the archive), and the notices that say what a listing or a member read went through.

use super::human_size;
use crate::escape::one_line_name;
use crate::source::archive::{Catalog, Child, Format, Member, MemberKind};

/// A member's line in a listing: its name on one line, `/` after a directory, its size (and for a zip member its size
/// inside the archive), what else it is, and whether a request can read it.
pub fn member_line(child: &Child<'_>, denied: bool) -> String {
    let name = one_line_name(&child.name);
    let mut line = match child.member {
        _ if child.is_dir() => format!("{name}/"),
        Some(member) => format!("{name}  ({})", describe(member)),
        None => format!("{name}/"),
    };
    if let Some(member) = child.member {
        if member.encrypted {
            line.push_str("  (encrypted)");
        }
        if member.path.is_none() {
            line.push_str("  (unsafe name: cannot be read by path)");
        }
    }
    if child.copies > 1 {
        line.push_str(&format!("  (stored {} times: the first is read)", child.copies));
    }
    if denied {
        line.push_str("  (denied)");
    }
    line
}

/// What a member is, in its line's parentheses.
fn describe(member: &Member) -> String {
    match member.kind {
        MemberKind::Symlink => "symlink, not followed".to_string(),
        MemberKind::HardLink => "hard link, not followed".to_string(),
        MemberKind::Special => "device or FIFO".to_string(),
        MemberKind::File | MemberKind::Dir => match (member.compressed_size, member.method) {
            (_, Some("stored")) => format!("{} · stored", human_size(member.size)),
            (Some(compressed), _) => format!("{} · {} compressed", human_size(member.size), human_size(compressed)),
            _ => human_size(member.size),
        },
    }
}

/// The notices of an archive's listing: its format and member count, and what the catalog could not keep.
pub fn listing_notices(format: Format, catalog: &Catalog) -> Vec<String> {
    let count = catalog.members.len();
    let mut notices = vec![format!("{} archive, {count} member{}", format.name(), if count == 1 { "" } else { "s" })];
    if catalog.duplicates_dropped {
        notices.push("some names are stored more than once: each is listed and read as its last copy".to_string());
    }
    notices
}

/// The notice of a member's read: which archive it came out of, and what reaching it cost.
pub fn member_notice(archive: &str, format: Format, member: &Member) -> String {
    let how = match (member.method, member.compressed_size) {
        (Some("stored"), _) => ", stored".to_string(),
        (Some(method), Some(compressed)) => format!(", {method}, {} compressed", human_size(compressed)),
        _ => String::new(),
    };
    let mut notice = format!("member of {} ({}{how})", one_line_name(archive), format.name());
    if format.is_sequential() {
        notice.push_str(&format!("; each read decompresses the {} up to it", format.name()));
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
