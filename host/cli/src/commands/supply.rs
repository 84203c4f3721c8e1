//! The way in for third-party tools, from the shell: `toolhost add`
//! (fetch, show, suggest the least policy, append, lock), `toolhost policy
//! suggest` (show and suggest, write nothing), `toolhost policy import`
//! (another host's policy as toolhost's) and `toolhost publish` (push a
//! component as an OCI artifact).

use super::Context;
use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost::{TerminalProgress, find_toolbox};
use toolhost_runtime::{LoadedComponent, Runtime, RuntimeConfig};
use toolhost_toolbox::Moving;
use toolhost_toolbox::file::{Digest, OciRef, Source, Toolbox};
use toolhost_toolbox::remote;
use toolhost_toolbox::suggest;

/// `toolhost add`'s options.
#[derive(Args)]
pub struct AddArgs {
    /// `oci://REGISTRY/REPOSITORY:TAG` (or `@sha256:…`), or an https URL.
    source: String,
    /// The component's sha256 (https sources).
    #[arg(long)]
    digest: Option<String>,
    /// Prefix its tool names (to avoid clashes).
    #[arg(long)]
    prefix: Option<String>,
    /// The toolbox file (default: ./toolhost.toml, created if missing).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// `toolhost policy`'s options: its subcommand.
#[derive(Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    cmd: PolicyCmd,
}

/// What `toolhost policy` does.
#[derive(Subcommand)]
enum PolicyCmd {
    /// Show what a component imports and declares, and the least policy
    /// that runs it (nothing is written).
    Suggest {
        /// `oci://…`, an https URL (with --digest), `builtin:NAME` or a file.
        source: String,
        /// The component's sha256 (https sources).
        #[arg(long)]
        digest: Option<String>,
    },
    /// Turn a wassette `policy.yaml` into a toolhost policy that grants the
    /// same and nothing more, saying what it could not map.
    Import {
        /// The wassette policy file.
        file: PathBuf,
        /// Write the policy here (default: print it).
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace `--out` if it exists.
        #[arg(long, requires = "out")]
        force: bool,
    },
}

/// `toolhost publish`'s options.
#[derive(Args)]
pub struct PublishArgs {
    /// The component file.
    component: PathBuf,
    /// Where: oci://REGISTRY/REPOSITORY:TAG.
    reference: String,
    /// The version to annotate it with.
    #[arg(long)]
    version: Option<String>,
    /// A description.
    #[arg(long)]
    description: Option<String>,
    /// Where its source is (a URL).
    #[arg(long)]
    source_url: Option<String>,
    /// The toolbox whose [registries] settings apply (insecure, auth).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Adds the component to the toolbox and says what it did.
pub async fn add(ctx: &Context, a: AddArgs) -> anyhow::Result<()> {
    let path = a
        .config
        .unwrap_or_else(|| PathBuf::from(toolhost_toolbox::DEFAULT_FILE_NAME));
    let said = add_component(
        &a.source,
        a.digest.as_deref(),
        a.prefix.as_deref(),
        &path,
        ctx.cache.clone(),
    )
    .await?;
    out!("{said}");
    Ok(())
}

/// Runs the `policy` subcommand.
pub async fn policy(ctx: &Context, a: PolicyArgs) -> anyhow::Result<()> {
    match a.cmd {
        PolicyCmd::Suggest { source, digest } => {
            let dir = std::env::current_dir()?;
            let tb = find_toolbox(None, &dir).ok();
            let said =
                suggest_policy(&source, digest.as_deref(), tb.as_ref(), ctx.cache.clone()).await?;
            out!("{said}");
            Ok(())
        }
        PolicyCmd::Import { file, out, force } => import_policy(&file, out.as_deref(), force),
    }
}

/// `toolhost policy import`: the policy written (or printed), what was not
/// mapped said on stderr. The result is checked to parse as a policy
/// before anything is written.
fn import_policy(file: &Path, out: Option<&Path>, force: bool) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let imported = toolhost_policy::import::wassette(&text, &file.display().to_string())?;
    let base = out
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or(std::env::current_dir()?);
    toolhost_policy::Policy::parse(&imported.toml, "the imported policy", &base)
        .context("the imported policy does not parse (a bug in the import)")?;
    for u in &imported.unmapped {
        eprintln!("toolhost: not imported: {u}");
    }
    match out {
        None => out!("{}", imported.toml.trim_end()),
        Some(path) => {
            if path.exists() && !force {
                bail!("{} exists; pass --force to replace it", path.display());
            }
            std::fs::write(path, &imported.toml)
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "toolhost: wrote {} ({} not imported: see its comments)",
                path.display(),
                imported.unmapped.len()
            );
        }
    }
    Ok(())
}

/// Pushes the component, annotated, and prints its digest.
pub async fn publish(ctx: &Context, a: PublishArgs) -> anyhow::Result<()> {
    let tb = match &a.config {
        Some(p) => Some(find_toolbox(Some(p), &std::env::current_dir()?)?),
        None => None,
    };
    let mut annotations = BTreeMap::new();
    for (key, value) in [
        ("org.opencontainers.image.version", a.version),
        ("org.opencontainers.image.description", a.description),
        ("org.opencontainers.image.source", a.source_url),
    ] {
        if let Some(v) = value {
            annotations.insert(key.to_owned(), v);
        }
    }
    let digest = push_component(
        &a.component,
        &a.reference,
        annotations,
        tb.as_ref(),
        ctx.cache.clone(),
    )
    .await?;
    out!(
        "published {} as {} ({digest})",
        a.component.display(),
        a.reference
    );
    Ok(())
}

/// A runtime for describing components (compiled into `cache`): `add`,
/// `policy suggest`, and `lock` and `update`, which pin and compare what
/// components declare.
pub fn runtime(cache: Option<PathBuf>) -> anyhow::Result<Runtime> {
    Ok(Runtime::new(RuntimeConfig {
        cache_dir: cache,
        on_compile: Some(Arc::new(TerminalProgress::default())),
        ..Default::default()
    })?)
}

/// The component `source` names, fetched (pulled by tag for OCI: this is
/// where a person looks at it before locking), loaded.
async fn fetch_and_load(
    source: &Source,
    toolbox: Option<&Toolbox>,
    cache: Option<PathBuf>,
) -> anyhow::Result<Arc<LoadedComponent>> {
    let registries = toolbox.map(|t| t.registries.clone()).unwrap_or_default();
    let client = toolhost_registry::Client::new(registries, toolhost_registry::Limits::default())?;
    let store = remote::open_store(None)?;
    let (origin, bytes) = match source {
        Source::Oci(r) => {
            let pulled = client.pull(r, &store).await?;
            let bytes = store
                .get(&pulled.component)?
                .context("the pulled component is not in the store")?;
            (r.to_string(), bytes)
        }
        Source::Https { url, digest } => {
            toolhost_registry::oci::fetch_https(client.http(), url, digest, &store).await?;
            let bytes = store
                .get(digest)?
                .context("the download is not in the store")?;
            (url.clone(), bytes)
        }
        Source::File(path) => (
            path.display().to_string(),
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        Source::Builtin(name) => {
            let b = toolhost_builtins::get(name).context("no such built-in tool")?;
            (b.origin(), b.wasm.to_vec())
        }
    };
    Ok(runtime(cache)?
        .load_bytes(Path::new(&origin), bytes)
        .await?)
}

/// Parses a source written on the command line (`oci://…`, `https://…`
/// with its digest, `builtin:NAME`, or a path).
fn source(text: &str, digest: Option<&str>) -> anyhow::Result<Source> {
    if text.starts_with("oci://") {
        return Ok(Source::Oci(
            OciRef::parse(text).map_err(anyhow::Error::msg)?,
        ));
    }
    if text.starts_with("https://") {
        let digest = digest.context("an https source needs --digest sha256:…")?;
        return Ok(Source::Https {
            url: text.to_owned(),
            digest: Digest::parse(digest).map_err(anyhow::Error::msg)?,
        });
    }
    if let Some(name) = text.strip_prefix("builtin:") {
        return Ok(Source::Builtin(name.to_owned()));
    }
    Ok(Source::File(std::env::current_dir()?.join(text)))
}

/// `toolhost policy suggest`: what the component asks for, and the
/// least policy that runs it. Writes nothing.
async fn suggest_policy(
    text: &str,
    digest: Option<&str>,
    toolbox: Option<&Toolbox>,
    cache: Option<PathBuf>,
) -> anyhow::Result<String> {
    let source = source(text, digest)?;
    let loaded = fetch_and_load(&source, toolbox, cache).await?;
    Ok(format!(
        "{}\n# suggested policy\n{}",
        suggest::describe(&loaded),
        suggest::minimal_policy(&loaded, text)
    ))
}

/// A file name for a component's policy: the last part of its
/// repository, file name or URL, in lowercase letters, digits and `-`.
fn policy_name(source: &Source) -> String {
    let raw = match source {
        Source::Oci(r) => r.repository.rsplit('/').next().unwrap_or("tool").to_owned(),
        Source::Https { url, .. } => url
            .rsplit('/')
            .next()
            .unwrap_or("tool")
            .trim_end_matches(".wasm")
            .to_owned(),
        Source::File(p) => p
            .file_stem()
            .map_or_else(|| "tool".into(), |s| s.to_string_lossy().into_owned()),
        Source::Builtin(n) => n.clone(),
    };
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if name.is_empty() { "tool".into() } else { name }
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// `toolhost add`: fetch the component, show what it asks for, write the
/// least policy next to the toolbox, append the entry, and lock it. The
/// toolbox and its lock change only if all of it succeeds.
async fn add_component(
    text: &str,
    digest: Option<&str>,
    prefix: Option<&str>,
    toolbox_path: &Path,
    cache: Option<PathBuf>,
) -> anyhow::Result<String> {
    let builtins = toolhost_builtins::names();
    let existing = match std::fs::read_to_string(toolbox_path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", toolbox_path.display())),
    };
    let source = source(text, digest)?;
    if !source.is_remote() {
        bail!(
            "`toolhost add` takes a remote source (oci://… or https://… with --digest); add a local file to the toolbox by hand"
        );
    }
    let dir = toolbox_path.parent().unwrap_or(Path::new(".")).to_owned();
    let base_dir = if dir.is_absolute() {
        dir.clone()
    } else {
        std::env::current_dir()?.join(&dir)
    };
    let name = policy_name(&source);
    let mut policy_rel = format!("policies/{name}.toml");
    let mut n = 2;
    while base_dir.join(&policy_rel).exists() {
        policy_rel = format!("policies/{name}-{n}.toml");
        n += 1;
    }
    let mut entry = format!("\n[[component]]\nsource = {}\n", quote(&source.to_string()));
    if let Source::Https { digest, .. } = &source {
        entry.push_str(&format!("digest = {}\n", quote(digest.as_str())));
    }
    entry.push_str(&format!("policy = {}\n", quote(&policy_rel)));
    if let Some(p) = prefix {
        entry.push_str(&format!("prefix = {}\n", quote(p)));
    }
    let new_text = match &existing {
        Some(t) => format!("{}{}{entry}", t, if t.ends_with('\n') { "" } else { "\n" }),
        None => format!("version = 1\n{entry}"),
    };
    // The toolbox with the new entry must parse (its registries and trust
    // rules apply to the fetch), and lock, before anything is written.
    let mut toolbox = Toolbox::parse(
        &new_text,
        &toolbox_path.display().to_string(),
        &base_dir,
        &builtins,
    )?;
    toolbox.path = Some(base_dir.join(toolbox_path.file_name().unwrap_or_default()));
    let added = toolbox.components.len() - 1;
    if toolbox.components[..added]
        .iter()
        .any(|c| c.source == source)
    {
        bail!("{source} is already in {}", toolbox_path.display());
    }
    let loaded = fetch_and_load(&source, Some(&toolbox), cache.clone()).await?;
    let policy = suggest::minimal_policy(&loaded, &source.to_string());
    let store = remote::open_store(None)?;
    let changes = remote::lock(&toolbox, &store, &Moving::Unlocked, &runtime(cache)?).await?;
    std::fs::create_dir_all(base_dir.join("policies"))?;
    std::fs::write(base_dir.join(&policy_rel), &policy)
        .with_context(|| format!("writing {policy_rel}"))?;
    std::fs::write(toolbox_path, &new_text)
        .with_context(|| format!("writing {}", toolbox_path.display()))?;
    let pinned = changes
        .iter()
        .find(|c| c.source == source.to_string())
        .map(|c| {
            format!(
                "{} ({})",
                c.after.manifest.as_ref().unwrap_or(&c.after.component),
                c.after.signer
            )
        })
        .unwrap_or_default();
    Ok(format!(
        "{}\nadded {source} to {} with the policy {policy_rel} (review it: it grants nothing until you fill it in)\npinned {pinned} in {}\n",
        suggest::describe(&loaded),
        toolbox_path.display(),
        toolbox.lock_path().display()
    ))
}

/// `toolhost publish`: the component at `path` pushed as `reference` in
/// the CNCF Wasm artifact layout, annotated; the manifest's digest.
async fn push_component(
    path: &Path,
    reference: &str,
    annotations_in: BTreeMap<String, String>,
    toolbox: Option<&Toolbox>,
    cache: Option<PathBuf>,
) -> anyhow::Result<Digest> {
    let r = OciRef::parse(reference).map_err(anyhow::Error::msg)?;
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let loaded = runtime(cache)?
        .load_bytes(path, bytes.clone())
        .await
        .with_context(|| format!("{} is not a component toolhost runs", path.display()))?;
    let tools: Vec<&str> = loaded.tools().iter().map(|t| t.name.as_str()).collect();
    let mut annotations = annotations_in;
    annotations.insert("dev.toolhost.tools".into(), tools.join(","));
    annotations.insert(
        "dev.toolhost.contract".into(),
        match loaded.contract_version() {
            Some(v) => format!("toolhost:tool@{v}"),
            None => "plain".into(),
        },
    );
    let layer = toolhost_registry::digest_of(&bytes);
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer.to_string()],
        "component": {
            "exports": loaded.exports(),
            "imports": loaded.imports(),
        },
    });
    let registries = toolbox.map(|t| t.registries.clone()).unwrap_or_default();
    let client = toolhost_registry::Client::new(registries, toolhost_registry::Limits::default())?;
    Ok(client
        .push(&r, &bytes, &serde_json::to_vec(&config)?, annotations)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_are_plain() {
        let oci = source("oci://ghcr.io/acme/CSV_tool:1", None).map(|s| policy_name(&s));
        assert!(oci.is_err(), "uppercase is not a repository");
        let oci = source("oci://ghcr.io/acme/csv_tool:1", None).expect("parses");
        assert_eq!(policy_name(&oci), "csv-tool");
        let https = source(
            "https://x.io/t/md.wasm",
            Some("sha256:0000000000000000000000000000000000000000000000000000000000000000"),
        )
        .expect("parses");
        assert_eq!(policy_name(&https), "md");
        assert!(source("https://x.io/t/md.wasm", None).is_err());
    }
}
