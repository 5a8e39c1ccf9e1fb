//! Readers narrowed beneath a reader's roots: how a client's own roots (MCP Roots) are taken in.
//!
//! The reader's roots are the ceiling: a narrowed reader reads only beneath directories inside them, each opened
//! through the confined handle of the root it lies in (see [`crate::resolve::Narrowing`]), and judges every path from
//! the configured roots as before, so a narrowed root such as `ws/secrets` never makes the `secrets/` rule stop
//! matching. A directory the read policy refuses is refused as a root too. Limits, policy, audit log and caches (line
//! indexes, directory listings) are shared with the reader it was narrowed from.

use super::Reader;
use crate::audit::RootsChange;
use crate::policy::ignore::IgnoreFiles;
use crate::resolve::{Asked, Judged};
use std::path::{Path, PathBuf};

impl Reader {
    /// A reader beneath the directories `asked` (absolute paths), each inside this reader's roots, and what became of
    /// each; `None` when none could be taken. With `beyond`, a directory outside every root is taken as a root of
    /// its own instead of refused (an operator's explicit choice; see SECURITY.md).
    pub fn narrowed(&self, asked: &[PathBuf], beyond: bool) -> (Option<Reader>, Vec<Asked>) {
        let refuse = |judged: &Judged| self.refuses_as_root(judged);
        let narrowing = self.roots.narrowed(asked, beyond, &refuse);
        let reader = narrowing.roots.map(|roots| Reader {
            roots,
            limits: self.limits.clone(),
            policy: self.policy.clone(),
            audit: self.audit.clone(),
            media: self.media.clone(),
            indexes: self.indexes.clone(),
            listings: self.listings.clone(),
        });
        (reader, narrowing.asked)
    }

    /// The real paths of the roots reads are confined to, in order (relative paths start at the first).
    pub fn root_paths(&self) -> Vec<&Path> {
        self.roots.real_paths().collect()
    }

    /// Appends a change of roots to the audit log, when there is one.
    pub fn audit_roots_change(&self, change: &RootsChange<'_>) {
        if let Some(log) = &self.audit {
            log.record_roots(change);
        }
    }

    /// Why the policy refuses a directory as a root (deny rules, and ignore files when respected), if it does.
    fn refuses_as_root(&self, judged: &Judged) -> Option<String> {
        let denial = self.policy.check_at(&judged.relative, &judged.absolute, true).err().or_else(|| {
            let read = |path: &Path| self.roots.read_ignore_file(judged.anchor, path);
            let respected = self.policy.respects_ignore_files();
            respected.then(|| IgnoreFiles::new(read).ignored(&judged.relative, true)).flatten()
        })?;
        Some(format!("denied by the read policy (rule `{}`)", denial.rule))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, ReadOptions, ReadRequest, Reader};
    use std::path::PathBuf;

    #[test]
    fn a_narrowed_reader_reads_beneath_its_roots_only_and_keeps_every_rule() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for (path, text) in [("sub/a.txt", "a\n"), ("sub/x.log", "log\n"), ("top.txt", "t\n"), ("secrets/k", "k\n")] {
            std::fs::create_dir_all(ws.join(path).parent().unwrap()).unwrap();
            std::fs::write(ws.join(path), text).unwrap();
        }
        std::fs::write(ws.join(".gitignore"), "*.log\n").unwrap();
        let mut config = Config::with_roots([&ws]);
        config.policy.respect_ignore = true;
        let reader = Reader::new(config).unwrap();
        let asked = [ws.join("sub"), ws.join("secrets"), PathBuf::from("/")];
        let (narrowed, outcomes) = reader.narrowed(&asked, false);
        let narrowed = narrowed.unwrap();
        assert_eq!(outcomes[0].outcome, Ok(ws.join("sub")));
        assert_eq!(outcomes[1].outcome, Err("denied by the read policy (rule `secrets/`)".to_string()));
        assert_eq!(outcomes[2].outcome, Err("outside the configured roots".to_string()));
        assert_eq!(
            narrowed.read(&ReadRequest::new("a.txt"), &ReadOptions::default()).output(),
            "1: a\n(lines 1-1 of 1 · 2 B · end of file)"
        );
        let ignored = narrowed.read(&ReadRequest::new("x.log"), &ReadOptions::default()).output().into_owned();
        assert!(
            ignored.starts_with("DENIED: x.log: denied by the read policy (rule `.gitignore: *.log`)"),
            "{ignored}"
        );
        let above = narrowed.read(&ReadRequest::new(ws.join("top.txt").to_str().unwrap()), &ReadOptions::default());
        assert!(above.output().starts_with("OUTSIDE_ROOT"), "{}", above.output());
        assert_eq!(narrowed.root_paths(), [ws.join("sub").as_path()]);
    }
}
