//! Windows path rules, as pure functions on text: applied to every request path, glob and client root on Windows,
//! and tested on every system (a Linux build checks the same rules a Windows build enforces).
//!
//! - Both `\` and `/` separate names.
//! - A path starts relative, at the current drive's root (`\work`), at a drive (`C:\work`), at a share
//!   (`\\server\share`), or in the verbatim namespace (`\\?\C:\work`, `\\?\UNC\server\share`), which names the same
//!   files with no name rewritten. `C:work` (relative to the drive's current directory, which this process does not
//!   choose) is refused. `\\.\` names devices (`\\.\COM1`, `\\.\pipe\x`), refused; `\\.\C:\x` is `C:\x`.
//! - Names Windows would read as something else are refused: reserved device names (`CON`, `PRN`, `AUX`, `NUL`,
//!   `COM0`-`COM9`, `LPT0`-`LPT9`, `CONIN$`, `CONOUT$`, with any extension, in any case, with trailing dots or
//!   spaces) open a device wherever they sit; a `:` names an alternate data stream (`notes.txt:hidden`,
//!   `file::$DATA`); a trailing dot or space is dropped by Windows, so `.env.` would open `.env`; and `<>"|?*` and
//!   control characters are never part of a name.
//! - Paths compare case-insensitively, as the file systems Windows uses do.

/// Where a path starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Relative: at the first root.
    Relative,
    /// At the root of the current drive (`\work`).
    DriveRoot,
    /// At a drive (`C:`), a share (`\\server\share`) or a verbatim namespace of its own (`\\?\Volume{…}`).
    Prefix(String),
}

/// A path in Windows' terms: where it starts, and its names (`.` and empty names dropped, `..` kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WinPath {
    /// Where it starts.
    pub start: Start,
    /// Its names, in order.
    pub names: Vec<String>,
}

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A reserved device name, or the device namespace (`\\.\…`): the name given.
    Device(String),
    /// An alternate data stream (a `:` in a name): the name given.
    Stream(String),
    /// A name ending in a dot or a space, which Windows would drop: the name given.
    Trailing(String),
    /// A name holding a character no Windows name holds: the name given.
    Character(String),
    /// A drive without a separator after it (`C:work`): relative to that drive's current directory.
    DriveRelative(String),
    /// A share without a server or a share name (`\\server`).
    Share(String),
}

impl Refusal {
    /// What is wrong, in words naming the part of the path at fault.
    pub fn describe(&self) -> String {
        match self {
            Refusal::Device(name) => format!("`{name}` names a Windows device, not a file"),
            Refusal::Stream(name) => {
                format!("`{name}` names an alternate data stream (after `:`); only a file's own content is read")
            }
            Refusal::Trailing(name) => {
                format!("`{name}` ends in a dot or a space, which Windows drops: it would name another file")
            }
            Refusal::Character(name) => format!("`{name}` holds a character Windows never allows in a name"),
            Refusal::DriveRelative(name) => {
                format!("`{name}` is relative to a drive's current directory; give the full path (`C:\\dir\\file`)")
            }
            Refusal::Share(name) => format!("`{name}` names no share (`\\\\server\\share\\path`)"),
        }
    }
}

/// Parses and checks `path` as Windows reads it.
pub fn parse(path: &str) -> Result<WinPath, Refusal> {
    let unified = path.replace('/', "\\");
    let (start, rest) = split_start(&unified)?;
    let mut names = Vec::new();
    for name in rest.split('\\') {
        match name {
            "" | "." => {}
            ".." => names.push(name.to_string()),
            _ => {
                check_name(name)?;
                names.push(name.to_string());
            }
        }
    }
    Ok(WinPath { start, names })
}

/// Where `path` (separators unified to `\`) starts, and the rest.
fn split_start(path: &str) -> Result<(Start, &str), Refusal> {
    if let Some(rest) = path.strip_prefix(r"\\?\").or_else(|| path.strip_prefix(r"\??\")) {
        if let Some(share) = strip_prefix_ignoring_case(rest, r"UNC\") {
            return share_start(share, path);
        }
        if let Some(start) = drive_start(rest) {
            return start;
        }
        let (first, tail) = rest.split_once('\\').unwrap_or((rest, ""));
        return Ok((Start::Prefix(format!(r"\\?\{first}")), tail));
    }
    if let Some(rest) = path.strip_prefix(r"\\.\") {
        if let Some(start) = drive_start(rest) {
            return start;
        }
        let first = rest.split('\\').next().unwrap_or_default();
        return Err(Refusal::Device(format!(r"\\.\{first}")));
    }
    if let Some(rest) = path.strip_prefix(r"\\") {
        return share_start(rest, path);
    }
    if let Some(rest) = path.strip_prefix('\\') {
        return Ok((Start::DriveRoot, rest));
    }
    match drive_start(path) {
        Some(start) => start,
        None => Ok((Start::Relative, path)),
    }
}

/// `C:\rest` → the drive and the rest; `C:rest` and `C:` are refused; `None` when `path` names no drive.
fn drive_start(path: &str) -> Option<Result<(Start, &str), Refusal>> {
    let bytes = path.as_bytes();
    if bytes.len() < 2 || !bytes[0].is_ascii_alphabetic() || bytes[1] != b':' {
        return None;
    }
    let drive = format!("{}:", char::from(bytes[0].to_ascii_uppercase()));
    Some(match path[2..].strip_prefix('\\') {
        Some(rest) => Ok((Start::Prefix(drive), rest)),
        None => Err(Refusal::DriveRelative(path.split('\\').next().unwrap_or(path).to_string())),
    })
}

/// `server\share\rest` → the share `\\server\share` and the rest.
fn share_start<'a>(rest: &'a str, whole: &str) -> Result<(Start, &'a str), Refusal> {
    let mut parts = rest.splitn(3, '\\');
    let (server, share) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if server.is_empty() || share.is_empty() || server == "." || server == "?" {
        return Err(Refusal::Share(whole.to_string()));
    }
    check_name(share)?;
    Ok((Start::Prefix(format!(r"\\{server}\{share}")), parts.next().unwrap_or_default()))
}

fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// Refuses a name Windows would read as something other than a file of that name.
pub fn check_name(name: &str) -> Result<(), Refusal> {
    if name.contains(':') {
        return Err(Refusal::Stream(name.to_string()));
    }
    if name.chars().any(|c| c < ' ' || "<>\"|?*".contains(c)) {
        return Err(Refusal::Character(name.to_string()));
    }
    if name.ends_with(['.', ' ']) && name != "." && name != ".." {
        return Err(Refusal::Trailing(name.to_string()));
    }
    if is_reserved_device(name) {
        return Err(Refusal::Device(name.to_string()));
    }
    Ok(())
}

/// Whether `name` opens a device wherever it sits: a reserved name, with any extension, in any case, with trailing
/// dots or spaces (`nul`, `Con.txt`, `COM1.tar.gz`, `aux .log`, `LPT¹`).
pub fn is_reserved_device(name: &str) -> bool {
    let stem = name.trim_end_matches(['.', ' ']);
    let stem = stem.split('.').next().unwrap_or_default().trim_end_matches(' ').to_uppercase();
    if matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$") {
        return true;
    }
    let mut chars = stem.chars();
    let head: String = chars.by_ref().take(3).collect();
    let digit = chars.next();
    (head == "COM" || head == "LPT")
        && chars.next().is_none()
        && digit.is_some_and(|d| d.is_ascii_digit() || matches!(d, '¹' | '²' | '³'))
}

impl WinPath {
    /// The path spelled the usual way: `C:\a\b`, `\\server\share\a`, `\a`, `a\b`.
    pub fn native(&self) -> String {
        let names = self.names.join("\\");
        match &self.start {
            Start::Relative => names,
            Start::DriveRoot => format!("\\{names}"),
            Start::Prefix(prefix) => format!("{prefix}\\{names}"),
        }
    }

    /// The names with `..` folded; `None` when `..` climbs above the start.
    fn folded(&self) -> Option<Vec<&str>> {
        let mut out: Vec<&str> = Vec::new();
        for name in &self.names {
            if name == ".." {
                out.pop()?;
            } else {
                out.push(name);
            }
        }
        Some(out)
    }
}

/// The names of `path` beneath `base`, compared without regard to case, `..` folded first; `None` when `path` is not
/// beneath `base` (another drive or share, climbing above it, or not absolute).
pub fn beneath(base: &WinPath, path: &WinPath) -> Option<Vec<String>> {
    let (Start::Prefix(base_start), Start::Prefix(start)) = (&base.start, &path.start) else { return None };
    if base_start.to_lowercase() != start.to_lowercase() {
        return None;
    }
    let (base_names, names) = (base.folded()?, path.folded()?);
    if names.len() < base_names.len() {
        return None;
    }
    let same = base_names.iter().zip(&names).all(|(a, b)| a.to_lowercase() == b.to_lowercase());
    same.then(|| names[base_names.len()..].iter().map(|name| name.to_string()).collect())
}

/// A path the system gave (`\\?\C:\work`, a link's target) in its usual form (`C:\work`), separators `\`. A verbatim
/// path is kept as it is when its usual form would be read differently (a name with a trailing dot, a device name).
pub fn plain(path: &str) -> String {
    let unified = path.replace('/', "\\");
    let usual = if let Some(share) = strip_prefix_ignoring_case(&unified, r"\\?\UNC\") {
        format!(r"\\{share}")
    } else if let Some(rest) = unified.strip_prefix(r"\\?\").or_else(|| unified.strip_prefix(r"\??\")) {
        rest.to_string()
    } else {
        return unified;
    };
    match parse(&usual) {
        Ok(parsed) if matches!(parsed.start, Start::Prefix(_)) => usual,
        _ => unified,
    }
}

/// A glob as Windows users write it, made separator-agnostic: `\` separates names, like `/` (globs then match paths
/// whose separators are `/`; a Windows glob has no escape character).
pub fn glob(pattern: &str) -> String {
    pattern.replace('\\', "/")
}

/// Whether a glob (separators `/`) starts at a drive: `C:/…`.
pub fn is_drive_glob(glob: &str) -> bool {
    let bytes = glob.as_bytes();
    bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'/'
}

/// The Windows path a `file:` URI's decoded path names: `/C:/work` (or `/C|/work`) is `C:\work`. `None` when it names
/// no drive.
pub fn from_uri_path(path: &str) -> Option<String> {
    let rest = path.strip_prefix('/')?;
    let bytes = rest.as_bytes();
    if bytes.len() < 2 || !bytes[0].is_ascii_alphabetic() || !matches!(bytes[1], b':' | b'|') {
        return None;
    }
    let tail = &rest[2..];
    if !(tail.is_empty() || tail.starts_with('/')) {
        return None;
    }
    Some(format!("{}:\\{}", char::from(bytes[0].to_ascii_uppercase()), tail.trim_start_matches('/').replace('/', "\\")))
}

/// The path part of the `file:` URI of a Windows path: `C:\work\a` → `/C:/work/a`, `\\server\share\a` →
/// `//server/share/a` (the server then stands as the URI's authority).
pub fn to_uri_path(path: &str) -> String {
    let usual = plain(path).replace('\\', "/");
    if usual.starts_with("//") { usual } else { format!("/{usual}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native(path: &str) -> Result<String, Refusal> {
        parse(path).map(|parsed| parsed.native())
    }

    #[test]
    fn both_separators_split_names() {
        assert_eq!(native(r"src/lib\mod.rs").unwrap(), r"src\lib\mod.rs");
        assert_eq!(native("a//b/./c/").unwrap(), r"a\b\c");
        assert_eq!(native(r"C:/work\a.txt").unwrap(), r"C:\work\a.txt");
        assert_eq!(native(r"..\x").unwrap(), r"..\x");
    }

    #[test]
    fn drive_unc_and_verbatim_starts() {
        let prefix = |path: &str| parse(path).unwrap().start;
        assert_eq!(prefix(r"c:\work"), Start::Prefix("C:".into()));
        assert_eq!(prefix(r"\\?\C:\work"), Start::Prefix("C:".into()));
        assert_eq!(prefix(r"//?/c:/work"), Start::Prefix("C:".into()));
        assert_eq!(prefix(r"\\.\C:\work"), Start::Prefix("C:".into()));
        assert_eq!(prefix(r"\\server\share\x"), Start::Prefix(r"\\server\share".into()));
        assert_eq!(prefix(r"\\?\UNC\server\share\x"), Start::Prefix(r"\\server\share".into()));
        assert_eq!(prefix(r"\\?\unc\server\share"), Start::Prefix(r"\\server\share".into()));
        assert_eq!(prefix(r"\\?\Volume{1234}\x"), Start::Prefix(r"\\?\Volume{1234}".into()));
        assert_eq!(prefix(r"\work"), Start::DriveRoot);
        assert_eq!(prefix("work"), Start::Relative);
        assert_eq!(parse(r"C:work"), Err(Refusal::DriveRelative("C:work".into())));
        assert_eq!(parse("C:"), Err(Refusal::DriveRelative("C:".into())));
        assert_eq!(parse(r"\\server"), Err(Refusal::Share(r"\\server".into())));
        assert_eq!(parse(r"\\server\"), Err(Refusal::Share(r"\\server\".into())));
    }

    #[test]
    fn paths_resolve_beneath_roots_without_regard_to_case() {
        let root = parse(r"C:\Work\Proj").unwrap();
        let under = |path: &str| beneath(&root, &parse(path).unwrap());
        assert_eq!(under(r"c:\work\proj\src\a.rs"), Some(vec!["src".into(), "a.rs".into()]));
        assert_eq!(under("C:/WORK/PROJ/src/a.rs"), Some(vec!["src".into(), "a.rs".into()]));
        assert_eq!(under(r"\\?\C:\Work\Proj\a"), Some(vec!["a".into()]));
        assert_eq!(under(r"C:\Work\Proj"), Some(vec![]));
        assert_eq!(under(r"C:\Work\Proj\sub\..\a"), Some(vec!["a".into()]));
        for outside in [
            r"C:\Work\Proj\..\secret.txt",
            r"C:\Work\Projects\a",
            r"C:\Work",
            r"D:\Work\Proj\a",
            r"\\server\share\Work\Proj\a",
            r"\\?\UNC\server\share\a",
            r"\\?\Volume{1}\Work\Proj\a",
            r"C:\..\..\Work\Proj\a",
            r"Work\Proj\a",
        ] {
            assert_eq!(under(outside), None, "{outside}");
        }
        let share = parse(r"\\Server\Share\team").unwrap();
        assert_eq!(beneath(&share, &parse(r"\\?\UNC\server\share\TEAM\x").unwrap()), Some(vec!["x".into()]));
        assert_eq!(beneath(&share, &parse(r"\\server\other\team\x").unwrap()), None);
    }

    #[test]
    fn reserved_device_names_are_refused_in_every_spelling() {
        for name in [
            "CON",
            "con",
            "Con.txt",
            "NUL",
            "nul.tar.gz",
            "PRN",
            "AUX",
            "aux.log",
            "COM1",
            "com9.txt",
            "LPT1",
            "lpt9",
            "COM0",
            "LPT¹",
            "COM³.x",
            "NUL.",
            "nul ",
            "CON .txt",
            "AUX. .",
            "CONIN$",
            "conout$",
        ] {
            assert!(is_reserved_device(name), "{name}");
        }
        for name in ["CONSOLE", "nulls.txt", "COM10", "LPT", "COMA", "a.con", "my-nul", "com", "COM1x", "x.NUL"] {
            assert!(!is_reserved_device(name), "{name}");
        }
        assert_eq!(parse(r"logs\NUL.txt"), Err(Refusal::Device("NUL.txt".into())));
        assert_eq!(parse(r"C:\work\com1"), Err(Refusal::Device("com1".into())));
        assert_eq!(parse(r"\\.\COM1"), Err(Refusal::Device(r"\\.\COM1".into())));
        assert_eq!(parse(r"\\.\pipe\secret"), Err(Refusal::Device(r"\\.\pipe".into())));
        assert_eq!(parse(r"\\.\PhysicalDrive0"), Err(Refusal::Device(r"\\.\PhysicalDrive0".into())));
    }

    #[test]
    fn streams_trailing_dots_and_odd_characters_are_refused() {
        assert_eq!(parse("notes.txt:hidden"), Err(Refusal::Stream("notes.txt:hidden".into())));
        assert_eq!(parse("file::$DATA"), Err(Refusal::Stream("file::$DATA".into())));
        assert_eq!(
            parse(r"C:\work\dir:$I30:$INDEX_ALLOCATION\x"),
            Err(Refusal::Stream("dir:$I30:$INDEX_ALLOCATION".into()))
        );
        assert_eq!(parse(".env."), Err(Refusal::Trailing(".env.".into())));
        assert_eq!(parse(r"secrets \x"), Err(Refusal::Trailing("secrets ".into())));
        for odd in ["a<b", "a>b", "a\"b", "a|b", "a?b", "a*b", "a\u{1}b"] {
            assert_eq!(parse(odd), Err(Refusal::Character(odd.into())), "{odd:?}");
        }
        assert!(parse(r"..\.\a..b\.hidden\x.y").is_ok(), "dots inside names are fine");
    }

    #[test]
    fn system_paths_are_made_plain_unless_that_changes_what_they_name() {
        assert_eq!(plain(r"\\?\C:\work\a.txt"), r"C:\work\a.txt");
        assert_eq!(plain(r"\\?\UNC\server\share\a"), r"\\server\share\a");
        assert_eq!(plain(r"\??\C:\target"), r"C:\target");
        assert_eq!(plain("C:/work"), r"C:\work");
        assert_eq!(plain(r"\\?\C:\work\nul.txt"), r"\\?\C:\work\nul.txt");
        assert_eq!(plain(r"\\?\C:\work\a."), r"\\?\C:\work\a.");
        assert_eq!(plain(r"\\?\Volume{1}\a"), r"\\?\Volume{1}\a");
    }

    #[test]
    fn globs_and_file_uris() {
        assert_eq!(glob(r"src\**\*.rs"), "src/**/*.rs");
        assert_eq!(glob(r"C:\Users\*\.ssh\"), "C:/Users/*/.ssh/");
        assert!(is_drive_glob(&glob(r"c:\Users\*")) && !is_drive_glob("c:") && !is_drive_glob("src/*.rs"));
        assert_eq!(from_uri_path("/C:/work"), Some(r"C:\work".into()));
        assert_eq!(from_uri_path("/c|/My Work/x"), Some(r"C:\My Work\x".into()));
        assert_eq!(from_uri_path("/C:"), Some(r"C:\".into()));
        assert_eq!(from_uri_path("/work"), None);
        assert_eq!(from_uri_path("/C:work"), None);
        assert_eq!(to_uri_path(r"C:\work\a b.txt"), "/C:/work/a b.txt");
        assert_eq!(to_uri_path(r"\\?\C:\work"), "/C:/work");
        assert_eq!(to_uri_path(r"\\server\share\a"), "//server/share/a");
    }
}
