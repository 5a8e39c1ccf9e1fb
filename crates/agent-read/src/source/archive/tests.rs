use super::*;
use std::io::{Read, Write};

#[path = "../../../tests/common/zip64.rs"]
mod zip64;
use zip64::zip64_of;

fn budget() -> Budget {
    Budget::new(std::time::Instant::now() + std::time::Duration::from_secs(60), crate::budget::Cancel::new())
}

fn file_of(bytes: &[u8]) -> File {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    file
}

pub(crate) fn zip_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = ::zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, body) in members {
        let options = ::zip::write::SimpleFileOptions::default();
        if name.ends_with('/') {
            zip.add_directory(name.trim_end_matches('/'), options).unwrap();
        } else {
            zip.start_file(*name, options).unwrap();
            zip.write_all(body).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}

/// A tar of `members`, each name stored as it is written (`..` and all: the builder's own path checks are skipped).
pub(crate) fn tar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = ::tar::Builder::new(Vec::new());
    for (name, body) in members {
        let mut header = ::tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_700_000_000);
        header.set_cksum();
        tar.append(&header, *body).unwrap();
    }
    tar.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn read_member(archive: &Archive<'_>, path: &str) -> std::io::Result<Vec<u8>> {
    let Lookup::Found(member) = archive.lookup(path).unwrap() else { panic!("{path} not found") };
    let mut out = Vec::new();
    archive.open(&member)?.read_to_end(&mut out)?;
    Ok(out)
}

fn archive_of<'a>(file: &'a File, bytes: &[u8]) -> Archive<'a> {
    let format = Format::sniff(file, bytes.len() as u64, &bytes[..bytes.len().min(65536)], &budget()).unwrap();
    Archive { file, end: bytes.len() as u64, format, budget: budget() }
}

#[test]
fn formats_are_told_by_their_first_bytes() {
    let zip = zip_of(&[("a.txt", b"x")]);
    let tar = tar_of(&[("a.txt", b"x")]);
    let tgz = gzip(&tar);
    for (bytes, format) in
        [(&zip, Format::Zip), (&tar, Format::Tar(None)), (&tgz, Format::Tar(Some(Compression::Gzip)))]
    {
        let file = file_of(bytes);
        assert_eq!(Format::sniff(&file, bytes.len() as u64, bytes, &budget()), Some(format));
    }
    let text = gzip(b"just a log line\n");
    assert_eq!(Format::sniff(&file_of(&text), text.len() as u64, &text, &budget()), None, "gzip of text is not a tar");
}

#[test]
fn members_of_zips_and_tars_read_back_exactly() {
    let members: [(&str, &[u8]); 3] = [("top.txt", b"top\n"), ("dir/b.log", b"one\ntwo\n"), ("dir/sub/c", b"")];
    for bytes in [zip_of(&members), tar_of(&members), gzip(&tar_of(&members))] {
        let file = file_of(&bytes);
        let archive = archive_of(&file, &bytes);
        assert_eq!(read_member(&archive, "dir/b.log").unwrap(), b"one\ntwo\n", "{:?}", archive.format);
        assert_eq!(read_member(&archive, "top.txt").unwrap(), b"top\n");
        let catalog = archive.catalog().unwrap();
        let top: Vec<_> = children(&catalog, "").into_iter().map(|c| (c.name.clone(), c.is_dir())).collect();
        assert_eq!(top, [("dir".to_string(), true), ("top.txt".to_string(), false)]);
        let Lookup::Catalog(catalog) = archive.lookup("dir").unwrap() else { panic!("dir is a member") };
        assert!(is_directory(&catalog, "dir") && is_directory(&catalog, "dir/sub") && !is_directory(&catalog, "di"));
    }
}

#[test]
fn a_member_that_inflates_past_its_declared_size_or_fails_its_crc_is_damaged() {
    let mut bytes = zip_of(&[("a.txt", b"hello world, hello world")]);
    // Corrupt one byte of the stored data's CRC field in the central directory: the data no longer matches it.
    let cd = bytes.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
    bytes[cd + 16] ^= 0xff;
    let file = file_of(&bytes);
    let archive = archive_of(&file, &bytes);
    let error = read_member(&archive, "a.txt").unwrap_err();
    assert!(error.to_string().contains("CRC-32"), "{error}");
}

#[test]
fn a_tar_header_past_its_allowance_is_too_large() {
    let long = "d/".repeat(600_000) + "x.txt";
    let mut tar = ::tar::Builder::new(Vec::new());
    let mut header = ::tar::Header::new_gnu();
    header.set_size(1);
    tar.append_data(&mut header, &long, &b"x"[..]).unwrap();
    let bytes = gzip(&tar.into_inner().unwrap());
    let file = file_of(&bytes);
    let archive = archive_of(&file, &bytes);
    assert!(matches!(archive.catalog(), Err(ArchiveError::TooLarge(_))));
}

#[test]
fn unreadable_names_are_kept_and_listed_at_the_top() {
    let bytes = tar_of(&[("../evil.txt", b"x"), ("ok.txt", b"y")]);
    let file = file_of(&bytes);
    let archive = archive_of(&file, &bytes);
    let catalog = archive.catalog().unwrap();
    let top: Vec<_> =
        children(&catalog, "").into_iter().map(|c| (c.name, c.member.and_then(|m| m.path.clone()))).collect();
    assert_eq!(top, [("ok.txt".to_string(), Some("ok.txt".to_string())), ("../evil.txt".to_string(), None)]);
}

#[test]
fn a_tar_cut_short_is_damaged() {
    let bytes = tar_of(&[("a.txt", &[b'a'; 5000])]);
    let cut = &bytes[..2048];
    let file = file_of(cut);
    let archive = Archive { file: &file, end: cut.len() as u64, format: Format::Tar(None), budget: budget() };
    assert!(matches!(archive.catalog(), Err(ArchiveError::Damaged(reason)) if reason.contains("cut short")));
    let gz = gzip(&bytes);
    let cut = &gz[..gz.len() / 2];
    let file = file_of(cut);
    let archive =
        Archive { file: &file, end: cut.len() as u64, format: Format::Tar(Some(Compression::Gzip)), budget: budget() };
    assert!(matches!(archive.catalog(), Err(ArchiveError::Damaged(_))), "{:?}", archive.catalog());
}

#[test]
fn a_zip_member_is_read_without_decoding_any_other_and_a_tar_gz_member_without_decoding_past_it() {
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut bytes = zip_of(&[("good.txt", b"good\n"), ("bad.txt", &noise)]);
    // Damage the second member's data (its local header is after the first member's): listing and reading the first
    // still work, since neither inflates it.
    let second = bytes.windows(4).enumerate().filter(|(_, w)| *w == b"PK\x03\x04").nth(1).unwrap().0;
    for byte in &mut bytes[second + 100..second + 120] {
        *byte ^= 0x55;
    }
    let file = file_of(&bytes);
    let archive = archive_of(&file, &bytes);
    assert_eq!(archive.catalog().unwrap().members.len(), 2);
    assert_eq!(read_member(&archive, "good.txt").unwrap(), b"good\n");
    assert!(read_member(&archive, "bad.txt").is_err());

    let tar = tar_of(&[("first.txt", b"first\n"), ("second.txt", &[b'y'; 100_000])]);
    let gz = gzip(&tar);
    // Cut the compressed stream inside the second member: the first is still read, the listing is damaged.
    let cut = &gz[..gz.len() - 40];
    let file = file_of(cut);
    let archive =
        Archive { file: &file, end: cut.len() as u64, format: Format::Tar(Some(Compression::Gzip)), budget: budget() };
    assert_eq!(read_member(&archive, "first.txt").unwrap(), b"first\n");
    assert!(archive.catalog().is_err());
}

#[test]
fn a_zip64_directory_within_the_member_limit_is_listed() {
    let bytes = zip64_of(&["a.txt", "b.txt", "dir/c.txt"], 3, 0);
    let file = file_of(&bytes);
    let archive = Archive { file: &file, end: bytes.len() as u64, format: Format::Zip, budget: budget() };
    let names: Vec<_> = archive.catalog().unwrap().members.into_iter().map(|member| member.name).collect();
    assert_eq!(names, ["a.txt", "b.txt", "dir/c.txt"]);
}

#[test]
fn a_zip_declaring_more_members_than_a_listing_holds_is_refused_before_its_directory_is_read() {
    let over = MAX_MEMBERS as u64 + 1;
    // The record where its locator says, and one found past junk (where the zip crate looks next).
    for junk in [0, 100] {
        let bytes = zip64_of(&["a.txt", "b.txt"], over, junk);
        let file = file_of(&bytes);
        let archive = Archive { file: &file, end: bytes.len() as u64, format: Format::Zip, budget: budget() };
        for result in [archive.catalog().map(|_| ()), archive.lookup("a.txt").map(|_| ())] {
            match result {
                Err(ArchiveError::TooLarge(reason)) => {
                    assert!(reason.contains(&format!("declares {over} members")), "{reason}");
                    assert!(reason.contains(&format!("at most {MAX_MEMBERS}")), "{reason}");
                }
                other => panic!("junk {junk}: {other:?}"),
            }
        }
    }
}

#[test]
fn of_members_stored_under_one_path_a_tar_reads_the_first_and_a_zip_the_last() {
    let members: [(&str, &[u8]); 2] = [("ok.txt", b"first\n"), ("./ok.txt", b"second copy\n")];
    for (bytes, read) in [(tar_of(&members), &b"first\n"[..]), (zip_of(&members), b"second copy\n")] {
        let file = file_of(&bytes);
        let archive = archive_of(&file, &bytes);
        assert_eq!(read_member(&archive, "ok.txt").unwrap(), read, "{:?}", archive.format);
        let catalog = archive.catalog().unwrap();
        let top = children(&catalog, "");
        assert_eq!(top.len(), 1);
        assert_eq!(
            (top[0].copies, top[0].member.map(|m| m.size)),
            (2, Some(read.len() as u64)),
            "{:?}",
            archive.format
        );
        assert_eq!(catalog.read_copy("ok.txt").map(|m| m.size), Some(read.len() as u64));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever follows an archive's first bytes, listing it and reading a member end in a value or an error, never a
    /// panic: damaged zips (a real one with bytes flipped) and tars of arbitrary headers alike.
    #[test]
    fn hostile_archives_end_in_a_value_or_an_error(flips in proptest::collection::vec((0usize..4096, 1u8..=255), 1..12), tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048)) {
        let mut zip = zip_of(&[("a.txt", b"alpha\n"), ("dir/b.log", &[b'b'; 3000]), ("c/", b"")]);
        for (at, xor) in &flips {
            let len = zip.len();
            zip[at % len] ^= xor;
        }
        let mut tar = tar_of(&[("a.txt", b"alpha\n")]);
        tar.truncate(512);
        tar.extend_from_slice(&tail);
        for bytes in [zip, gzip(&tar), tar] {
            let file = file_of(&bytes);
            let format = if bytes.starts_with(b"PK") { Format::Zip } else if bytes.starts_with(&[0x1f, 0x8b]) { Format::Tar(Some(Compression::Gzip)) } else { Format::Tar(None) };
            let archive = Archive { file: &file, end: bytes.len() as u64, format, budget: budget() };
            let _ = archive.catalog();
            for path in ["a.txt", "dir/b.log", "c"] {
                if let Ok(Lookup::Found(member)) = archive.lookup(path)
                    && let Ok(mut reader) = archive.open(&member)
                {
                    let _ = reader.read_to_end(&mut Vec::new());
                }
            }
        }
    }
}
