//! Which entries a search leaves out by default, as ripgrep users expect:
//! paths matched by `.gitignore` and `.ignore` files (and the repository's
//! `.git/info/exclude`), hidden entries (names starting with `.`), and always
//! the `.git` directory.
//!
//! Rules apply whether or not the tree is a git repository (a checkout copied
//! without its `.git` still has build outputs worth skipping). Ignore files in
//! the directories above the search root count too, up to the repository root
//! (the first directory with a `.git`) or the top of what the tool can read.
//! Deeper files take precedence over shallower ones, `.ignore` over
//! `.gitignore`, and a `!pattern` re-includes a path.

use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore files read in each directory, lowest precedence first.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Why an entry is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// Matched by an ignore file.
    Ignored,
    /// A hidden entry.
    Hidden,
    /// The `.git` directory.
    Git,
}

/// The ignore rules in force at one point of a walk: a stack of matchers, one
/// per directory that has ignore files, deepest last.
pub struct Rules {
    hidden: bool,
    use_ignore_files: bool,
    stack: Vec<(usize, Gitignore)>,
    /// Ignore files that could not be parsed, reported once.
    pub errors: Vec<String>,
}

impl Rules {
    /// Rules for a walk rooted at `root`. `hidden` includes hidden entries;
    /// `use_ignore_files` false disables ignore files (hidden and `.git` still apply).
    pub fn new(root: &Path, hidden: bool, use_ignore_files: bool) -> Self {
        let mut rules = Rules {
            hidden,
            use_ignore_files,
            stack: vec![],
            errors: vec![],
        };
        if use_ignore_files {
            // Ancestors first (shallowest), up to and including the repository root.
            let mut ancestors: Vec<PathBuf> = vec![];
            let mut repo_root = None;
            for dir in root.ancestors().skip(1) {
                if std::fs::metadata(dir).is_err() {
                    break;
                }
                ancestors.push(dir.to_path_buf());
                if dir.join(".git").exists() {
                    repo_root = Some(dir.to_path_buf());
                    break;
                }
            }
            if repo_root.is_none() && root.join(".git").exists() {
                repo_root = Some(root.to_path_buf());
            }
            if let Some(repo) = &repo_root {
                let exclude = repo.join(".git/info/exclude");
                if exclude.is_file() {
                    let mut b = GitignoreBuilder::new(repo);
                    if let Some(e) = b.add(&exclude) {
                        rules.errors.push(format!("{}: {e}", exclude.display()));
                    }
                    rules.push_built(0, b);
                }
            }
            for dir in ancestors.iter().rev() {
                rules.enter(dir, 0);
            }
        }
        rules
    }

    /// Enters directory `dir` at `depth` (the root is 0): reads its ignore files.
    pub fn enter(&mut self, dir: &Path, depth: usize) {
        self.enter_listed(dir, depth, |name| dir.join(name).is_file());
    }

    /// [`Rules::enter`] for a directory the walk has just listed: `present`
    /// says from that listing which ignore files it holds, so none costs a
    /// lookup of its own.
    pub fn enter_listed(&mut self, dir: &Path, depth: usize, present: impl Fn(&str) -> bool) {
        if !self.use_ignore_files {
            return;
        }
        let mut builder = None;
        for name in IGNORE_FILES {
            if !present(name) {
                continue;
            }
            let file = dir.join(name);
            let b = builder.get_or_insert_with(|| GitignoreBuilder::new(dir));
            if let Some(e) = b.add(&file) {
                self.errors.push(format!("{}: {e}", file.display()));
            }
        }
        if let Some(b) = builder {
            self.push_built(depth, b);
        }
    }

    /// Whether `name` is one of the ignore files [`Rules::enter`] reads.
    pub fn is_ignore_file(name: &str) -> bool {
        IGNORE_FILES.contains(&name)
    }

    /// Leaves every directory deeper than `depth`.
    pub fn leave_below(&mut self, depth: usize) {
        while self.stack.last().is_some_and(|(d, _)| *d > depth) {
            self.stack.pop();
        }
    }

    fn push_built(&mut self, depth: usize, builder: GitignoreBuilder) {
        match builder.build() {
            Ok(g) if !g.is_empty() => self.stack.push((depth, g)),
            Ok(_) => {}
            Err(e) => self.errors.push(e.to_string()),
        }
    }

    /// Whether the entry `name` at `path` is left out, and why.
    pub fn check(&self, path: &Path, name: &str, is_dir: bool) -> Option<Left> {
        if name == ".git" {
            return Some(Left::Git);
        }
        if !self.hidden && name.starts_with('.') {
            return Some(Left::Hidden);
        }
        for (_, g) in self.stack.iter().rev() {
            match g.matched(path, is_dir) {
                Match::Ignore(_) => return Some(Left::Ignored),
                Match::Whitelist(_) => return None,
                Match::None => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_ignore_hidden_and_git() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join(".git/info")).unwrap();
        std::fs::create_dir_all(p.join("src/gen")).unwrap();
        std::fs::write(p.join(".gitignore"), "target/\n*.log\n!keep.log\n").unwrap();
        std::fs::write(p.join(".git/info/exclude"), "secret.txt\n").unwrap();
        std::fs::write(p.join("src/.ignore"), "gen/\n!*.log\n").unwrap();
        let mut r = Rules::new(p, false, true);
        r.enter(p, 0);
        assert_eq!(
            r.check(&p.join("target"), "target", true),
            Some(Left::Ignored)
        );
        // A file named like a directory rule is not ignored.
        assert_eq!(r.check(&p.join("target"), "target", false), None);
        assert_eq!(
            r.check(&p.join("a.log"), "a.log", false),
            Some(Left::Ignored)
        );
        assert_eq!(r.check(&p.join("keep.log"), "keep.log", false), None);
        assert_eq!(
            r.check(&p.join("secret.txt"), "secret.txt", false),
            Some(Left::Ignored)
        );
        assert_eq!(r.check(&p.join(".env"), ".env", false), Some(Left::Hidden));
        assert_eq!(r.check(&p.join(".git"), ".git", true), Some(Left::Git));
        r.enter(&p.join("src"), 1);
        assert_eq!(
            r.check(&p.join("src/gen"), "gen", true),
            Some(Left::Ignored)
        );
        // The deeper .ignore re-includes what the root .gitignore excluded.
        assert_eq!(r.check(&p.join("src/b.log"), "b.log", false), None);
        r.leave_below(0);
        assert_eq!(
            r.check(&p.join("src/b.log"), "b.log", false),
            Some(Left::Ignored)
        );

        // Starting below the root still applies the root's rules.
        let mut r = Rules::new(&p.join("src"), true, true);
        r.enter(&p.join("src"), 0);
        assert_eq!(r.check(&p.join("src/x.log"), "x.log", false), None);
        assert_eq!(
            r.check(&p.join("src/gen"), "gen", true),
            Some(Left::Ignored)
        );
        assert_eq!(
            r.check(&p.join("src/secret.txt"), "secret.txt", false),
            Some(Left::Ignored)
        );
        assert_eq!(r.check(&p.join("src/.env"), ".env", false), None);

        let r = Rules::new(p, true, false);
        assert_eq!(r.check(&p.join("a.log"), "a.log", false), None);
        assert_eq!(r.check(&p.join(".git"), ".git", true), Some(Left::Git));
    }
}
