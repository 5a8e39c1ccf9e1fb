//! Adversarial security tests of the `agent-read` binary (docs/contract.md, Safety).
//!
//! Every case runs the real binary as a separate process, with a 20 s timeout, in a temporary layout:
//!
//! ```text
//! <tmp>/work/            the root (`--root <tmp>/work`)
//! <tmp>/outside/secret   a file outside the root holding a unique marker (`TOPSECRET-<random>`)
//! <tmp>/outside/plans.txt  the same marker under a name no default deny rule matches
//! <tmp>/outside/TOPSECRET-<random>.txt  the marker as a file name (a listing of `outside` leaks it)
//! <tmp>/work_secrets/x   a sibling whose name starts with the root's name, also holding the marker
//! ```
//!
//! The process runs with `<tmp>` as its working directory, so `/proc/self/cwd` leads outside the root.
//!
//! The one global rule: the marker never appears in the standard output or standard error of any run — not in
//! content, error messages, hints, suggestions or listings. [`exec`] checks it for every process this file starts, and
//! also that a JSON request always gets exactly one JSON result with exit status 0 (no crash, no hang).
//!
//! Confinement cases run twice: with the default policy (where `DENIED` is also an acceptable refusal, since the
//! outside file is called `secret`) and with `--no-default-deny`, where only `OUTSIDE_ROOT` is — so a deny rule can
//! never hide a confinement hole.
#![cfg(unix)] // Unix by nature: symbolic links, FIFOs, /proc

use assert_cmd::Command;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::collections::hash_map::RandomState;
use std::ffi::OsString;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod secrets;

/// Per-process timeout of every run.
const TIMEOUT: Duration = Duration::from_secs(20);
/// The default output cap (50 KiB).
const CAP: usize = 50 * 1024;
/// The content of the harmless file the race swaps in.
const HARMLESS: &str = "harmless content";

/// The secret marker: unique per test run, never part of any path this file asks for.
static MARKER: LazyLock<String> = LazyLock::new(|| {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    hasher.write_u32(std::process::id());
    format!("TOPSECRET-{:016x}", hasher.finish())
});

/// Processes started by this file (reported by the slow tests).
static RUNS: AtomicUsize = AtomicUsize::new(0);

fn marker() -> &'static str {
    MARKER.as_str()
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers: the layout, running the binary, reading its result.
// ---------------------------------------------------------------------------------------------------------------

/// The temporary layout described at the top of this file.
struct Ws {
    _dir: tempfile::TempDir,
    /// `<tmp>` (canonical).
    tmp: PathBuf,
    /// `<tmp>/work`, the root.
    root: PathBuf,
    /// `<tmp>/outside`.
    outside: PathBuf,
}

impl Ws {
    fn new() -> Ws {
        let dir = tempfile::Builder::new().prefix("adv").tempdir().expect("tempdir");
        let tmp = dir.path().canonicalize().expect("canonical tempdir");
        let root = tmp.join("work");
        let outside = tmp.join("outside");
        fs::create_dir(&root).expect("create root");
        fs::create_dir(&outside).expect("create outside");
        fs::write(outside.join("secret"), format!("{}\n", marker())).expect("write secret");
        fs::write(outside.join("plans.txt"), format!("{}\n", marker())).expect("write plans");
        // An outside file whose *name* carries the marker: any listing of `outside` leaks it.
        fs::write(outside.join(format!("{}.txt", marker())), "name leak\n").expect("write named");
        fs::create_dir(tmp.join("work_secrets")).expect("create sibling");
        fs::write(tmp.join("work_secrets/x"), format!("{}\n", marker())).expect("write sibling");
        Ws { _dir: dir, tmp, root, outside }
    }

    /// Writes a file beneath the root, creating its parents.
    fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("create parents");
        fs::write(&path, content).expect("write file");
        path
    }

    /// Creates a directory beneath the root.
    fn dir(&self, rel: &str) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(&path).expect("create dir");
        path
    }

    /// Creates the symlink `<root>/<rel>` pointing at `target` (taken verbatim).
    fn link(&self, target: impl AsRef<Path>, rel: &str) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("create parents");
        symlink(target, path).expect("create symlink");
    }

    /// The outside secret's absolute path.
    fn secret(&self) -> PathBuf {
        self.outside.join("secret")
    }

    /// The four outward links of the brief: `l1`, `l2` (file, relative/absolute), `d1`, `d2` (directory).
    fn outward_links(&self) {
        self.link("../outside/secret", "l1");
        self.link(self.secret(), "l2");
        self.link("../outside", "d1");
        self.link(&self.outside, "d2");
    }

    /// The binary confined to the root (`--root <tmp>/work`), run from `<tmp>`, plus `extra` arguments.
    fn cmd(&self, extra: &[&str]) -> Command {
        let mut args: Vec<OsString> = vec!["--root".into(), self.root.clone().into_os_string()];
        args.extend(extra.iter().map(OsString::from));
        agent(&self.tmp, args)
    }

    /// One JSON request with extra arguments.
    fn req(&self, extra: &[&str], request: Value) -> Run {
        exec(self.cmd(extra), &request)
    }

    /// Reads `path` with the default policy.
    fn read(&self, path: &str) -> Run {
        self.req(&[], json!({ "path": path }))
    }

    /// Reads `path` with the default deny list off, so only confinement can refuse.
    fn read_strict(&self, path: &str) -> Run {
        self.req(&["--no-default-deny"], json!({ "path": path }))
    }
}

/// The binary, with `args`, run from `cwd`.
fn agent(cwd: &Path, args: Vec<OsString>) -> Command {
    let mut cmd = Command::cargo_bin("agent-read").expect("binary built");
    cmd.current_dir(cwd).args(args);
    cmd
}

/// The binary with `--root /` (unrestricted), run from `cwd`.
fn agent_root_slash(cwd: &Path) -> Command {
    agent(cwd, vec!["--root".into(), "/".into()])
}

/// What one run printed.
#[derive(Debug)]
struct Run {
    stdout: String,
    json: Value,
    elapsed: Duration,
}

impl Run {
    fn ok(&self) -> bool {
        self.json["ok"] == json!(true)
    }

    fn code(&self) -> &str {
        self.json["error_code"].as_str().unwrap_or(if self.ok() { "ok" } else { "?" })
    }

    fn output(&self) -> &str {
        self.json["output"].as_str().unwrap_or("")
    }

    fn error(&self) -> &str {
        self.json["error"].as_str().unwrap_or("")
    }

    fn suggestions(&self) -> Vec<String> {
        match &self.json["suggestions"] {
            Value::Array(items) => items.iter().filter_map(|s| s.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        }
    }
}

/// Fails if the secret marker occurs in `bytes`.
fn assert_no_marker(bytes: &[u8], stream: &str, what: &str) {
    let m = marker().as_bytes();
    assert!(
        !bytes.windows(m.len()).any(|w| w == m),
        "SECRET LEAKED on {stream} of {what}:\n{}",
        String::from_utf8_lossy(bytes)
    );
}

/// Runs one JSON request on standard input. Checks, for every run: the marker is absent from standard output and
/// standard error, the process exited 0 in time (no crash, no hang), and it printed one JSON result.
fn exec(cmd: Command, request: &Value) -> Run {
    exec_raw(cmd, Some(request.to_string()), &format!("request {request}"))
}

/// [`exec`] with any standard input (or none), described as `what` in failures.
fn exec_raw(mut cmd: Command, stdin: Option<String>, what: &str) -> Run {
    cmd.timeout(TIMEOUT);
    if let Some(stdin) = stdin {
        cmd.write_stdin(stdin);
    }
    let start = Instant::now();
    let out = cmd.output().expect("spawn agent-read");
    let elapsed = start.elapsed();
    RUNS.fetch_add(1, Ordering::Relaxed);
    assert_no_marker(&out.stdout, "stdout", what);
    assert_no_marker(&out.stderr, "stderr", what);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what}: exit status {:?} after {elapsed:?} (crash or timeout)\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    let json: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{what}: stdout is not one JSON result ({e}):\n{stdout}\nstderr: {stderr}"));
    assert!(json["ok"].is_boolean(), "{what}: no `ok` field: {stdout}");
    Run { stdout, json, elapsed }
}

/// Asserts the error code of a run.
fn expect_code(run: &Run, code: &str, what: &str) {
    assert_eq!(run.code(), code, "{what}: expected {code}, got:\n{}", run.stdout);
    if code != "ok" {
        assert!(!run.ok(), "{what}: an error result must have ok=false: {}", run.stdout);
    }
}

/// Asserts a run is refused (not ok), whatever the code.
fn expect_refused(run: &Run, what: &str) {
    assert!(!run.ok(), "{what}: must be refused, got:\n{}", run.stdout);
}

/// Asserts nothing in the run names one of `names` (outside files or denied names) as a suggestion.
fn expect_no_suggestion_of(run: &Run, names: &[&str], what: &str) {
    for s in run.suggestions() {
        for name in names {
            let last = Path::new(&s).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            assert!(last != *name, "{what}: suggests `{s}` ({name}): {}", run.stdout);
        }
    }
}

/// A path leading outside: `OUTSIDE_ROOT` with the deny list off; `OUTSIDE_ROOT` or `DENIED` with the defaults. No
/// suggestion may name an outside file.
fn expect_outside(ws: &Ws, path: &str) {
    let strict = ws.read_strict(path);
    expect_code(&strict, "OUTSIDE_ROOT", &format!("{path} (--no-default-deny)"));
    let default = ws.read(path);
    assert!(
        matches!(default.code(), "OUTSIDE_ROOT" | "DENIED"),
        "{path} (default policy): expected OUTSIDE_ROOT or DENIED, got:\n{}",
        default.stdout
    );
    for run in [&strict, &default] {
        expect_no_suggestion_of(run, &["secret", "plans.txt", "x"], path);
        assert!(!run.output().contains("plans.txt") || path.contains("plans"), "{path}: names plans.txt");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// `..` traversal and absolute paths.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn dotdot_to_outside_is_outside_root() {
    let ws = Ws::new();
    expect_outside(&ws, "../outside/secret");
    expect_outside(&ws, "../outside/plans.txt");
    expect_outside(&ws, "..");
    expect_outside(&ws, "../outside");
}

#[test]
fn dotdot_after_a_subdirectory_is_outside_root() {
    let ws = Ws::new();
    ws.dir("a/b");
    expect_outside(&ws, "a/../../outside/secret");
    expect_outside(&ws, "a/b/../../../outside/plans.txt");
    expect_outside(&ws, "./a/./../../outside/plans.txt");
    // Missing intermediate directories do not help either.
    expect_outside(&ws, "nope/../../outside/plans.txt");
}

#[test]
fn deep_dotdot_to_etc_passwd_is_outside_root() {
    let ws = Ws::new();
    expect_outside(&ws, "../../../../etc/passwd");
    expect_outside(&ws, &format!("{}etc/passwd", "../".repeat(64)));
    expect_outside(&ws, "a/../../../../../../../../etc/passwd");
}

#[test]
fn absolute_etc_passwd_is_outside_root() {
    let ws = Ws::new();
    expect_outside(&ws, "/etc/passwd");
    expect_outside(&ws, "/");
    expect_outside(&ws, "//etc//passwd");
}

#[test]
fn absolute_path_of_the_outside_secret_is_outside_root() {
    let ws = Ws::new();
    expect_outside(&ws, &ws.secret().display().to_string());
    expect_outside(&ws, &ws.outside.join("plans.txt").display().to_string());
    // Through the root's own absolute path.
    expect_outside(&ws, &format!("{}/../outside/plans.txt", ws.root.display()));
    expect_outside(&ws, &format!("{}/./a/../../outside/plans.txt", ws.root.display()));
}

#[test]
fn sibling_directory_sharing_the_root_prefix_is_outside_root() {
    let ws = Ws::new();
    let sibling = ws.tmp.join("work_secrets");
    expect_outside(&ws, &sibling.join("x").display().to_string());
    expect_outside(&ws, &sibling.display().to_string());
    expect_outside(&ws, &format!("{}/../work_secrets/x", ws.root.display()));
    expect_outside(&ws, "../work_secrets/x");
    // Not a prefix match in the other direction either: `<tmp>/wor` is not the root.
    expect_outside(&ws, &format!("{}/wor", ws.tmp.display()));
}

// ---------------------------------------------------------------------------------------------------------------
// Symlinks leading out, and symlinks that stay inside.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn symlink_to_outside_file_relative_target_is_outside_root() {
    let ws = Ws::new();
    ws.outward_links();
    ws.link("../outside/plans.txt", "notes.txt");
    expect_outside(&ws, "l1");
    expect_outside(&ws, "notes.txt");
    expect_outside(&ws, "./l1");
}

#[test]
fn symlink_to_outside_file_absolute_target_is_outside_root() {
    let ws = Ws::new();
    ws.outward_links();
    ws.link(ws.outside.join("plans.txt"), "abs_notes.txt");
    expect_outside(&ws, "l2");
    expect_outside(&ws, "abs_notes.txt");
    expect_outside(&ws, &ws.root.join("l2").display().to_string());
}

#[test]
fn symlink_to_outside_directory_then_file_is_outside_root() {
    let ws = Ws::new();
    ws.outward_links();
    for path in ["d1/secret", "d2/secret", "d1/plans.txt", "d2/plans.txt", "d1/./plans.txt", "d2/../d1/plans.txt"] {
        expect_outside(&ws, path);
    }
    // Nested: a link inside pointing to a directory whose link goes out.
    ws.link("d1", "via");
    expect_outside(&ws, "via/plans.txt");
}

#[test]
fn listing_a_symlinked_outside_directory_is_outside_root() {
    let ws = Ws::new();
    ws.outward_links();
    for path in ["d1", "d2", "d1/", "d2/.", "d1/../d1", "d1/..", "d2/..", "d1/../outside", "d2/../work_secrets"] {
        expect_outside(&ws, path);
        let run = ws.read_strict(path);
        assert!(!run.stdout.contains("plans.txt"), "{path}: lists an outside entry: {}", run.stdout);
    }
}

#[test]
fn missing_file_under_outward_link_is_outside_root_without_suggestions() {
    let ws = Ws::new();
    ws.outward_links();
    for path in ["d1/missing", "d2/missing", "d1/plans.tx", "d2/plans.tx", "d1/secre", "d1/sub/dir/x"] {
        expect_outside(&ws, path);
        for run in [ws.read(path), ws.read_strict(path)] {
            assert!(run.suggestions().is_empty(), "{path}: suggestions {:?}", run.suggestions());
            assert!(!run.stdout.contains("plans.txt"), "{path}: names an outside file: {}", run.stdout);
        }
    }
}

#[test]
fn near_misses_never_name_files_behind_outward_links() {
    let ws = Ws::new();
    ws.outward_links();
    // `d3` is missing; the siblings `d1`/`d2` may be offered, never `d1/plans.txt` (it is outside).
    for path in ["d3/plans.txt", "d3/secret", "l3"] {
        let run = ws.read_strict(path);
        expect_code(&run, "NOT_FOUND", path);
        for s in run.suggestions() {
            assert!(!s.contains("plans.txt") && !s.contains("secret") && !s.contains("outside"), "{path}: {s}");
        }
        let did_you_mean = run.output().lines().find(|l| l.starts_with("Did you mean")).unwrap_or("");
        assert!(!did_you_mean.contains("plans.txt") && !did_you_mean.contains("secret"), "{path}: {did_you_mean}");
    }
}

#[test]
fn symlinks_staying_inside_are_followed() {
    let ws = Ws::new();
    ws.file("in.txt", "inside text\n");
    ws.file("sub/deep.txt", "deep text\n");
    ws.link("in.txt", "rel_file");
    ws.link(ws.root.join("in.txt"), "abs_file");
    ws.link("sub", "rel_dir");
    ws.link(ws.root.join("sub"), "abs_dir");
    ws.link("../in.txt", "sub/up_file");
    ws.link("rel_file", "chain");
    // A link reaching the root through a spelling that climbs out and back in.
    ws.link("../work/in.txt", "out_and_in");
    for (path, text) in [
        ("rel_file", "inside text"),
        ("abs_file", "inside text"),
        ("rel_dir/deep.txt", "deep text"),
        ("abs_dir/deep.txt", "deep text"),
        ("sub/up_file", "inside text"),
        ("chain", "inside text"),
    ] {
        let run = ws.read_strict(path);
        expect_code(&run, "ok", path);
        assert!(run.output().contains(text), "{path}: {}", run.stdout);
    }
    for dir in ["rel_dir", "abs_dir"] {
        let run = ws.read_strict(dir);
        expect_code(&run, "ok", dir);
        assert_eq!(run.json["kind"], "directory", "{dir}");
        assert!(run.output().contains("deep.txt"), "{dir}: {}", run.stdout);
    }
    // `../work/in.txt` from the root passes through `<tmp>`: refusing it is acceptable, leaking is not.
    let run = ws.read_strict("out_and_in");
    assert!(!run.ok() || run.output().contains("inside text"), "{}", run.stdout);
}

#[test]
fn symlink_loops_fail_cleanly() {
    let ws = Ws::new();
    ws.link("b", "a");
    ws.link("a", "b");
    ws.link("self", "self");
    ws.link("loopdir/x", "loopdir");
    for path in ["a", "b", "self", "a/x", "self/", "loopdir", "loopdir/x/y"] {
        for run in [ws.read(path), ws.read_strict(path)] {
            expect_refused(&run, path);
            assert!(run.elapsed < Duration::from_secs(10), "{path}: took {:?}", run.elapsed);
        }
    }
    // The root still lists fine with the loops in it.
    let run = ws.read(".");
    expect_code(&run, "ok", ".");
}

#[test]
fn dangling_links_inside_are_not_found() {
    let ws = Ws::new();
    ws.link("nowhere.txt", "dangling");
    ws.link(ws.root.join("nowhere.txt"), "dangling_abs");
    ws.dir("sub");
    ws.link("../gone/file", "sub/dangling_up");
    for path in ["dangling", "dangling_abs", "sub/dangling_up"] {
        let run = ws.read_strict(path);
        expect_code(&run, "NOT_FOUND", path);
    }
}

/// A dangling link whose target lies outside must be refused as outside, like a link to an outside file that
/// exists: otherwise NOT_FOUND vs OUTSIDE_ROOT tells whether a path outside the root exists.
#[test]
fn dangling_links_leading_out_are_outside_root() {
    let ws = Ws::new();
    ws.link("../outside/nowhere", "dangling_rel_out");
    ws.link(ws.outside.join("nowhere"), "dangling_abs_out");
    ws.link("../outside/plans.txt", "existing_rel_out");
    ws.link(ws.outside.join("plans.txt"), "existing_abs_out");
    let existing = ws.read_strict("existing_rel_out");
    expect_code(&existing, "OUTSIDE_ROOT", "existing_rel_out");
    for path in ["dangling_rel_out", "dangling_abs_out", "existing_abs_out"] {
        let run = ws.read_strict(path);
        expect_code(&run, existing.code(), &format!("{path} (must answer like a link to an existing outside file)"));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Magic links through /proc.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn symlink_to_proc_self_root_never_reveals_the_secret() {
    let ws = Ws::new();
    let via_root = |p: &Path| format!("/proc/self/root{}", p.display());
    ws.link(via_root(&ws.secret()), "m1");
    ws.link(via_root(&ws.outside.join("plans.txt")), "m1_plans");
    ws.link(via_root(&ws.outside), "m1_dir");
    ws.link("/proc/self/root", "m_fsroot");
    let fs_relative = ws.outside.join("plans.txt").strip_prefix("/").expect("absolute").display().to_string();
    for path in [
        "m1".to_string(),
        "m1_plans".to_string(),
        "m1_dir".to_string(),
        "m1_dir/plans.txt".to_string(),
        "m1_dir/plans.tx".to_string(),
        format!("m_fsroot/{fs_relative}"),
        "m_fsroot/etc/passwd".to_string(),
        "m_fsroot".to_string(),
    ] {
        for run in [ws.read(&path), ws.read_strict(&path)] {
            expect_refused(&run, &path);
            assert!(!run.stdout.contains("plans.txt") || path.contains("plans"), "{path}: {}", run.stdout);
        }
    }
}

#[test]
fn symlink_to_proc_self_cwd_never_reveals_the_secret() {
    let ws = Ws::new();
    // The process runs from `<tmp>`, so `/proc/self/cwd` is `<tmp>`, outside the root.
    ws.link("/proc/self/cwd", "m2");
    ws.link("/proc/self/cwd/outside", "m2_dir");
    for path in ["m2", "m2/outside", "m2/outside/secret", "m2/outside/plans.txt", "m2_dir", "m2_dir/plans.txt"] {
        for run in [ws.read(path), ws.read_strict(path)] {
            expect_refused(&run, path);
            assert!(!run.stdout.contains("plans.txt") || path.contains("plans"), "{path}: {}", run.stdout);
        }
    }
}

#[test]
fn proc_self_root_asked_directly_is_outside_root() {
    let ws = Ws::new();
    let plans = ws.outside.join("plans.txt");
    let me = std::process::id();
    for path in [
        format!("/proc/self/root{}", ws.secret().display()),
        format!("/proc/self/root{}", plans.display()),
        format!("/proc/thread-self/root{}", plans.display()),
        format!("/proc/{me}/root{}", plans.display()),
        format!("/proc/self/root{}/../outside/plans.txt", ws.root.display()),
        "/proc/self/cwd/outside/plans.txt".to_string(),
        "/proc/self/cwd/outside".to_string(),
        "/proc/self/environ".to_string(),
        "/proc/self/fd/0".to_string(),
    ] {
        for run in [ws.read(&path), ws.read_strict(&path)] {
            expect_refused(&run, &path);
            assert!(matches!(run.code(), "OUTSIDE_ROOT" | "DENIED"), "{path}: {}", run.stdout);
        }
    }
    // And the root reached through /proc/self/root may be read — it is the same directory — or refused.
    ws.file("in.txt", "inside\n");
    let run = ws.read_strict(&format!("/proc/self/root{}/in.txt", ws.root.display()));
    assert!(!run.ok() || run.output().contains("inside"), "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------------------------------
// Path syntax: NUL, odd names, very long paths.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn nul_in_path_is_invalid_param() {
    let ws = Ws::new();
    ws.file("a", "a\n");
    ws.file("a.txt", "a\n");
    for path in ["a\u{0}b", "\u{0}", "a.txt\u{0}", "a.txt\u{0}../../outside/secret", "../outside/secret\u{0}.txt"] {
        let run = ws.req(&[], json!({ "path": path }));
        expect_code(&run, "INVALID_PARAM", &format!("{path:?}"));
        let run = ws.req(&[], json!({ "file_path": path }));
        expect_code(&run, "INVALID_PARAM", &format!("file_path {path:?}"));
    }
}

#[test]
fn odd_but_legitimate_names_are_read() {
    let ws = Ws::new();
    let names =
        ["..envelope", "name with spaces.txt", "%2e%2e", "naïve-日本.txt", "...", "~", "-rf", "..a/b.txt", "$HOME"];
    for (i, name) in names.iter().enumerate() {
        ws.file(name, format!("content number {i}\n"));
    }
    for (i, name) in names.iter().enumerate() {
        let run = ws.read(name);
        expect_code(&run, "ok", name);
        assert!(run.output().contains(&format!("content number {i}")), "{name}: {}", run.stdout);
        let abs = ws.root.join(name).display().to_string();
        expect_code(&ws.read(&abs), "ok", &abs);
    }
    // `....` is a name, not a parent: a directory called `....` can be listed and entered.
    ws.file("..../inner.txt", "inner\n");
    let run = ws.read("..../inner.txt");
    expect_code(&run, "ok", "..../inner.txt");
    expect_code(&ws.read("...."), "ok", "....");
    // `%2e%2e` is never decoded into `..`.
    expect_code(&ws.read_strict("%2e%2e/outside/plans.txt"), "NOT_FOUND", "%2e%2e/outside/plans.txt");
}

#[test]
fn very_long_and_deep_paths_fail_cleanly() {
    let ws = Ws::new();
    ws.dir("a");
    let deep = format!("{}x", "a/".repeat(5000));
    let long_name = "n".repeat(5000);
    let climb = "a/../".repeat(5000);
    let escape = format!("{climb}../outside/secret");
    for path in [deep.as_str(), long_name.as_str(), escape.as_str()] {
        expect_refused(&ws.read(path), &path[..20]);
    }
    // `a/../` × 5000 is the root itself: listed, or refused — but cleanly.
    let run = ws.read(&climb);
    assert!(run.ok() || !run.code().is_empty());
    // Over PATH_MAX (4096 bytes) a path is refused before resolution, without echoing it.
    expect_code(&ws.read_strict(&escape), "INVALID_PARAM", "(a/../)×5000 ../outside/secret");
    // Within PATH_MAX, the same climb out is OUTSIDE_ROOT.
    let short_escape = format!("{}../outside/secret", "a/../".repeat(500));
    expect_code(&ws.read_strict(&short_escape), "OUTSIDE_ROOT", "(a/../)×500 ../outside/secret");
}

/// The contract (docs/contract.md, What the model sees): the output cap "bounds the whole `output`, prefixes and
/// footer included, errors too". The path is echoed in the error;
/// a huge path must not blow the cap.
#[test]
fn error_output_for_huge_paths_stays_within_the_cap() {
    let ws = Ws::new();
    let requests = [
        ("300 KB name", "x".repeat(300_000)),
        ("100k-deep path", format!("{}x", "a/".repeat(100_000))),
        ("huge escape", format!("{}{}outside/secret", "zz/".repeat(100_000), "../".repeat(100_001))),
    ];
    for (what, path) in requests {
        let run = ws.read(&path);
        expect_refused(&run, what);
        assert!(
            run.output().len() <= CAP,
            "{what}: error output is {} bytes, over the {CAP}-byte cap ({})",
            run.output().len(),
            run.code()
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Policy: default deny list, aliases, suggestions, configuration flags.
// ---------------------------------------------------------------------------------------------------------------

/// Each default secret pattern, with the rules that may be named for it.
const SECRET_FILES: &[(&str, &[&str])] = &[
    (".env", &[".env"]),
    (".ENV", &[".env"]),
    (".env.local", &[".env.*"]),
    ("app/.Env.Production", &[".env.*"]),
    ("deploy/Production.env", &["*.env"]),
    ("server.pem", &["*.pem"]),
    ("KEY.PEM", &["*.pem"]),
    ("tls.key", &["*.key"]),
    ("id_rsa", &["id_rsa*"]),
    ("id_ed25519.pub", &["id_ed25519*"]),
    (".ssh/config", &[".ssh/"]),
    (".aws/credentials", &[".aws/", "*credential*"]),
    (".netrc", &[".netrc"]),
    (".envrc", &[".envrc"]),
    ("site/.htpasswd", &[".htpasswd"]),
    ("secrets/db.yaml", &["secrets/"]),
    ("my_secret.txt", &["*secret*"]),
    ("PASSWORD.md", &["*password*"]),
    ("vault.kdbx", &["*.kdbx"]),
];

fn write_secret_files(ws: &Ws) {
    for (name, _) in SECRET_FILES {
        ws.file(name, format!("{} in {name}\n", marker()));
    }
}

fn expect_denied(run: &Run, rules: &[&str], what: &str) {
    expect_code(run, "DENIED", what);
    assert!(
        rules.iter().any(|rule| run.error().contains(&format!("rule `{rule}`"))),
        "{what}: the message must name one of {rules:?}: {}",
        run.error()
    );
}

#[test]
fn default_secret_patterns_are_denied_naming_the_rule() {
    let ws = Ws::new();
    write_secret_files(&ws);
    for (name, rules) in SECRET_FILES {
        expect_denied(&ws.read(name), rules, name);
    }
}

#[test]
fn default_secret_patterns_are_denied_in_every_spelling() {
    let ws = Ws::new();
    write_secret_files(&ws);
    ws.dir("zz");
    for (name, rules) in SECRET_FILES {
        for path in [
            format!("./{name}"),
            format!("zz/../{name}"),
            format!(".//{name}"),
            ws.root.join(name).display().to_string(),
            format!("{}/zz/../{name}", ws.root.display()),
        ] {
            expect_denied(&ws.read(&path), rules, &path);
        }
    }
    // Byte ranges and forced encodings are no way around a denial.
    for request in [
        json!({"path": ".env", "start_byte": 0, "end_byte": 100}),
        json!({"path": ".env", "offset": -1}),
        json!({"path": ".env", "encoding": "windows-1252"}),
    ] {
        expect_denied(&ws.req(&[], request.clone()), &[".env"], &request.to_string());
    }
}

#[test]
fn denied_directories_cannot_be_listed() {
    let ws = Ws::new();
    write_secret_files(&ws);
    for (dir, rule) in [(".ssh", ".ssh/"), (".aws", ".aws/"), ("secrets", "secrets/"), (".SSH/..//.ssh", ".ssh/")] {
        expect_denied(&ws.read(dir), &[rule], dir);
    }
    // The root listing may name denied entries but marks them and never shows their content.
    let run = ws.read(".");
    expect_code(&run, "ok", ".");
    assert!(run.output().contains(".env  (") && run.output().contains("(denied)"), "{}", run.stdout);
}

#[test]
fn deny_reached_through_a_symlink_alias_is_denied() {
    let ws = Ws::new();
    write_secret_files(&ws);
    ws.link(".env", "notes.txt");
    ws.link(".ssh", "docs");
    ws.link(ws.root.join(".env"), "abs_alias.txt");
    ws.link("notes.txt", "chain.txt");
    ws.link("server.pem", "cert.txt");
    ws.link("secrets", "configs");
    ws.dir("sub");
    ws.link("../.aws", "sub/cloud");
    for (path, rules) in [
        ("notes.txt", &[".env"][..]),
        ("docs/config", &[".ssh/"]),
        ("docs", &[".ssh/"]),
        ("abs_alias.txt", &[".env"]),
        ("chain.txt", &[".env"]),
        ("cert.txt", &["*.pem"]),
        ("configs/db.yaml", &["secrets/"]),
        ("sub/cloud/credentials", &[".aws/", "*credential*"]),
    ] {
        expect_denied(&ws.read(path), rules, path);
    }
}

#[test]
fn denied_names_are_never_suggested() {
    let ws = Ws::new();
    write_secret_files(&ws);
    ws.file(".enz", "not a secret\n");
    let mut denied: Vec<&str> =
        SECRET_FILES.iter().filter_map(|(name, _)| Path::new(name).file_name().and_then(|n| n.to_str())).collect();
    denied.extend([".ssh", ".aws", "secrets"]);
    let asked = [
        ".evn",
        ".env.locl",
        "id_rs",
        "server.pen",
        "my_secret.tx",
        "PASSWORD.mdd",
        ".sshh/config",
        "secret/db.yaml",
        ".awss/credentials",
        "vault.kdb",
    ];
    for path in asked {
        let run = ws.read(path);
        // A near miss of a secret may itself match a deny rule (`my_secret.tx`): DENIED is fine, a suggestion is not.
        assert!(matches!(run.code(), "NOT_FOUND" | "DENIED"), "{path}: {}", run.stdout);
        for s in run.suggestions() {
            for component in Path::new(&s).iter() {
                let c = component.to_string_lossy();
                assert!(
                    !denied.iter().any(|d| d.eq_ignore_ascii_case(&c)),
                    "{path}: suggests the denied `{s}`: {}",
                    run.stdout
                );
            }
        }
        if path == ".evn" {
            assert_eq!(run.suggestions(), vec![".enz".to_string()], ".evn: {}", run.stdout);
        }
    }
}

#[test]
fn no_default_deny_makes_env_readable() {
    let ws = Ws::new();
    ws.file(".env", "API_URL=https://example.invalid\n");
    expect_denied(&ws.read(".env"), &[".env"], ".env");
    let run = ws.req(&["--no-default-deny"], json!({"path": ".env"}));
    expect_code(&run, "ok", ".env with --no-default-deny");
    assert!(run.output().contains("API_URL=https://example.invalid"), "{}", run.stdout);
}

#[test]
fn extra_deny_glob_denies_matching_files() {
    let ws = Ws::new();
    ws.file("x.log", "log line\n");
    ws.file("X.LOG", "LOG LINE\n");
    ws.file("logs/app.log", "app\n");
    ws.file("x.txt", "text\n");
    ws.link("x.log", "alias.txt");
    for path in ["x.log", "X.LOG", "logs/app.log", "alias.txt", "./logs/../x.log"] {
        expect_denied(&ws.req(&["--deny", "*.log"], json!({"path": path})), &["*.log"], path);
    }
    expect_code(&ws.req(&["--deny", "*.log"], json!({"path": "x.txt"})), "ok", "x.txt");
    expect_code(&ws.read("x.log"), "ok", "x.log without --deny");
}

#[test]
fn allow_list_restricts_reads() {
    let ws = Ws::new();
    ws.file("README.md", "readme\n");
    ws.file("src/a.rs", "fn main() {}\n");
    ws.file("src/.env", "K=1\n");
    ws.link("../README.md", "src/readme_link.md");
    let allow = ["--allow", "src/"];
    let run = ws.req(&allow, json!({"path": "src/a.rs"}));
    expect_code(&run, "ok", "src/a.rs");
    assert!(run.output().contains("fn main"), "{}", run.stdout);
    for path in ["README.md", "src/../README.md", "src/readme_link.md", "./README.md"] {
        expect_denied(&ws.req(&allow, json!({"path": path})), &["not in the allow list"], path);
    }
    // The default deny list still applies inside the allowed tree.
    expect_denied(&ws.req(&allow, json!({"path": "src/.env"})), &[".env"], "src/.env");
}

#[test]
fn respect_ignore_denies_ignored_paths() {
    let ws = Ws::new();
    ws.file(".gitignore", "build/\n");
    ws.file("build/out.txt", "built\n");
    ws.file("src/main.rs", "fn main() {}\n");
    ws.link("build", "b");
    ws.link("build/out.txt", "out_link.txt");
    let flag = ["--respect-ignore"];
    for path in ["build/out.txt", "./build/out.txt", "src/../build/out.txt", "build", "b/out.txt", "out_link.txt"] {
        let run = ws.req(&flag, json!({"path": path}));
        expect_code(&run, "DENIED", path);
        assert!(run.error().contains("build/"), "{path}: the rule must be named: {}", run.error());
    }
    expect_code(&ws.req(&flag, json!({"path": "src/main.rs"})), "ok", "src/main.rs");
    expect_code(&ws.read("build/out.txt"), "ok", "build/out.txt without --respect-ignore");
}

#[test]
fn names_ignore_files_deny_are_never_suggested_and_are_marked_in_listings() {
    let ws = Ws::new();
    ws.file(".gitignore", "private_notes.txt\n");
    ws.file("private_notes.txt", "do not show\n");
    ws.file("src/.ignore", "sub/\n");
    ws.file("src/sub/b.md", "b\n");
    ws.file(".env", "KEY=1\n");
    ws.link(".env", "env_link");
    let flag = ["--respect-ignore"];
    for (asked, hidden) in [("private_note.txt", "private_notes.txt"), ("src/sub/b.m", "src/sub/b.md")] {
        let run = ws.req(&flag, json!({"path": asked}));
        expect_code(&run, "NOT_FOUND", asked);
        assert!(!run.stdout.contains(hidden), "{asked}: {hidden} was offered: {}", run.stdout);
    }
    // Without the flag nothing is denied, so the near miss is offered.
    assert!(ws.read("private_note.txt").stdout.contains("private_notes.txt"));
    let listing = ws.req(&flag, json!({"path": "."}));
    let output = listing.output();
    for line in ["private_notes.txt  (12 B)  (denied)", "env_link  (symlink)  (denied)", ".env  (6 B)  (denied)"] {
        assert!(output.lines().any(|l| l == line), "missing {line:?} in:\n{output}");
    }
    assert!(ws.req(&flag, json!({"path": "src"})).output().lines().any(|l| l == "sub/  (denied)"));
}

// ---------------------------------------------------------------------------------------------------------------
// Only regular files and directories.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn fifo_is_not_regular_at_once() {
    let ws = Ws::new();
    let status = std::process::Command::new("mkfifo").arg(ws.root.join("pipe")).status().expect("run mkfifo");
    assert!(status.success(), "mkfifo failed");
    ws.link("pipe", "pipe_link");
    for request in [
        json!({"path": "pipe"}),
        json!({"path": "pipe_link"}),
        json!({"path": "pipe", "start_byte": 0, "end_byte": 10}),
        json!({"path": "pipe", "offset": -1}),
    ] {
        let run = ws.req(&[], request.clone());
        expect_code(&run, "NOT_REGULAR", &request.to_string());
        assert!(run.elapsed < Duration::from_secs(5), "{request}: took {:?}", run.elapsed);
    }
}

#[test]
fn unix_socket_is_not_regular() {
    let ws = Ws::new();
    let _listener = std::os::unix::net::UnixListener::bind(ws.root.join("sock")).expect("bind socket");
    ws.link("sock", "sock_link");
    for path in ["sock", "sock_link"] {
        let run = ws.read(path);
        expect_code(&run, "NOT_REGULAR", path);
        assert!(run.elapsed < Duration::from_secs(5), "{path}: took {:?}", run.elapsed);
    }
}

#[test]
fn listing_a_directory_with_a_fifo_and_a_socket_does_not_block() {
    let ws = Ws::new();
    let status = std::process::Command::new("mkfifo").arg(ws.root.join("pipe")).status().expect("run mkfifo");
    assert!(status.success());
    let _listener = std::os::unix::net::UnixListener::bind(ws.root.join("sock")).expect("bind socket");
    let run = ws.read(".");
    expect_code(&run, "ok", ".");
    assert!(run.output().contains("pipe") && run.output().contains("sock"), "{}", run.stdout);
    assert!(run.elapsed < Duration::from_secs(5));
}

#[test]
fn devices_are_not_regular_with_root_slash() {
    let ws = Ws::new();
    for path in ["/dev/zero", "/dev/urandom", "/dev/null", "/dev/random"] {
        let run = exec(agent_root_slash(&ws.tmp), &json!({ "path": path }));
        expect_code(&run, "NOT_REGULAR", path);
        assert!(run.elapsed < Duration::from_secs(5), "{path}: took {:?}", run.elapsed);
    }
    // A block device, when the machine has one we can see.
    let block = fs::read_dir("/dev").into_iter().flatten().flatten().find(|e| {
        use std::os::unix::fs::FileTypeExt;
        e.file_type().is_ok_and(|t| t.is_block_device())
    });
    if let Some(entry) = block {
        let path = entry.path().display().to_string();
        let run = exec(agent_root_slash(&ws.tmp), &json!({ "path": path }));
        expect_code(&run, "NOT_REGULAR", &path);
    }
    // Inside a confined root a link to a device leads out.
    ws.link("/dev/zero", "zero");
    expect_outside(&ws, "zero");
}

/// Standard input is the pipe the request came through: a FIFO, so `NOT_REGULAR` (it has no path to locate).
#[test]
fn stdin_pipe_is_not_regular_with_root_slash() {
    let ws = Ws::new();
    for path in ["/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"] {
        let run = exec(agent_root_slash(&ws.tmp), &json!({ "path": path }));
        expect_code(&run, "NOT_REGULAR", path);
        assert!(run.elapsed < Duration::from_secs(5), "{path}: took {:?}", run.elapsed);
    }
}

#[test]
fn proc_self_status_is_read_with_root_slash() {
    let ws = Ws::new();
    let run = exec(agent_root_slash(&ws.tmp), &json!({"path": "/proc/self/status"}));
    expect_code(&run, "ok", "/proc/self/status");
    assert!(run.output().contains("Name:") && run.output().contains("agent-read"), "{}", run.stdout);
    assert_eq!(run.json["meta"]["size_bytes"], 0, "a /proc file reports size 0: {}", run.stdout);
    assert!(run.output().len() <= CAP);
}

/// The child runs with the marker in its environment: reading its own environment would leak it.
fn exec_with_env_marker(cwd: &Path, request: &Value) -> Run {
    let mut cmd = agent_root_slash(cwd);
    cmd.env("AGENT_READ_ADVERSARIAL", format!("{}-ENV", marker()));
    exec(cmd, request)
}

#[test]
fn proc_self_environ_is_denied_with_root_slash() {
    let ws = Ws::new();
    for request in [
        json!({"path": "/proc/self/environ"}),
        json!({"path": "/proc/self/environ", "encoding": "windows-1252"}),
        json!({"path": "/proc/self/environ", "start_byte": 0, "end_byte": 4096}),
        json!({"path": "/proc/thread-self/environ", "encoding": "windows-1252"}),
        json!({"path": "/proc/self/root/proc/self/environ", "encoding": "windows-1252"}),
        json!({"path": "/proc/self/mem"}),
    ] {
        let run = exec_with_env_marker(&ws.tmp, &request);
        expect_code(&run, "DENIED", &request.to_string());
    }
}

/// `/proc/thread-self/environ`'s real path is `/proc/<pid>/task/<tid>/environ`, which `/proc/*/environ` does not
/// match; reached by a spelling the asked-path check does not catch, it must still be denied.
#[test]
fn proc_environ_aliases_are_denied_with_root_slash() {
    let ws = Ws::new();
    symlink("/proc/thread-self", ws.tmp.join("ts")).expect("symlink");
    symlink("/proc/self/task", ws.tmp.join("tasks")).expect("symlink");
    let via_link = format!("{}/ts/environ", ws.tmp.display());
    for request in [
        json!({"path": "/proc/self/root/proc/thread-self/environ", "encoding": "windows-1252"}),
        json!({"path": "/proc/self/root/proc/thread-self/environ"}),
        json!({"path": via_link, "encoding": "windows-1252"}),
        json!({"path": "/proc/self/root/proc/thread-self/mem"}),
    ] {
        let run = exec_with_env_marker(&ws.tmp, &request);
        expect_code(&run, "DENIED", &request.to_string());
    }
    // A long-running face (MCP, library) keeps its pid, so `/proc/<pid>/task/<pid>/environ` is a plain path a model
    // can learn from `/proc/self/status`. Here `sh` execs the binary, which keeps the shell's pid `$$`.
    let mut cmd = Command::new("sh");
    cmd.current_dir(&ws.tmp)
        .env("AGENT_READ_ADVERSARIAL", format!("{}-ENV", marker()))
        .arg("-c")
        .arg("exec \"$0\" --root / <<EOF\n{\"path\": \"/proc/$$/task/$$/environ\", \"encoding\": \"windows-1252\"}\nEOF\n")
        .arg(env!("CARGO_BIN_EXE_agent-read"));
    let run = exec_raw(cmd, None, "/proc/<own pid>/task/<own pid>/environ");
    expect_code(&run, "DENIED", "/proc/<own pid>/task/<own pid>/environ");
}

// ---------------------------------------------------------------------------------------------------------------
// Bounded size, memory and time.
// ---------------------------------------------------------------------------------------------------------------

/// The binary with its address space limited to `bytes`: a read that loads a large file fails to allocate.
fn agent_with_memory_limit(ws: &Ws, bytes: u64) -> Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"));
    cmd.current_dir(&ws.tmp).arg("--root").arg(&ws.root);
    crate::common::with_memory_limit(cmd, bytes)
}

#[test]
fn sparse_10_gib_file_is_binary_quickly_in_small_memory() {
    let ws = Ws::new();
    let file = fs::File::create(ws.root.join("sparse.bin")).expect("create sparse");
    file.set_len(10 << 30).expect("set_len 10 GiB");
    drop(file);
    for request in [
        json!({"path": "sparse.bin"}),
        json!({"path": "sparse.bin", "offset": -1}),
        json!({"path": "sparse.bin", "start_byte": (10u64 << 30) - 100}),
        json!({"path": "sparse.bin", "start_byte": 5u64 << 30, "end_byte": 6u64 << 30}),
    ] {
        let run = exec(agent_with_memory_limit(&ws, 1 << 30), &request);
        expect_code(&run, "BINARY", &request.to_string());
        assert!(run.elapsed < Duration::from_secs(5), "{request}: took {:?}", run.elapsed);
    }
}

#[test]
fn text_head_over_a_10_gib_hole_respects_the_time_budget() {
    let ws = Ws::new();
    let path = ws.file("holey.log", "a text line\n".repeat(10_000));
    fs::OpenOptions::new().write(true).open(&path).expect("open").set_len(10 << 30).expect("set_len");
    let start = Instant::now();
    let mut cmd = agent_with_memory_limit(&ws, 1 << 30);
    cmd.args(["--timeout-ms", "1000"]);
    let run = exec(cmd, &json!({"path": "holey.log", "limit": 5}));
    assert!(matches!(run.code(), "ok" | "TIMEOUT" | "BINARY"), "{}", run.stdout);
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}: the 1 s budget was not kept", start.elapsed());
    assert!(run.output().len() <= CAP);
}

#[test]
fn file_growing_while_read_gives_clean_bounded_results() {
    let ws = Ws::new();
    let path = ws.file("growing.log", "first line\n");
    let stop = AtomicBool::new(false);
    let appended = AtomicUsize::new(0);
    let codes: Vec<String> = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut file = fs::OpenOptions::new().append(true).open(&path).expect("open for append");
            let line = format!("{}\n", "grow ".repeat(40));
            let chunk = line.repeat(500);
            while !stop.load(Ordering::Relaxed) {
                if appended.load(Ordering::Relaxed) < 64 << 20 {
                    file.write_all(chunk.as_bytes()).expect("append");
                    appended.fetch_add(chunk.len(), Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let requests = [
            json!({"path": "growing.log"}),
            json!({"path": "growing.log", "offset": -5}),
            json!({"path": "growing.log", "offset": 100, "limit": 10000}),
            json!({"path": "growing.log", "start_byte": 0}),
            json!({"path": "growing.log", "start_byte": 1000, "end_byte": 200000}),
        ];
        let mut codes = Vec::new();
        for i in 0..20 {
            let request = &requests[i % requests.len()];
            let run = ws.req(&[], request.clone());
            assert!(
                matches!(run.code(), "ok" | "INVALID_RANGE" | "TIMEOUT" | "IO_ERROR"),
                "{request}: unexpected result {}",
                run.stdout
            );
            assert!(run.output().len() <= CAP, "{request}: output {} bytes > cap", run.output().len());
            if run.ok() {
                assert!(run.output().contains("grow") || run.output().contains("first line"), "{}", run.stdout);
            }
            codes.push(run.code().to_string());
        }
        stop.store(true, Ordering::Relaxed);
        codes
    });
    println!("growing file: {} bytes appended; results {codes:?}", appended.load(Ordering::Relaxed));
}

#[test]
fn timeout_on_a_200_mb_file_is_reported_quickly() {
    let ws = Ws::new();
    let path = ws.root.join("big.txt");
    let mut file = std::io::BufWriter::new(fs::File::create(&path).expect("create big"));
    let line = format!("{}\n", "0123456789".repeat(10));
    let block = line.repeat(10_000); // ~1 MB
    for _ in 0..200 {
        file.write_all(block.as_bytes()).expect("write big");
    }
    file.flush().expect("flush");
    drop(file);
    let run = ws.req(&["--timeout-ms", "1"], json!({"path": "big.txt", "offset": 5}));
    expect_code(&run, "TIMEOUT", "200 MB with --timeout-ms 1");
    assert!(run.elapsed < Duration::from_secs(5), "took {:?}", run.elapsed);
    assert!(run.output().len() <= CAP);
}

// ---------------------------------------------------------------------------------------------------------------
// Audit log.
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn audit_log_records_reads_but_never_content() {
    let ws = Ws::new();
    ws.outward_links();
    let content_marker = format!("AUDITCONTENT-{}", &marker()[10..]);
    ws.file("notes.md", format!("{content_marker}\nsecond line\n"));
    ws.file(".env", format!("{content_marker}\n"));
    let audit = ws.tmp.join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let requests = [
        (json!({"path": "notes.md"}), "ok"),
        (json!({"path": "missing.md"}), "NOT_FOUND"),
        (json!({"path": ".env"}), "DENIED"),
        (json!({"path": "../outside/plans.txt"}), "OUTSIDE_ROOT"),
        (json!({"path": "l1"}), "OUTSIDE_ROOT"),
        (json!({"path": "d1/plans.txt"}), "OUTSIDE_ROOT"),
    ];
    let mut runs = Vec::new();
    for (request, code) in &requests {
        let run = ws.req(&["--audit-log", &audit_arg], request.clone());
        expect_code(&run, code, &request.to_string());
        runs.push(run);
    }
    assert!(runs[0].output().contains(&content_marker), "the read itself works: {}", runs[0].stdout);
    let text = fs::read_to_string(&audit).expect("audit log written");
    assert!(!text.contains(&content_marker), "audit log holds file content:\n{text}");
    assert!(!text.contains(marker()), "audit log holds the secret:\n{text}");
    assert!(!text.contains("second line"), "audit log holds file content:\n{text}");
    let lines: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad audit line {l}: {e}"))).collect();
    assert_eq!(lines.len(), requests.len(), "one line per read:\n{text}");
    for ((line, (request, code)), run) in lines.iter().zip(&requests).zip(&runs) {
        assert!(line["time"].as_str().is_some_and(|t| !t.is_empty()), "time: {line}");
        assert_eq!(line["path"], request["path"], "path: {line}");
        assert_eq!(line["outcome"], *code, "outcome: {line}");
        assert_eq!(line["bytes"].as_u64(), Some(run.output().len() as u64), "bytes: {line}");
        assert!(line.get("root").is_some(), "root: {line}");
    }
    assert_eq!(lines[0]["root"], json!(ws.root.display().to_string()));
}

// ---------------------------------------------------------------------------------------------------------------
// Races: the path changes between checks and the open.
// ---------------------------------------------------------------------------------------------------------------

/// Runs `total` reads (cycling through `requests`, with `args`) from `workers` threads while `swap` runs in a loop;
/// `valid` checks every ok result. Returns the counts per outcome (`harmless` for ok).
fn race(
    ws: &Ws,
    args: &[&str],
    requests: &[Value],
    total: usize,
    workers: usize,
    swap: impl Fn() + Sync,
    valid: impl Fn(&Run) -> bool + Sync,
) -> BTreeMap<String, usize> {
    let stop = AtomicBool::new(false);
    let swaps = AtomicUsize::new(0);
    let counts = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                swap();
                swaps.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
        });
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let valid = &valid;
                scope.spawn(move || {
                    let mut counts = BTreeMap::<String, usize>::new();
                    for i in (w..total).step_by(workers) {
                        let request = &requests[i % requests.len()];
                        let run = ws.req(args, request.clone());
                        let key = if run.ok() {
                            assert!(
                                valid(&run),
                                "{request}: an ok read must show only the inside file: {}",
                                run.stdout
                            );
                            "harmless".to_string()
                        } else {
                            run.code().to_string()
                        };
                        *counts.entry(key).or_default() += 1;
                    }
                    counts
                })
            })
            .collect();
        let mut counts = BTreeMap::<String, usize>::new();
        let mut panic = None;
        for handle in handles {
            match handle.join() {
                Ok(worker) => {
                    for (k, v) in worker {
                        *counts.entry(k).or_default() += v;
                    }
                }
                Err(payload) => panic = Some(payload),
            }
        }
        stop.store(true, Ordering::Relaxed);
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
        counts
    });
    println!("race: {total} reads, {} swaps, results {counts:?}", swaps.load(Ordering::Relaxed));
    counts
}

fn shows_harmless(run: &Run) -> bool {
    run.output().contains(HARMLESS)
}

#[test]
fn race_swapping_a_file_and_an_outward_symlink_never_leaks() {
    let ws = Ws::new();
    let staging = ws.tmp.join("staging");
    fs::create_dir(&staging).expect("staging");
    let target = ws.root.join("target");
    fs::write(&target, format!("{HARMLESS}\n")).expect("write target");
    // Both states answer as expected before the race.
    expect_code(&ws.read_strict("target"), "ok", "target as a file");
    let (staged_file, staged_link) = (staging.join("file"), staging.join("link"));
    symlink(ws.secret(), &staged_link).expect("symlink");
    fs::rename(&staged_link, &target).expect("rename link");
    expect_code(&ws.read_strict("target"), "OUTSIDE_ROOT", "target as a link");

    let start = Instant::now();
    let runs_before = RUNS.load(Ordering::Relaxed);
    let swap = || {
        fs::write(&staged_file, format!("{HARMLESS}\n")).expect("stage file");
        fs::rename(&staged_file, &target).expect("swap in file");
        let _ = fs::remove_file(&staged_link);
        symlink(ws.secret(), &staged_link).expect("stage link");
        fs::rename(&staged_link, &target).expect("swap in link");
    };
    let counts = race(&ws, &["--no-default-deny"], &[json!({"path": "target"})], 2000, 3, swap, shows_harmless);
    let harmless = counts.get("harmless").copied().unwrap_or(0);
    let outside = counts.get("OUTSIDE_ROOT").copied().unwrap_or(0);
    let other: usize = counts.iter().filter(|(k, _)| *k != "harmless" && *k != "OUTSIDE_ROOT").map(|(_, v)| v).sum();
    println!(
        "RACE file<->symlink: {harmless} harmless, {outside} OUTSIDE_ROOT, {other} other ({counts:?}); {} processes in {:?}",
        RUNS.load(Ordering::Relaxed) - runs_before,
        start.elapsed()
    );
    assert_eq!(harmless + outside + other, 2000);
    assert!(harmless > 0, "no read saw the harmless file: the race proves nothing ({counts:?})");
    assert!(outside > 0, "no read saw the symlink: the race proves nothing ({counts:?})");
}

#[test]
fn race_swapping_a_directory_link_inside_and_out_never_leaks() {
    let ws = Ws::new();
    let staging = ws.tmp.join("staging");
    fs::create_dir(&staging).expect("staging");
    ws.file("inner/plans.txt", format!("{HARMLESS}\n"));
    ws.link("inner", "dir");
    let dir = ws.root.join("dir");
    let targets: Vec<PathBuf> =
        vec![PathBuf::from("inner"), ws.outside.clone(), ws.root.join("inner"), PathBuf::from("../outside")];
    let next = AtomicUsize::new(0);
    let swap = || {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let staged = staging.join("dirlink");
        let _ = fs::remove_file(&staged);
        symlink(&targets[i % targets.len()], &staged).expect("stage link");
        fs::rename(&staged, &dir).expect("swap link");
    };
    // Reads through the link, and listings of it: an ok listing may only show the inside directory.
    let requests = [json!({"path": "dir/plans.txt"}), json!({"path": "dir"})];
    let valid = |run: &Run| match run.json["kind"].as_str() {
        Some("directory") => run.output().starts_with("plans.txt  (") && !run.output().contains("secret"),
        _ => shows_harmless(run),
    };
    let counts = race(&ws, &["--no-default-deny"], &requests, 600, 2, swap, valid);
    assert!(counts.get("harmless").copied().unwrap_or(0) > 0, "{counts:?}");
}

/// A glob walks a tree while one of its folders is exchanged, again and again, with a link to `outside` (whose names
/// and contents carry the marker): every answer holds only files of the tree, and nothing from outside is named or
/// shown. The walk lists each folder through the root's confined handle and never goes through a link.
#[test]
fn race_swapping_a_walked_folder_and_an_outward_link_never_leaks() {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    let ws = Ws::new();
    ws.file("walk/a/plans.txt", format!("{HARMLESS}\n"));
    ws.file("walk/a/deeper/more.txt", format!("{HARMLESS}\n"));
    ws.file("walk/z.txt", format!("{HARMLESS}\n"));
    let staging = ws.tmp.join("staging");
    fs::create_dir(&staging).expect("staging");
    symlink(&ws.outside, staging.join("a")).expect("stage the link");
    let (folder, link) = (ws.root.join("walk/a"), staging.join("a"));
    let stop = AtomicBool::new(false);
    let (mut whole, mut without) = (0, 0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &folder, CWD, &link, RenameFlags::EXCHANGE).expect("exchange");
                std::thread::yield_now();
            }
        });
        for _ in 0..200 {
            let run = secrets::many(&ws, &["--no-default-deny"], &["walk/**/*.txt"]);
            let files: Vec<&str> =
                run.json["files"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
            for file in &files {
                assert!(
                    ["walk/a/deeper/more.txt", "walk/a/plans.txt", "walk/z.txt"].contains(file),
                    "{file} is no file of the tree: {}",
                    run.stdout
                );
            }
            if files.len() == 3 { whole += 1 } else { without += 1 }
        }
        stop.store(true, Ordering::Relaxed);
    });
    println!("RACE walked folder<->link: {whole} whole walks, {without} without the folder");
    assert!(whole > 0 && without > 0, "the race proves nothing: {whole} whole, {without} without");
}

/// The same race against the policy: `target` swaps between a harmless file and a link to `.env` (inside the root,
/// denied). A read is the harmless file or `DENIED`, never the `.env` content.
#[test]
fn race_swapping_a_file_and_a_link_to_a_denied_file_never_leaks() {
    let ws = Ws::new();
    let staging = ws.tmp.join("staging");
    fs::create_dir(&staging).expect("staging");
    ws.file(".env", format!("TOKEN={}\n", marker()));
    ws.file("target", format!("{HARMLESS}\n"));
    let target = ws.root.join("target");
    let (staged_file, staged_link) = (staging.join("file"), staging.join("link"));
    let flip = AtomicBool::new(false);
    let swap = || {
        let _ = fs::remove_file(&staged_link);
        // Alternate relative and absolute link targets: they take different paths through the resolver.
        let absolute = flip.fetch_xor(true, Ordering::Relaxed);
        symlink(if absolute { ws.root.join(".env") } else { PathBuf::from(".env") }, &staged_link).expect("link");
        fs::rename(&staged_link, &target).expect("swap in link");
        fs::write(&staged_file, format!("{HARMLESS}\n")).expect("stage file");
        fs::rename(&staged_file, &target).expect("swap in file");
    };
    let counts = race(&ws, &[], &[json!({"path": "target"})], 600, 2, swap, shows_harmless);
    assert!(counts.get("harmless").copied().unwrap_or(0) > 0, "{counts:?}");
    assert!(counts.get("DENIED").copied().unwrap_or(0) > 0, "{counts:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// Generated paths.
// ---------------------------------------------------------------------------------------------------------------

/// Random paths built from traversal pieces, link names and outside names never reveal the secret, and whatever they
/// read lies inside the root.
#[test]
fn generated_traversal_paths_never_reveal_the_secret() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let ws = Ws::new();
    ws.outward_links();
    ws.link("/proc/self/cwd", "m2");
    ws.link(format!("/proc/self/root{}", ws.outside.display()), "m1");
    ws.file("in.txt", "inside\n");
    ws.dir("a/b");
    let pieces =
        vec!["..", ".", "", "a", "b", "d1", "d2", "l1", "l2", "m1", "m2", "outside", "work", "secret", "plans.txt"];
    let strategy = (proptest::collection::vec(proptest::sample::select(pieces), 1..8), any::<u8>());
    let mut runner = TestRunner::new(Config { cases: 64, failure_persistence: None, ..Config::default() });
    let tmp = ws.tmp.display().to_string();
    let root = ws.root.display().to_string();
    runner
        .run(&strategy, |(parts, prefix)| {
            let joined = parts.join("/");
            let path = match prefix % 3 {
                0 => joined,
                1 => format!("{root}/{joined}"),
                _ => format!("{tmp}/{joined}"),
            };
            let run = ws.read_strict(&path);
            if run.ok() {
                let shown = run.json["meta"]["path"].as_str().unwrap_or("");
                prop_assert!(!shown.starts_with(&tmp) || shown.starts_with(&root), "{path}: read {shown}");
            }
            Ok(())
        })
        .unwrap();
}

/// A `portable-resolver` build takes the road macOS and Windows take, so every case above ran on it: the binary, once
/// it has opened its roots, runs under the seccomp filter that refuses it `openat2` (`Seccomp: 2` in its status).
#[cfg(feature = "portable-resolver")]
#[test]
fn a_portable_resolver_build_runs_under_the_filter_that_refuses_openat2() {
    let layout = Ws::new();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_agent-read"))
        .args(["mcp", "--root"])
        .arg(&layout.root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("server starts");
    let status = format!("/proc/{}/status", server.id());
    let deadline = Instant::now() + TIMEOUT;
    let mut mode = String::new();
    while Instant::now() < deadline {
        let text = fs::read_to_string(&status).unwrap_or_default();
        mode = text.lines().find(|line| line.starts_with("Seccomp:")).unwrap_or_default().to_string();
        if mode.ends_with('2') {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill().expect("server ends");
    server.wait().expect("server reaped");
    assert_eq!(mode.split_whitespace().last(), Some("2"), "no seccomp filter on the server: {mode:?}");
}
