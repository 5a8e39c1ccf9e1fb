//! A zip64 archive written byte by byte, for the tests of member limits (the library's and the command line's).

/// A zip64 archive written byte by byte: one empty local header, a central directory entry for each of `names`
/// (every one pointing at that header), `junk` bytes after the directory, then a zip64 end record declaring
/// `declared` members, its locator (pointing `junk` bytes before the record) and the plain end record.
pub fn zip64_of<S: AsRef<str>>(names: &[S], declared: u64, junk: usize) -> Vec<u8> {
    let mut zip = b"PK\x03\x04".to_vec();
    zip.extend_from_slice(&[0; 26]);
    let central_at = zip.len() as u64;
    for name in names {
        let name = name.as_ref();
        zip.extend_from_slice(b"PK\x01\x02");
        zip.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        zip.extend_from_slice(&[0; 12]);
        zip.extend_from_slice(&(name.len() as u16).to_le_bytes());
        zip.extend_from_slice(&[0; 16]);
        zip.extend_from_slice(name.as_bytes());
    }
    let central_len = zip.len() as u64 - central_at;
    let locator_points_at = zip.len() as u64;
    zip.resize(zip.len() + junk, b'j');
    zip.extend_from_slice(b"PK\x06\x06");
    zip.extend_from_slice(&44u64.to_le_bytes());
    zip.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    for field in [declared, declared, central_len, central_at] {
        zip.extend_from_slice(&field.to_le_bytes());
    }
    zip.extend_from_slice(b"PK\x06\x07\0\0\0\0");
    zip.extend_from_slice(&locator_points_at.to_le_bytes());
    zip.extend_from_slice(&1u32.to_le_bytes());
    zip.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    zip.extend_from_slice(&[0xff; 12]);
    zip.extend_from_slice(&[0, 0]);
    zip
}
