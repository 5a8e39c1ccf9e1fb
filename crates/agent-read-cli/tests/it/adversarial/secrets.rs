//! Secrets stay denied wherever they sit, and no glob takes the process down: deny globs with a `/` at any depth
//! (and under `--root /`), editor and backup copies of secret files, roots given in either order, ignore files that
//! `globset` cannot compile or that sit in an ignored directory, globs nested past any reason, and ten thousand deny
//! globs. Every run goes through [`exec`], so the marker (every secret file holds it) never reaches any output.

use super::*;

/// Runs `agent-read many --json ENTRY…` confined to the root with `extra` flags: the JSON result (checked by
/// [`exec_raw`] for the marker, exit status 0 and one JSON result).
pub(super) fn many(ws: &Ws, extra: &[&str], entries: &[&str]) -> Run {
    let mut args: Vec<OsString> = vec!["many".into(), "--json".into(), "--root".into(), ws.root.clone().into()];
    args.extend(extra.iter().chain(entries).map(OsString::from));
    exec_raw(agent(&ws.tmp, args), None, &format!("many {entries:?}"))
}

/// Runs the binary with `args` and no request: its exit status and standard error (checked for the marker).
fn usage(ws: &Ws, args: &[OsString]) -> (Option<i32>, String) {
    let mut cmd = agent(&ws.tmp, args.to_vec());
    cmd.timeout(TIMEOUT);
    let out = cmd.output().expect("spawn agent-read");
    assert_no_marker(&out.stdout, "stdout", "a usage run");
    assert_no_marker(&out.stderr, "stderr", "a usage run");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn deny_globs_with_a_slash_match_at_any_depth_and_under_root_slash() {
    let ws = Ws::new();
    let secrets = [
        ("proj/infra/.kube/config", ".kube/config"),
        ("home/u/.docker/config.json", ".docker/config.json"),
        ("users/me/.config/gh/hosts.yml", ".config/gh/hosts.yml"),
        ("a/b/.config/gcloud/access_tokens.db", ".config/gcloud/"),
    ];
    for (path, rule) in secrets {
        ws.file(path, format!("{} in {path}\n", marker()));
        expect_denied(&ws.read(path), &[rule], path);
        let absolute = ws.root.join(path).display().to_string();
        let unrestricted = exec(agent_root_slash(&ws.tmp), &json!({ "path": absolute }));
        expect_denied(&unrestricted, &[rule], &format!("{absolute} with --root /"));
    }
    // Globs naming their folders find them, and withhold them unnamed.
    let found =
        many(&ws, &[], &["proj/infra/.kube/*", "home/u/.docker/*", "users/me/.config/gh/*", "a/b/.config/gcloud/*"]);
    assert_eq!(found.json["files"], json!([]), "{}", found.stdout);
    assert_eq!(found.json["meta"]["withheld"], json!(4), "{}", found.stdout);
}

#[test]
fn editor_and_backup_copies_of_secret_files_are_denied() {
    let ws = Ws::new();
    let copies = [
        (".env~", ".env"),
        ("#.env#", ".env"),
        ("server.key~", "*.key"),
        (".htpasswd~", ".htpasswd"),
        ("tls.pem.bak", "*.pem"),
        (".env.swp", ".env"),
        (".env.swo", ".env"),
        (".server.key.swp", "*.key"),
        ("id_ed25519.orig", "id_ed25519*"),
        (".netrc.old", ".netrc"),
        (".pgpass.save", ".pgpass"),
        ("deploy/#server.key#", "*.key"),
        ("home/.ssh.bak/known_hosts", ".ssh/"),
        (".vault-token", ".vault-token"),
        (".dockercfg", ".dockercfg"),
        (".s3cfg", ".s3cfg"),
        ("infra/terraform.tfstate.backup", "*.tfstate"),
        ("home/.bash_history", ".*_history"),
    ];
    for (path, rule) in copies {
        ws.file(path, format!("{} in {path}\n", marker()));
        expect_denied(&ws.read(path), &[rule], path);
    }
}

/// A copy whose name is not Unicode is a copy all the same: read through a link to it, or matched by a glob.
#[test]
#[cfg(unix)]
fn copies_of_secret_files_with_names_that_are_not_unicode_are_denied() {
    use std::os::unix::ffi::OsStrExt as _;
    let ws = Ws::new();
    let copy = ws.root.join(std::ffi::OsStr::from_bytes(b"k\xff.pem.bak"));
    fs::write(&copy, format!("{}\n", marker())).expect("write the copy");
    ws.link(&copy, "notes.txt");
    expect_denied(&ws.read("notes.txt"), &["*.pem"], "a link to k\\xff.pem.bak");
    let found = many(&ws, &[], &["*"]);
    assert_eq!(found.json["files"], json!([]), "{}", found.stdout);
}

#[test]
fn ordinary_source_files_stay_readable() {
    let ws = Ws::new();
    let ordinary = [
        "src/keyboard.rs",
        "tokenizer.py",
        "monkey.py",
        "src/history.rs",
        "main.rs.bak",
        "notes.md~",
        "docker/config.json",
        "kube/config",
        "src/key.go",
        "envoy.yaml",
        ".github/workflows/ci.yml",
        "docs/env.md",
    ];
    for path in ordinary {
        ws.file(path, "ordinary\n");
        let run = ws.read(path);
        expect_code(&run, "ok", path);
        assert!(run.output().contains("ordinary"), "{path}: {}", run.stdout);
    }
}

#[test]
fn a_denial_does_not_depend_on_the_order_of_overlapping_roots() {
    let ws = Ws::new();
    ws.file("ov/secrets/token.txt", format!("{}\n", marker()));
    ws.file("ov/.ssh/config", format!("{}\n", marker()));
    let (ov, secrets, ssh) = (ws.root.join("ov"), ws.root.join("ov/secrets"), ws.root.join("ov/.ssh"));
    for (inner, file, rule) in [(&secrets, "token.txt", "secrets/"), (&ssh, "config", ".ssh/")] {
        let absolute = inner.join(file).display().to_string();
        for first_inner in [true, false] {
            let order = if first_inner { [inner, &ov] } else { [&ov, inner] };
            let args = vec!["--root".into(), order[0].into(), "--root".into(), order[1].into()];
            let relative =
                if first_inner { file.to_string() } else { format!("{}/{file}", inner.file_name().unwrap().display()) };
            for path in [&absolute, &relative] {
                let run = exec(agent(&ws.tmp, args.clone()), &json!({ "path": path }));
                expect_denied(&run, &[rule], &format!("{path} with roots {order:?}"));
            }
        }
    }
}

#[test]
fn an_ignore_file_line_globset_cannot_compile_keeps_every_other_rule() {
    let ws = Ws::new();
    let nested = format!("{}a{}", "{".repeat(250), "}".repeat(250));
    ws.file(".gitignore", format!("{nested}\na{{b\n*.log\n"));
    ws.file("x.log", format!("{}\n", marker()));
    ws.file("a{b", format!("{}\n", marker()));
    ws.file("kept.txt", "kept\n");
    let flag = ["--respect-ignore"];
    expect_denied(&ws.req(&flag, json!({"path": "x.log"})), &[".gitignore: *.log"], "x.log");
    // Git has no `{…}` alternation: `a{b` names the file `a{b`.
    expect_denied(&ws.req(&flag, json!({"path": "a{b"})), &[".gitignore: a{b"], "a{b");
    expect_code(&ws.req(&flag, json!({"path": "kept.txt"})), "ok", "kept.txt");
    // The glob walk reads the ignore file the same way, with and without the flag.
    for extra in [&[][..], &flag[..]] {
        let found = many(&ws, extra, &["*"]);
        let shown: Vec<&str> =
            found.json["files"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
        assert_eq!(shown, ["kept.txt"], "{extra:?}: {}", found.stdout);
    }
}

#[test]
fn an_ignored_directory_cannot_be_brought_back_by_a_deeper_ignore_file_or_a_later_line() {
    let ws = Ws::new();
    ws.file(".gitignore", "build/\n!build/kept_by_line.txt\n");
    ws.file("build/.gitignore", "!kept_by_file.txt\n");
    ws.file("build/kept_by_file.txt", format!("{}\n", marker()));
    ws.file("build/kept_by_line.txt", format!("{}\n", marker()));
    let flag = ["--respect-ignore"];
    for path in ["build/kept_by_file.txt", "build/kept_by_line.txt", "build"] {
        expect_denied(&ws.req(&flag, json!({ "path": path })), &[".gitignore: build/"], path);
    }
    for extra in [&[][..], &flag[..]] {
        let found = many(&ws, extra, &["build/*.txt", "**/*.txt"]);
        assert_eq!(found.json["files"], json!([]), "{extra:?}: {}", found.stdout);
    }
}

#[test]
fn an_ignore_file_that_cannot_be_used_denies_everything_beneath_it() {
    let ws = Ws::new();
    ws.file("big/.gitignore", format!("# padding\n{}\n*.log\n", "#".repeat(2 << 20)));
    ws.file("big/notes.txt", format!("{}\n", marker()));
    ws.dir("linked");
    ws.link("../../outside/plans.txt", "linked/.gitignore");
    ws.file("linked/notes.txt", format!("{}\n", marker()));
    ws.file("fine/notes.txt", "fine\n");
    let flag = ["--respect-ignore"];
    for (path, why) in [("big/notes.txt", "larger than 1024 KiB"), ("linked/notes.txt", "leads outside the root")] {
        let run = ws.req(&flag, json!({ "path": path }));
        expect_code(&run, "DENIED", path);
        assert!(run.error().contains(why) && run.error().contains("cannot be known"), "{path}: {}", run.error());
    }
    expect_code(&ws.req(&flag, json!({"path": "fine/notes.txt"})), "ok", "fine/notes.txt");
    let found = many(&ws, &[], &["**/notes.txt"]);
    let shown: Vec<&str> = found.json["files"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(shown, ["fine/notes.txt"], "{}", found.stdout);
}

#[test]
fn a_glob_nested_past_the_bounds_is_an_instructive_error_not_a_crash() {
    let ws = Ws::new();
    ws.file("a.txt", "a\n");
    let nested = format!("{}a{}", "{".repeat(250), "}".repeat(250));
    let found = many(&ws, &[], &[&nested]);
    expect_code(&found, "INVALID_PARAM", "a nested glob");
    assert!(found.error().contains("nests `{…}` 250 deep; at most 8 levels are accepted"), "{}", found.stdout);
    let wide = format!("*.{{{}}}", vec!["x"; 400].join(","));
    let found = many(&ws, &[], &[&wide]);
    assert!(found.error().contains("400 alternatives") && found.error().contains("at most 256"), "{}", found.stdout);
    // The same bounds hold for the policy's own globs, from the command line and from a configuration file.
    let config = ws.tmp.join("nested.toml");
    fs::write(&config, format!("[policy]\ndeny = [\"{nested}\"]\n")).unwrap();
    for args in [
        vec!["--root".into(), ws.root.clone().into(), "--deny".into(), nested.clone().into(), "a.txt".into()],
        vec!["--root".into(), ws.root.clone().into(), "--allow".into(), nested.clone().into(), "a.txt".into()],
        vec!["--config".into(), config.into(), "--root".into(), ws.root.clone().into(), "a.txt".into()],
    ] {
        let (code, stderr) = usage(&ws, &args);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("glob `{{{") && stderr.contains("at most 8 levels are accepted"), "{stderr}");
    }
}

#[test]
fn ten_thousand_deny_globs_are_accepted() {
    let ws = Ws::new();
    let globs: Vec<String> = (0..10_000)
        .map(|i| match i % 4 {
            0 => format!("\"name{i}.txt\""),
            1 => format!("\"*.ext{i}\""),
            2 => format!("\"*part{i}*\""),
            _ => format!("\"dir{i}/*.d\""),
        })
        .collect();
    let config = ws.tmp.join("many.toml");
    fs::write(&config, format!("[policy]\ndeny = [{}]\n", globs.join(", "))).unwrap();
    for path in ["sub/x_part9998_y.txt", "q/dir9999/f.d", "a.ext9997"] {
        ws.file(path, format!("{}\n", marker()));
    }
    ws.file("ordinary.txt", "ordinary\n");
    // One process reads them all (compiling ten thousand globs in a debug build takes seconds).
    let config = config.display().to_string();
    let entries = ["sub/x_part9998_y.txt", "q/dir9999/f.d", "a.ext9997", "ordinary.txt"];
    let run = many(&ws, &["--config", &config], &entries);
    expect_code(&run, "ok", "ten thousand deny globs");
    let files = run.json["files"].as_array().unwrap();
    for (file, rule) in files.iter().zip(["*part9998*", "dir9999/*.d", "*.ext9997"]) {
        assert_eq!(file["error_code"], "DENIED", "{file}");
        assert!(file["error"].as_str().unwrap().contains(&format!("rule `{rule}`")), "{file}");
    }
    assert_eq!((files[3]["ok"].as_bool(), files[3]["path"].as_str()), (Some(true), Some("ordinary.txt")));
    assert!(run.output().contains("==> ordinary.txt <==\n1: ordinary\n"), "{}", run.stdout);
}
