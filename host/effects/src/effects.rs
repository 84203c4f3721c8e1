//! A call's effect set: what committing its overlays would change, path by
//! path, with hashes, sizes and (for text files) a unified diff.

use crate::overlay::{Entry, FsError, Kind, Node, Overlay, Seen, Source, join};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::sync::Arc;

/// Largest file (either side) shown as a text diff.
pub const MAX_DIFF_FILE: u64 = 1 << 20;

/// What happened at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    /// It did not exist and now does.
    Created,
    /// Its bytes (or link target) changed.
    Modified,
    /// It existed and now does not.
    Deleted,
    /// A file moved here from `from`, bytes unchanged.
    Renamed,
    /// Only its permissions changed.
    ModeChanged,
}

/// One side of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    /// SHA-256 of the bytes (of the target, for a symlink), hex; empty for a directory.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Unix permission bits.
    pub mode: u32,
}

/// One path's change.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    /// The grant's directory as the guest sees it (`/workspace`).
    pub grant: String,
    /// The path inside the grant.
    pub path: String,
    /// What happened.
    pub kind: EffectKind,
    /// File, directory or symlink (after the change; before, for a deletion).
    pub entry: Kind,
    /// Where a renamed file came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Before the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Version>,
    /// After the commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Version>,
    /// Lines added and removed (text files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(usize, usize)>,
    /// The unified diff (text files); not in summaries or logs.
    #[serde(skip)]
    pub diff: Option<String>,
    /// Where the new bytes are, and what the old entry looked like (for
    /// the commit's conflict check).
    #[serde(skip)]
    pub(crate) internal: Option<Internal>,
}

/// What only the commit needs.
#[derive(Debug, Clone)]
pub(crate) struct Internal {
    pub(crate) grant: usize,
    pub(crate) source: Option<Source>,
    pub(crate) target: Option<String>,
    pub(crate) fingerprint: Seen,
}

/// Everything a call would change.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EffectSet {
    /// Path by path, in path order.
    pub effects: Vec<Effect>,
}

/// A call's staged overlays, one per read-write grant. Dropping it
/// discards everything the call wrote.
#[derive(Debug, Default)]
pub struct Staged {
    pub(crate) grants: Vec<(String, Arc<Overlay>)>,
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// SHA-256 (hex) of a reader's bytes.
pub(crate) fn sha256(mut r: impl Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// SHA-256 (hex) of bytes.
pub(crate) fn sha256_bytes(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

impl Staged {
    /// The staged overlays of a call, by the guest path of their grant.
    pub fn new(grants: Vec<(String, Arc<Overlay>)>) -> Staged {
        Staged { grants }
    }

    /// Whether the call changed nothing (then there is nothing to commit).
    pub fn is_clean(&self) -> bool {
        self.grants.iter().all(|(_, o)| o.is_clean())
    }

    /// The staged overlays, by the guest path of their grant.
    pub fn grants(&self) -> &[(String, Arc<Overlay>)] {
        &self.grants
    }

    pub(crate) fn overlay(&self, i: usize) -> Option<&Arc<Overlay>> {
        self.grants.get(i).map(|(_, o)| o)
    }

    /// Computes the effect set: every path the commit would change.
    pub fn effects(&self) -> Result<EffectSet, FsError> {
        let mut effects = Vec::new();
        for (i, (guest, overlay)) in self.grants.iter().enumerate() {
            effects.extend(grant_effects(i, guest, overlay)?);
        }
        Ok(EffectSet { effects })
    }
}

/// An entry's kind, version and (for a small text file) bytes.
type Described = Option<(Kind, Version, Option<Vec<u8>>)>;

fn version_of(o: &Overlay, e: &Entry) -> Result<Described, FsError> {
    Ok(match e {
        Entry::Absent => None,
        Entry::Dir => Some((
            Kind::Dir,
            Version {
                sha256: String::new(),
                size: 0,
                mode: 0o755,
            },
            None,
        )),
        Entry::Symlink(t) => Some((
            Kind::Symlink,
            Version {
                sha256: sha256_bytes(t.as_bytes()),
                size: t.len() as u64,
                mode: 0o777,
            },
            None,
        )),
        Entry::File(Source::Lower(r)) => Some(file_version(o.lower_dir().open(r)?.into_std())?),
        Entry::File(Source::Blob(b)) => Some(file_version(std::fs::File::open(b)?)?),
    })
}

/// A file's version, read once: a small file's bytes are hashed and kept
/// for the diff when they are text; a large one is hashed as it streams.
fn file_version(mut f: std::fs::File) -> std::io::Result<(Kind, Version, Option<Vec<u8>>)> {
    use std::os::unix::fs::PermissionsExt as _;
    let m = f.metadata()?;
    let (sha256, text) = if m.len() <= MAX_DIFF_FILE {
        let mut b = Vec::with_capacity(usize::try_from(m.len()).unwrap_or(0));
        f.read_to_end(&mut b)?;
        let sha = sha256_bytes(&b);
        let text = (!b.contains(&0) && std::str::from_utf8(&b).is_ok()).then_some(b);
        (sha, text)
    } else {
        (sha256(f)?, None)
    };
    Ok((
        Kind::File,
        Version {
            sha256,
            size: m.len(),
            mode: m.permissions().mode() & 0o7777,
        },
        text,
    ))
}

/// The lower paths under `rel` (recursively), for a deleted or replaced
/// directory.
fn lower_below(o: &Overlay, rel: &str, out: &mut BTreeSet<String>) -> Result<(), FsError> {
    if !matches!(o.lower_entry(rel)?, Entry::Dir) {
        return Ok(());
    }
    let Ok(rd) = o.lower_dir().read_dir(crate::overlay::lower_path(rel)) else {
        return Ok(());
    };
    for e in rd {
        let e = e?;
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let child = join(rel, &name);
        let is_dir = e.file_type()?.is_dir();
        out.insert(child.clone());
        if is_dir {
            lower_below(o, &child, out)?;
        }
    }
    Ok(())
}

fn grant_effects(i: usize, guest: &str, o: &Overlay) -> Result<Vec<Effect>, FsError> {
    let nodes = o.nodes();
    let seen = o.seen();
    let mut candidates: BTreeSet<String> = BTreeSet::new();
    for (k, n) in &nodes {
        candidates.insert(k.clone());
        // Whatever replaced a lower directory deletes what was under it.
        if !matches!(n, Node::Dir { opaque: false }) {
            lower_below(o, k, &mut candidates)?;
        }
        if let Node::LowerRef(r) = n {
            candidates.insert(r.clone());
        }
    }
    let mut out: Vec<Effect> = Vec::new();
    for p in &candidates {
        let before_e = o.lower_entry(p)?;
        let after_e = o.merged(p)?;
        let before = version_of(o, &before_e)?;
        let after = version_of(o, &after_e)?;
        let fingerprint = match seen.get(p) {
            Some(s) => s.clone(),
            // (Directories are not fingerprinted: Absent.)
            None => crate::overlay::current(o.lower_dir(), p),
        };
        let source = match &after_e {
            Entry::File(s) => Some(s.clone()),
            _ => None,
        };
        let target = match &after_e {
            Entry::Symlink(t) => Some(t.clone()),
            _ => None,
        };
        let internal = Internal {
            grant: i,
            source,
            target,
            fingerprint,
        };
        let mk = |kind, entry, before: Option<Version>, after: Option<Version>| Effect {
            grant: guest.to_owned(),
            path: p.clone(),
            kind,
            entry,
            from: None,
            before,
            after,
            lines: None,
            diff: None,
            internal: Some(internal.clone()),
        };
        match (before, after) {
            (None, None) => {}
            (None, Some((k, v, t))) => {
                let mut e = mk(EffectKind::Created, k, None, Some(v));
                if let Some(t) = t {
                    diff_into(&mut e, &[], &t);
                }
                out.push(e);
            }
            (Some((k, v, _)), None) => out.push(mk(EffectKind::Deleted, k, Some(v), None)),
            (Some((kb, vb, tb)), Some((ka, va, ta))) => {
                if kb != ka {
                    out.push(mk(EffectKind::Deleted, kb, Some(vb), None));
                    let mut e = mk(EffectKind::Created, ka, None, Some(va));
                    if let Some(t) = ta {
                        diff_into(&mut e, &[], &t);
                    }
                    out.push(e);
                } else if vb.sha256 != va.sha256 {
                    let mut e = mk(EffectKind::Modified, ka, Some(vb), Some(va));
                    if let (Some(b), Some(a)) = (tb, ta) {
                        diff_into(&mut e, &b, &a);
                    }
                    out.push(e);
                } else if vb.mode != va.mode && ka == Kind::File {
                    out.push(mk(EffectKind::ModeChanged, ka, Some(vb), Some(va)));
                }
            }
        }
    }
    // A created file whose bytes are a deleted lower file's: a rename.
    let deleted: BTreeMap<String, usize> = out
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EffectKind::Deleted && e.entry == Kind::File)
        .map(|(n, e)| (e.path.clone(), n))
        .collect();
    let mut gone = BTreeSet::new();
    for e in &mut out {
        if e.kind != EffectKind::Created {
            continue;
        }
        let from = match e.internal.as_ref().and_then(|i| i.source.as_ref()) {
            Some(Source::Lower(r)) if r != &e.path => r.clone(),
            _ => continue,
        };
        if let Some(&n) = deleted.get(&from)
            && gone.insert(n)
        {
            e.kind = EffectKind::Renamed;
            e.from = Some(from);
            e.diff = None;
            e.lines = None;
        }
    }
    // (The commit deletes a renamed file's old path: a rename is one effect.)
    Ok(out
        .into_iter()
        .enumerate()
        .filter(|(n, _)| !gone.contains(n))
        .map(|(_, e)| e)
        .collect())
}

fn diff_into(e: &mut Effect, before: &[u8], after: &[u8]) {
    let (Ok(b), Ok(a)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return;
    };
    let diff = similar::TextDiff::from_lines(b, a);
    let (mut plus, mut minus) = (0, 0);
    for c in diff.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => plus += 1,
            similar::ChangeTag::Delete => minus += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let name = join(e.grant.trim_start_matches('/'), &e.path);
    let old = if e.kind == EffectKind::Created {
        "/dev/null".to_owned()
    } else {
        format!("a/{name}")
    };
    e.diff = Some(
        diff.unified_diff()
            .context_radius(3)
            .header(&old, &format!("b/{name}"))
            .to_string(),
    );
    e.lines = Some((plus, minus));
}

impl EffectSet {
    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.effects.is_empty()
    }

    /// One line a person reads: "3 files: src/a.rs +12 −3, b.txt created, …"
    /// (at most `max` paths named).
    pub fn headline(&self, max: usize) -> String {
        if self.effects.is_empty() {
            return "no file changes".to_owned();
        }
        let n = self.effects.len();
        let mut parts: Vec<String> = self
            .effects
            .iter()
            .take(max)
            .map(|e| {
                let p = join(e.grant.trim_start_matches('/'), &e.path);
                let p = format!("/{p}");
                match (e.kind, e.lines) {
                    (EffectKind::Modified, Some((a, d))) => format!("{p} +{a} −{d}"),
                    (EffectKind::Created, Some((a, _))) => format!("{p} created (+{a})"),
                    (EffectKind::Created, None) => format!("{p} created"),
                    (EffectKind::Modified, None) => format!("{p} modified"),
                    (EffectKind::Deleted, _) => format!("{p} deleted"),
                    (EffectKind::Renamed, _) => {
                        format!("{p} renamed from {}", e.from.as_deref().unwrap_or("?"))
                    }
                    (EffectKind::ModeChanged, _) => format!("{p} mode changed"),
                }
            })
            .collect();
        if n > max {
            parts.push(format!("and {} more", n - max));
        }
        format!(
            "{n} {}: {}",
            if n == 1 { "change" } else { "changes" },
            parts.join(", ")
        )
    }

    /// The whole unified diff of the text files, with a line for each other
    /// change.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for e in &self.effects {
            match &e.diff {
                Some(d) => out.push_str(d),
                None => {
                    let p = join(e.grant.trim_start_matches('/'), &e.path);
                    let what = match e.kind {
                        EffectKind::Created => "created",
                        EffectKind::Modified => "modified (binary)",
                        EffectKind::Deleted => "deleted",
                        EffectKind::Renamed => "renamed",
                        EffectKind::ModeChanged => "mode changed",
                    };
                    out.push_str(&format!("# /{p}: {what}"));
                    if let Some(f) = &e.from {
                        out.push_str(&format!(" from {f}"));
                    }
                    if let Some(v) = &e.after {
                        out.push_str(&format!(" (sha256 {}, {} bytes)", v.sha256, v.size));
                    }
                    out.push('\n');
                }
            }
        }
        out
    }

    /// A bounded summary for a result's meta: the first `max` effects
    /// (hashes and sizes, no contents), and the totals.
    pub fn summary(&self, max: usize) -> serde_json::Value {
        let shown: Vec<&Effect> = self.effects.iter().take(max).collect();
        serde_json::json!({
            "count": self.effects.len(),
            "headline": self.headline(5),
            "effects": shown,
            "truncated": self.effects.len() > max,
        })
    }
}
