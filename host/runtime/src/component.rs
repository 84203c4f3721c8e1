//! Loading a component: compile (or take from cache), read imports, pre-link,
//! ask it for its tools.

use crate::bindings::ProviderPre;
use crate::cache::CacheOutcome;
use crate::engine::{Runtime, RuntimeInner};
use crate::error::LoadError;
use crate::imports::{self, ImportCheck, Imports};
use crate::invoke::{Budget, Call, Returned};
use crate::sandbox::HostState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::visible::Escaped;
use toolhost_contract::{
    DeclaredSizes, DescriptorError, DescriptorLimits, ToolDescriptor, sha256_hex,
};
use toolhost_policy::{Policy, Sandbox};

/// CPU budget for `list-tools` at load: generous for any honest component,
/// and it stops a hostile one from hanging the host while loading.
const LIST_TOOLS_FUEL: u64 = 20_000_000_000;
/// Wall-clock budget for `list-tools` at load.
const LIST_TOOLS_DEADLINE: Duration = Duration::from_secs(30);

/// A component's tools, checked, and those whose descriptors had
/// invisible characters (escaped).
type Listed = (Vec<ToolDescriptor>, Vec<(String, Escaped)>);

/// What a component's `list-tools` returned, unchecked (as data, so a
/// worker process can send it): [`Unlisted::listed`] checks it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Declared(Vec<crate::bindings::RawTool>);

/// A compiled, pre-linked component whose tools are not known yet
/// ([`Runtime::load_bytes_unlisted`]): its `list-tools` runs elsewhere
/// (a walled-in worker), and [`Unlisted::listed`] checks the answer here.
#[derive(Debug)]
pub struct Unlisted(LoadedComponent);

impl Unlisted {
    /// The component, without tools (for a worker to be started with).
    pub fn component(&self) -> &LoadedComponent {
        &self.0
    }

    /// The component with the tools it declared, once they pass the same
    /// checks as a load's (`limits`, each descriptor's form).
    pub fn listed(
        self,
        declared: Declared,
        limits: &DescriptorLimits,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let mut loaded = self.0;
        (loaded.tools, loaded.escaped) = loaded.check_declared(declared.0, limits)?;
        tracing::info!(tools = loaded.tools.len(), cache = ?loaded.cache, "component loaded (tools listed in a worker)");
        Ok(Arc::new(loaded))
    }
}

/// A compiled, pre-linked component and the tools it declared.
pub struct LoadedComponent {
    pub(crate) rt: Arc<RuntimeInner>,
    pub(crate) pre: ProviderPre<HostState>,
    path: PathBuf,
    id: String,
    tools: Vec<ToolDescriptor>,
    /// Tools whose descriptors had invisible characters, escaped.
    escaped: Vec<(String, Escaped)>,
    imports: Imports,
    cache: CacheOutcome,
    compile_time: Duration,
}

impl std::fmt::Debug for LoadedComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedComponent")
            .field("path", &self.path)
            .field("id", &self.id)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Loads a component file. Fails with a [`LoadError`] naming the step:
    /// read, compile, an import toolhost does not provide, instantiate,
    /// `list-tools`, or a malformed descriptor.
    pub async fn load(&self, path: &Path) -> Result<Arc<LoadedComponent>, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?;
        self.load_bytes(path, bytes).await
    }

    /// Loads a component from its bytes (an embedded built-in, say);
    /// `origin` names it in errors and in [`LoadedComponent::path`].
    pub async fn load_bytes(
        &self,
        origin: &Path,
        bytes: Vec<u8>,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        self.load_bytes_with(origin, bytes, &DescriptorLimits::default())
            .await
    }

    /// Loads a component from its bytes, refusing it when what it declares
    /// about its tools passes `limits` (its policy's `[descriptors]`).
    pub async fn load_bytes_with(
        &self,
        origin: &Path,
        bytes: Vec<u8>,
        limits: &DescriptorLimits,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        use tracing::Instrument;
        let span = tracing::info_span!("load", path = %origin.display());
        self.load_inner(origin, bytes, limits)
            .instrument(span)
            .await
    }

    /// Loads a component whose compiled form came with it (a built-in,
    /// precompiled when toolhost was built): no compilation and no cache,
    /// when `precompiled` was made by an engine with this engine's
    /// settings on this CPU; otherwise (another wasmtime, a CPU without
    /// the features it was compiled for, a corrupt copy) `bytes` are loaded
    /// as [`Runtime::load_bytes`] loads them.
    pub async fn load_precompiled(
        &self,
        origin: &Path,
        bytes: &'static [u8],
        precompiled: &'static [u8],
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        use tracing::Instrument;
        let span = tracing::info_span!("load", path = %origin.display());
        let started = Instant::now();
        let engine = self.inner.engine.clone();
        let embedded = tokio::task::spawn_blocking(move || {
            crate::cache::deserialize(&engine, precompiled).map(|c| (c, sha256_hex(bytes)))
        })
        .await
        .ok()
        .flatten();
        match embedded {
            Some((component, id)) => {
                let limits = DescriptorLimits::default();
                self.finish_load(
                    origin,
                    id,
                    component,
                    CacheOutcome::Precompiled,
                    started,
                    &limits,
                )
                .instrument(span)
                .await
            }
            None => {
                tracing::info!(
                    origin = %origin.display(),
                    "the precompiled built-in does not fit this engine; compiling it"
                );
                self.load_inner(origin, bytes.to_vec(), &DescriptorLimits::default())
                    .instrument(span)
                    .await
            }
        }
    }

    /// Loads a component compiled by another runtime with the same engine
    /// settings (a worker process's, handed [`LoadedComponent::artifact`]
    /// by the serving process): no compilation, no cache, and no
    /// `list-tools` (its `tools` are the ones the serving process read).
    ///
    /// # Safety
    /// `artifact` must come from [`LoadedComponent::artifact`] of a
    /// runtime this process trusts (wasmtime runs its native code as is).
    #[allow(unsafe_code)]
    pub unsafe fn load_artifact(
        &self,
        origin: &Path,
        id: String,
        artifact: &[u8],
        tools: Vec<ToolDescriptor>,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let started = Instant::now();
        let fail = |reason: String| LoadError::Compile {
            path: origin.to_owned(),
            reason,
        };
        // SAFETY: the caller vouches for the artifact's origin; wasmtime
        // also checks it was made by an engine with these settings.
        let component =
            unsafe { wasmtime::component::Component::deserialize(&self.inner.engine, artifact) }
                .map_err(|e| fail(format!("{e:#}")))?;
        let mut loaded = self.link(origin, id, component, CacheOutcome::Precompiled, started)?;
        loaded.tools = tools;
        Ok(Arc::new(loaded))
    }

    async fn load_inner(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        limits: &DescriptorLimits,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let (id, component, cache, started) = self.compiled(path, bytes).await?;
        self.finish_load(path, id, component, cache, started, limits)
            .await
    }

    /// Loads a component without asking it for its tools: compiled (or
    /// from the cache) and pre-linked. Its `list-tools` is then run where
    /// the caller chooses (a worker process: see [`Unlisted`]).
    pub async fn load_bytes_unlisted(
        &self,
        origin: &Path,
        bytes: Vec<u8>,
    ) -> Result<Unlisted, LoadError> {
        let (id, component, cache, started) = self.compiled(origin, bytes).await?;
        Ok(Unlisted(self.link(origin, id, component, cache, started)?))
    }

    /// `bytes` compiled, or taken from the cache: (SHA-256, component, how
    /// the cache served it, when the load started).
    async fn compiled(
        &self,
        path: &Path,
        bytes: Vec<u8>,
    ) -> Result<
        (
            String,
            wasmtime::component::Component,
            CacheOutcome,
            Instant,
        ),
        LoadError,
    > {
        let id = sha256_hex(&bytes);
        let started = Instant::now();
        let fail = |reason: String| LoadError::Compile {
            path: path.to_owned(),
            reason,
        };
        let inner = self.inner.clone();
        let key = id.clone();
        let cached = tokio::task::spawn_blocking(move || inner.cache.lookup(&inner.engine, &key))
            .await
            .map_err(|e| fail(e.to_string()))?;
        let (component, cache) = match cached {
            Ok(c) => (c, CacheOutcome::Hit),
            Err(outcome) => {
                // One compilation at a time, in the order asked (a host asks
                // for its smallest components first): each already uses every
                // core, and a small component compiled beside a large one
                // would be ready only when both are.
                let _turn = self
                    .inner
                    .compiles
                    .acquire()
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let inner = self.inner.clone();
                let key = id.clone();
                let origin = path.to_owned();
                let c = tokio::task::spawn_blocking(move || {
                    let progress = inner.config.on_compile.clone();
                    let size = bytes.len();
                    inner.cache.compile(&inner.engine, &key, &bytes, || {
                        progress.map(|p| p.compiling(&origin, size))
                    })
                })
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r)
                .map_err(fail)?;
                (c, outcome)
            }
        };
        Ok((id, component, cache, started))
    }

    /// The rest of a load once the component is compiled: its imports
    /// checked, pre-linked, its tools asked for.
    async fn finish_load(
        &self,
        path: &Path,
        id: String,
        component: wasmtime::component::Component,
        cache: CacheOutcome,
        started: Instant,
        limits: &DescriptorLimits,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let mut loaded = self.link(path, id, component, cache, started)?;
        let listed = Instant::now();
        (loaded.tools, loaded.escaped) = loaded.list_tools(limits).await?;
        let list_time = listed.elapsed();
        tracing::info!(
            tools = loaded.tools.len(),
            ?cache,
            compile_time = ?loaded.compile_time,
            ?list_time,
            "component loaded"
        );
        for (tool, escaped) in &loaded.escaped {
            tracing::info!(
                component = %path.display(),
                tool,
                "escaped {escaped} in its descriptor: text a person cannot see is shown as \\u{{…}}"
            );
        }
        Ok(Arc::new(loaded))
    }

    /// A compiled component's imports checked and pre-linked; its tools
    /// not asked for yet.
    fn link(
        &self,
        path: &Path,
        id: String,
        component: wasmtime::component::Component,
        cache: CacheOutcome,
        started: Instant,
    ) -> Result<LoadedComponent, LoadError> {
        let compile_time = started.elapsed();
        self.inner.loads[cache.index()].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let engine = &self.inner.engine;
        let imports: Vec<String> = component
            .component_type()
            .imports(engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        if let Some(bad) = imports.iter().find(|i| !imports::is_provided(i)) {
            return Err(LoadError::UnknownImport {
                path: path.to_owned(),
                import: bad.clone(),
            });
        }
        let instantiate = |reason: String| LoadError::Instantiate {
            path: path.to_owned(),
            reason,
        };
        let pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(|e| instantiate(format!("{e:#}")))?;
        let pre = ProviderPre::new(pre).map_err(|e| {
            instantiate(format!(
                "it does not export the toolhost:tool interface (0.2.0 or 0.1.0): {e:#}"
            ))
        })?;
        Ok(LoadedComponent {
            rt: self.inner.clone(),
            pre,
            path: path.to_owned(),
            id,
            tools: Vec::new(),
            escaped: Vec::new(),
            imports: Imports::new(imports),
            cache,
            compile_time,
        })
    }
}

impl LoadedComponent {
    /// Asks the component for its tools, and checks what it declared:
    /// first against `limits` (the count, then each text's size, before
    /// anything is parsed), then each descriptor's form; invisible
    /// characters are escaped.
    async fn list_tools(&self, limits: &DescriptorLimits) -> Result<Listed, LoadError> {
        let declared = self.declared().await?;
        self.check_declared(declared.0, limits)
    }

    /// What the component declares (its `list-tools`), unchecked: run in a
    /// worker for an [`Unlisted`] component, and checked by the caller.
    pub async fn declared(&self) -> Result<Declared, LoadError> {
        let path = self.path.clone();
        let fail = |reason: String| LoadError::ListTools {
            path: path.clone(),
            reason,
        };
        let policy = Policy::deny_all().component();
        let budget = Budget {
            fuel: LIST_TOOLS_FUEL,
            deadline: LIST_TOOLS_DEADLINE,
        };
        let (r, _) = self
            .run(
                Call::ListTools,
                &policy,
                budget,
                CancellationToken::new(),
                crate::invoke::pure_environment(),
                &mut toolhost_effects::Staged::default(),
            )
            .await;
        let raw = match r {
            Ok(Returned::Tools(t)) => t,
            Ok(_) => return Err(fail("unexpected return".into())),
            Err(e) => {
                let mut reason = format!("[{}] {}", e.code, e.message);
                // A trap at load time has no caller to read its info: the
                // guest's backtrace goes into the reason.
                if let Some(frames) = e.info.as_ref().and_then(|i| i["backtrace"].as_array()) {
                    let frames: Vec<&str> = frames.iter().filter_map(|f| f.as_str()).collect();
                    reason.push_str(&format!("\nguest backtrace: {}", frames.join(" <- ")));
                }
                return Err(fail(reason));
            }
        };
        Ok(Declared(raw))
    }

    /// Checks what the component declared: first against `limits` (the
    /// count, then each text's size, before anything is parsed), then
    /// each descriptor's form; invisible characters are escaped.
    fn check_declared(
        &self,
        raw: Vec<crate::bindings::RawTool>,
        limits: &DescriptorLimits,
    ) -> Result<Listed, LoadError> {
        let path = self.path.clone();
        let refuse = |source: DescriptorError| LoadError::Descriptor {
            path: path.clone(),
            source: Box::new(source),
        };
        limits.check_count(raw.len()).map_err(refuse)?;
        let mut total = 0usize;
        for t in &raw {
            let sizes = DeclaredSizes {
                name: &t.name,
                description: t.description.len(),
                title: t.title.as_ref().map_or(0, String::len),
                input_schema: t.input_schema.len(),
                output_schema: t.output_schema.len(),
                pointers: t.paths.iter().map(|p| p.pointer.len()).sum::<usize>()
                    + t.urls.iter().map(String::len).sum::<usize>(),
            };
            limits.check_tool(&sizes, &mut total).map_err(refuse)?;
        }
        let mut out: Vec<ToolDescriptor> = Vec::with_capacity(raw.len());
        let mut names = std::collections::HashSet::with_capacity(raw.len());
        let mut escaped = Vec::new();
        for t in raw {
            let mut d = ToolDescriptor::from_raw(
                t.name,
                t.description,
                &t.input_schema,
                &t.output_schema,
                t.annotations,
                t.paths,
            )
            .and_then(|d| d.with_v2(t.title, t.urls))
            .map_err(refuse)?;
            d.host_renders = t.host_renders;
            if !names.insert(d.name.clone()) {
                return Err(refuse(DescriptorError::Duplicate(d.name)));
            }
            let found = d.escape_invisible();
            if !found.is_empty() {
                escaped.push((d.name.clone(), found));
            }
            out.push(d);
        }
        Ok((out, escaped))
    }

    /// The runtime that loaded it.
    pub fn runtime(&self) -> Runtime {
        Runtime {
            inner: self.rt.clone(),
        }
    }

    /// Its compiled code, for a worker process to load
    /// ([`Runtime::load_artifact`]) instead of compiling it again.
    pub fn artifact(&self) -> Result<Vec<u8>, LoadError> {
        self.pre
            .pre
            .component()
            .serialize()
            .map_err(|e| LoadError::Compile {
                path: self.path.clone(),
                reason: format!("{e:#}"),
            })
    }

    /// The file it was loaded from (or the origin given to [`Runtime::load_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SHA-256 of the component's bytes.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tools it declared, in its order.
    pub fn tools(&self) -> &[ToolDescriptor] {
        &self.tools
    }

    /// The tools whose descriptors held characters a person cannot see
    /// (escaped as `\u{…}` in what they advertise), with what was found.
    pub fn escaped(&self) -> &[(String, Escaped)] {
        &self.escaped
    }

    /// One declared tool.
    pub fn tool(&self, name: &str) -> Option<&ToolDescriptor> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Whether tool `name` declared that it renders nothing itself
    /// (contract 0.3.0): its `render` is then never called.
    pub fn host_renders(&self, name: &str) -> bool {
        self.tool(name).is_some_and(|t| t.host_renders)
    }

    /// The `toolhost:tool` contract version it implements, e.g. `0.2.0`.
    pub fn contract_version(&self) -> &'static str {
        self.pre.version()
    }

    /// Its imports, e.g. `wasi:filesystem/types@0.2.6`.
    pub fn imports(&self) -> &[String] {
        self.imports.names()
    }

    /// Whether the load used the artifact cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.cache
    }

    /// Time spent compiling or deserializing.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Every import, ruled against `sandbox`.
    pub fn check_imports(&self, sandbox: &Sandbox) -> Vec<ImportCheck> {
        imports::check(self.imports.names(), sandbox)
    }

    /// The first reason this component may not run under `sandbox`, if any.
    pub fn import_denial(&self, sandbox: &Sandbox) -> Option<String> {
        self.imports.first_denial(sandbox)
    }
}
