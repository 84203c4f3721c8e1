//! A loaded component: loading it (compile or take from cache, read
//! imports, pre-link, ask it for its tools) and running one call in it (a
//! fresh store and instance, the budget applied).

use crate::bindings::{ProviderPre, RawFailure, RawTool, Version};
use crate::cache::CacheOutcome;
use crate::engine::{Runtime, RuntimeInner};
use crate::error::LoadError;
use crate::imports::{self, ImportCheck, Imports};
use crate::invoke::{
    Budget, Call, CallCancelled, Environment, Execution, Invocation, RenderFailure, Returned,
    cancelled, classify, pure_environment, shutting_down, timeout,
};
use crate::plain::docs::PackageDocs;
use crate::plain::{self, Plain, Unserved};
use crate::sandbox::HostState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::visible::Escaped;
use toolhost_contract::{
    ContentBlock, DeclaredSizes, DescriptorError, DescriptorLimits, ErrorCode, FailureCode,
    ToolDescriptor, ToolFailure, sha256_hex,
};
use toolhost_effects::Staged;
use toolhost_policy::{Policy, RenderMode, Sandbox, ToolPolicy};
use toolhost_worker_wire::{Declared, ExecutionReport};
use wasmtime::component::{InstancePre, Val};
use wasmtime::{Store, UpdateDeadline};

/// CPU budget for `list-tools` at load: generous for any honest component,
/// and it stops a hostile one from hanging the host while loading.
const LIST_TOOLS_FUEL: u64 = 20_000_000_000;
/// Wall-clock budget for `list-tools` at load.
const LIST_TOOLS_DEADLINE: Duration = Duration::from_secs(30);

/// A component's tools, checked, and those whose descriptors had
/// invisible characters (escaped).
type Listed = (Vec<ToolDescriptor>, Vec<(String, Escaped)>);

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
        (loaded.tools, loaded.escaped) = loaded.check_declared(declared.into_tools(), limits)?;
        tracing::info!(tools = loaded.tools.len(), cache = ?loaded.cache, "component loaded (tools listed in a worker)");
        Ok(Arc::new(loaded))
    }
}

/// What a component is, told from its own type, pre-linked.
pub(crate) enum Kind {
    /// It implements `toolhost:tool` (of the version it exports).
    Contract(ProviderPre<HostState>),
    /// It exports plain functions ([`crate::plain`]).
    Plain {
        pre: InstancePre<HostState>,
        plain: Plain,
        /// Its served functions' descriptors, from its type and docs
        /// (empty in a worker, which is handed the descriptors).
        declared: Vec<RawTool>,
    },
}

impl Kind {
    fn instance_pre(&self) -> &InstancePre<HostState> {
        match self {
            Kind::Contract(p) => &p.pre,
            Kind::Plain { pre, .. } => pre,
        }
    }
}

/// A component compiled (or taken from the cache), not yet linked.
struct Compiled {
    /// SHA-256 of its bytes.
    id: String,
    component: wasmtime::component::Component,
    cache: CacheOutcome,
    /// When its load started.
    started: Instant,
    /// The WIT docs it carries.
    docs: Option<PackageDocs>,
}

/// A compiled, pre-linked component and the tools it declared.
pub struct LoadedComponent {
    pub(crate) rt: Arc<RuntimeInner>,
    pub(crate) kind: Kind,
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
                let compiled = Compiled {
                    id,
                    component,
                    cache: CacheOutcome::Precompiled,
                    started,
                    docs: None,
                };
                self.finish_load(origin, compiled, &limits)
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
        let compiled = Compiled {
            id,
            component,
            cache: CacheOutcome::Precompiled,
            started,
            docs: None,
        };
        let mut loaded = self.link(origin, compiled)?;
        loaded.tools = tools;
        Ok(Arc::new(loaded))
    }

    async fn load_inner(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        limits: &DescriptorLimits,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let compiled = self.compiled(path, bytes).await?;
        self.finish_load(path, compiled, limits).await
    }

    /// Loads a component without asking it for its tools: compiled (or
    /// from the cache) and pre-linked. Its `list-tools` is then run where
    /// the caller chooses (a worker process: see [`Unlisted`]).
    pub async fn load_bytes_unlisted(
        &self,
        origin: &Path,
        bytes: Vec<u8>,
    ) -> Result<Unlisted, LoadError> {
        let compiled = self.compiled(origin, bytes).await?;
        Ok(Unlisted(self.link(origin, compiled)?))
    }

    /// `bytes` compiled, or taken from the cache.
    async fn compiled(&self, path: &Path, bytes: Vec<u8>) -> Result<Compiled, LoadError> {
        let id = sha256_hex(&bytes);
        let started = Instant::now();
        let docs = PackageDocs::of(&bytes);
        let fail = |reason: String| LoadError::Compile {
            path: path.to_owned(),
            reason: wasi_03_hint(reason),
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
        Ok(Compiled {
            id,
            component,
            cache,
            started,
            docs,
        })
    }

    /// The rest of a load once the component is compiled: its imports
    /// checked, pre-linked, its tools asked for.
    async fn finish_load(
        &self,
        path: &Path,
        compiled: Compiled,
        limits: &DescriptorLimits,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let cache = compiled.cache;
        let mut loaded = self.link(path, compiled)?;
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

    /// A compiled component's imports checked and pre-linked, its kind
    /// told from its type; its tools not asked for yet (a plain
    /// component's are read from its type).
    fn link(&self, path: &Path, compiled: Compiled) -> Result<LoadedComponent, LoadError> {
        let Compiled {
            id,
            component,
            cache,
            started,
            docs,
        } = compiled;
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
        let kind = if Plain::is_contract(&component, engine) {
            Kind::Contract(ProviderPre::new(pre).map_err(|e| {
                let runs: Vec<&str> = crate::contract_versions().collect();
                instantiate(format!(
                    "it exports a toolhost:tool interface this host does not run \
                     (it runs {}): {e:#}",
                    runs.join(", ")
                ))
            })?)
        } else {
            let (plain, declared) = Plain::read(&component, engine, docs.as_ref());
            if declared.is_empty() {
                return Err(LoadError::NothingToServe {
                    path: path.to_owned(),
                    unserved: plain.unserved().to_vec(),
                });
            }
            Kind::Plain {
                pre,
                plain,
                declared,
            }
        };
        Ok(LoadedComponent {
            rt: self.inner.clone(),
            kind,
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
    async fn list_tools(&mut self, limits: &DescriptorLimits) -> Result<Listed, LoadError> {
        let declared = self.declared().await?;
        self.check_declared(declared.into_tools(), limits)
    }

    /// What the component declares (its `list-tools`), unchecked: run in a
    /// worker for an [`Unlisted`] component, and checked by the caller.
    pub async fn declared(&self) -> Result<Declared, LoadError> {
        if let Kind::Plain { declared, .. } = &self.kind {
            // Read from its type at load: nothing of it runs.
            return Ok(Declared::new(declared.clone()));
        }
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
                pure_environment(),
                &mut Staged::default(),
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
        Ok(Declared::new(raw))
    }

    /// Checks what the component declared: first against `limits` (the
    /// count, then each text's size, before anything is parsed), then
    /// each descriptor's form; invisible characters are escaped.
    ///
    /// A plain component's tool past a per-tool bound is not served (its
    /// other functions are): the host wrote its descriptor from the
    /// component's types, so a huge one says the types are, not that the
    /// publisher is overreaching.
    fn check_declared(
        &mut self,
        mut raw: Vec<crate::bindings::RawTool>,
        limits: &DescriptorLimits,
    ) -> Result<Listed, LoadError> {
        let path = self.path.clone();
        let refuse = |source: DescriptorError| LoadError::Descriptor {
            path: path.clone(),
            source: Box::new(source),
        };
        limits.check_count(raw.len()).map_err(refuse)?;
        if let Kind::Plain { plain, .. } = &mut self.kind {
            raw.retain(|t| {
                let mut alone = 0usize;
                match limits.check_tool(&sizes(t), &mut alone) {
                    Ok(()) => true,
                    Err(e) => {
                        plain.refuse(&t.name, e.to_string());
                        false
                    }
                }
            });
        }
        let mut total = 0usize;
        for t in &raw {
            limits.check_tool(&sizes(t), &mut total).map_err(refuse)?;
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
        self.kind
            .instance_pre()
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

    /// The `toolhost:tool` contract version it implements, e.g. `0.2.0`;
    /// `None` for a plain component.
    pub fn contract_version(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Contract(p) => Some(p.version()),
            Kind::Plain { .. } => None,
        }
    }

    /// Whether it is a plain component (its exported functions are its
    /// tools) rather than a `toolhost:tool` one.
    pub fn is_plain(&self) -> bool {
        matches!(self.kind, Kind::Plain { .. })
    }

    /// A plain component's functions that are not served, with why
    /// (empty for a `toolhost:tool` component).
    pub fn unserved(&self) -> &[Unserved] {
        match &self.kind {
            Kind::Plain { plain, .. } => plain.unserved(),
            Kind::Contract(_) => &[],
        }
    }

    /// What it exports: the contract's interface, or a plain component's
    /// exports by name.
    pub fn exports(&self) -> Vec<String> {
        let component = self.kind.instance_pre().component();
        component
            .component_type()
            .exports(&self.rt.engine)
            .map(|(name, _)| name.to_owned())
            .collect()
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

impl LoadedComponent {
    /// Runs one tool call in a fresh sandbox built from `inv.policy`.
    pub async fn execute(&self, inv: Invocation<'_>) -> Execution {
        use tracing::Instrument;
        let span = tracing::info_span!("sandbox", tool = inv.tool);
        self.execute_in_span(inv).instrument(span).await
    }

    async fn execute_in_span(&self, inv: Invocation<'_>) -> Execution {
        if let Some(why) = self.import_denial(&inv.policy.sandbox) {
            return Execution::new(
                Err(ToolFailure::new(
                    FailureCode::ImportDenied,
                    format!("the tool's component cannot run under this policy: {why}"),
                )),
                ExecutionReport::default(),
            );
        }
        let call = match &self.kind {
            Kind::Contract(_) => Call::Execute {
                name: inv.tool,
                args: inv.arguments,
                render: inv.policy.render == RenderMode::SameInstance
                    && !self.host_renders(inv.tool),
            },
            Kind::Plain { plain, .. } => {
                let Some(function) = plain.function(inv.tool) else {
                    return Execution::new(
                        Err(ToolFailure::new(
                            FailureCode::HostError,
                            format!("the component has no function behind `{}`", inv.tool),
                        )),
                        ExecutionReport::default(),
                    );
                };
                // Checked whole before anything runs.
                match plain::arguments(function, inv.arguments) {
                    Ok(params) => Call::Plain { function, params },
                    Err(e) => {
                        return Execution::new(Err(plain::invalid(&e)), ExecutionReport::default());
                    }
                }
            }
        };
        let clock = inv.clock.unwrap_or_else(|| self.rt.config.clock.clone());
        let mut staged = Staged::default();
        let (r, report) = self
            .run(
                call,
                inv.policy,
                inv.budget,
                inv.cancel,
                (inv.entropy, clock, inv.sink, inv.scope, inv.retire),
                &mut staged,
            )
            .await;
        let mut rendered = None;
        let outcome = match r {
            Ok(Returned::Executed(Ok(json), r)) => {
                rendered = r.map(|r| {
                    r.map_err(|e| match e {
                        RenderFailure::Failed(f) => f,
                        RenderFailure::Trap(e) => {
                            ToolFailure::new(FailureCode::Trap, format!("{e:#}"))
                        }
                    })
                });
                Ok(json)
            }
            Ok(Returned::Plain(Ok(json))) => Ok(json),
            Ok(Returned::Executed(Err(f), _)) => Err(tool_failed(
                ToolFailure {
                    code: ErrorCode::from_tool(&f.code),
                    message: f.message,
                    info: f.info.and_then(|i| serde_json::from_str(&i).ok()),
                },
                &report,
            )),
            Ok(Returned::Plain(Err(f))) => Err(tool_failed(f, &report)),
            Ok(_) => Err(ToolFailure::new(
                FailureCode::HostError,
                "unexpected return",
            )),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            // A failed call commits nothing: its staged writes go now.
            staged = Staged::default();
        }
        Execution {
            outcome,
            rendered,
            report,
            staged,
        }
    }

    /// Runs the tool's pure `render` in a fresh sandbox that grants nothing
    /// (only the policy's limits apply). `Ok(None)`: use the host's default.
    /// Nothing it can observe varies: its randomness is a fixed stream and
    /// its clocks start at [`toolhost_contract::clock::VIRTUAL_EPOCH_MS`] on
    /// every call.
    pub async fn render(
        &self,
        tool: &str,
        arguments: &str,
        value: &str,
        policy: &ToolPolicy,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        if self.host_renders(tool) {
            // It said it renders nothing: no instance to find that out.
            return Ok(None);
        }
        let mut pure = Policy::deny_all().component();
        pure.limits = policy.limits.clone();
        let budget = Budget {
            fuel: policy.limits.fuel,
            deadline: Duration::from_millis(policy.limits.timeout_ms),
        };
        let call = Call::Render {
            name: tool,
            args: arguments,
            value,
        };
        match self
            .run(
                call,
                &pure,
                budget,
                cancel,
                pure_environment(),
                &mut Staged::default(),
            )
            .await
            .0?
        {
            Returned::Rendered(blocks) => Ok(blocks),
            _ => Err(ToolFailure::new(
                FailureCode::HostError,
                "unexpected return",
            )),
        }
    }

    pub(crate) async fn run(
        &self,
        call: Call<'_>,
        policy: &ToolPolicy,
        budget: Budget,
        cancel: CancellationToken,
        (entropy, clock, sink, scope, retire): Environment,
        staged: &mut Staged,
    ) -> (Result<Returned, ToolFailure>, ExecutionReport) {
        let mut report = ExecutionReport::default();
        if budget.fuel == 0 {
            return (
                Err(ToolFailure::new(
                    FailureCode::FuelExhausted,
                    "the call has no CPU budget",
                )),
                report,
            );
        }
        if budget.deadline.is_zero() {
            return (
                Err(ToolFailure::new(
                    FailureCode::Timeout,
                    "the call has no time budget",
                )),
                report,
            );
        }
        // Wait for a free pool slot (queue, never fail because the pool is
        // busy); the wait does not count against the deadline.
        if cancel.is_cancelled() {
            return (Err(cancelled()), report);
        }
        // A code runner waits for a runner's turn first (see `runners`).
        let _runner = match &scope.tools {
            None => None,
            Some(_) => {
                let _waiting = Queued::enter(&self.rt.queued);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return (Err(cancelled()), report),
                    permit = self.rt.runners.clone().acquire_owned() => match permit {
                        Ok(p) => Some(p),
                        Err(_) => return (Err(shutting_down()), report),
                    },
                }
            }
        };
        let slot = match self.rt.slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return (Err(shutting_down()), report),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let _waiting = Queued::enter(&self.rt.queued);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return (Err(cancelled()), report),
                    permit = self.rt.slots.clone().acquire_owned() => match permit {
                        Ok(p) => p,
                        Err(_) => return (Err(shutting_down()), report),
                    },
                }
            }
        };
        self.rt
            .instances
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ticking = self.rt.ticker.enter();
        let started = Instant::now();
        let t_start = clock.monotonic_ns();
        let state = match HostState::build(
            policy,
            &self.rt.config,
            entropy,
            clock.clone(),
            cancel.clone(),
            sink,
            scope,
        ) {
            Ok(s) => s,
            Err(e) => {
                return (
                    Err(ToolFailure::new(FailureCode::HostError, e.to_string())),
                    report,
                );
            }
        };
        let moved = state.deadline_moved();
        let mut store = Store::new(&self.rt.engine, state);
        store.limiter(|s| s.limiter());
        if let Err(e) = store.set_fuel(budget.fuel) {
            return (
                Err(ToolFailure::new(FailureCode::HostError, format!("{e:#}"))),
                report,
            );
        }
        // The epoch ticks only say when to look; the deadline itself is the
        // wall clock. Counting ticks instead let a deadline stretch with the
        // ticker's oversleep under load (8 s became up to 8.46 s with four
        // guests spinning on two cores).
        store
            .data_mut()
            .set_deadline(started.checked_add(budget.deadline));
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut ctx| {
            let s = ctx.data_mut();
            if s.cancelled() {
                return Err(wasmtime::Error::new(CallCancelled));
            }
            if s.past_deadline() {
                return Ok(UpdateDeadline::Interrupt);
            }
            // Yield so other tasks (and this call's cancellation) make progress.
            Ok(UpdateDeadline::Yield(1))
        });

        let mut instantiated = None;
        let result: Result<wasmtime::Result<Returned>, FailureCode> = {
            // Boxed: the calls' futures are large, and every future that
            // holds this one (up through the pipeline) would carry and move
            // their bytes.
            let fut = Box::pin(async {
                let t0 = clock.monotonic_ns();
                let instance = self
                    .kind
                    .instance_pre()
                    .instantiate_async(&mut store)
                    .await?;
                instantiated = Some(clock.monotonic_ns().saturating_sub(t0));
                let provider = match (&self.kind, call) {
                    (Kind::Plain { .. }, Call::Plain { function, params }) => {
                        let func = instance
                            .get_func(&mut store, function.index)
                            .ok_or_else(|| wasmtime::format_err!("the function is not exported"))?;
                        let mut results = vec![Val::Bool(false); function.result.iter().count()];
                        func.call_async(&mut store, &params, &mut results).await?;
                        return Ok(Returned::Plain(plain::outcome(function, &results)));
                    }
                    (Kind::Contract(p), call) => (p, call),
                    (Kind::Plain { .. }, _) => {
                        return Err(wasmtime::format_err!(
                            "a plain component has no list-tools or render to call"
                        ));
                    }
                };
                let (provider, call) = provider;
                let ix = &provider.exports;
                /// The call through one version's types. Only the functions
                /// called are loaded (each load type-checks its function).
                macro_rules! dispatch {
                    ($v:ident) => {{
                        type Failure = crate::bindings::$v::types::ToolFailure;
                        type Block = crate::bindings::$v::types::ContentBlock;
                        type Descriptor = crate::bindings::$v::types::ToolDescriptor;
                        let execute_fn = |store: &mut Store<HostState>| {
                            instance.get_typed_func::<(&str, &str), (Result<String, Failure>,)>(
                                store,
                                &ix.execute,
                            )
                        };
                        let render_fn = |store: &mut Store<HostState>| {
                            instance.get_typed_func::<(&str, &str, &str), (Option<Vec<Block>>,)>(
                                store, &ix.render,
                            )
                        };
                        let blocks = |b: Option<Vec<Block>>| {
                            b.map(|b| b.into_iter().map(ContentBlock::from).collect())
                        };
                        match call {
                            Call::ListTools => {
                                // At load: every function's type is checked
                                // here once, so a mistyped one fails the load.
                                let list = instance.get_typed_func::<(), (Vec<Descriptor>,)>(
                                    &mut store,
                                    &ix.list_tools,
                                )?;
                                execute_fn(&mut store)?;
                                render_fn(&mut store)?;
                                let (tools,) = list.call_async(&mut store, ()).await?;
                                Returned::Tools(tools.into_iter().map(Into::into).collect())
                            }
                            Call::Execute { name, args, render } => {
                                let execute = execute_fn(&mut store)?;
                                let (out,) = execute.call_async(&mut store, (name, args)).await?;
                                let out: Result<String, RawFailure> = out.map_err(Into::into);
                                let rendered = match (&out, render) {
                                    (Ok(value), true) => Some(
                                        async {
                                            let f = render_fn(&mut store)?;
                                            f.call_async(&mut store, (name, args, value.as_str()))
                                                .await
                                        }
                                        .await
                                        .map(|(b,)| blocks(b))
                                        .map_err(RenderFailure::Trap),
                                    ),
                                    _ => None,
                                };
                                Returned::Executed(out, rendered)
                            }
                            Call::Render { name, args, value } => {
                                let f = render_fn(&mut store)?;
                                let (b,) = f.call_async(&mut store, (name, args, value)).await?;
                                Returned::Rendered(blocks(b))
                            }
                            Call::Plain { .. } => {
                                return Err(wasmtime::format_err!(
                                    "a plain function call reached a contract component"
                                ));
                            }
                        }
                    }};
                }
                Ok(match provider.version {
                    Version::V1 => dispatch!(v1),
                    Version::V2 => dispatch!(v2),
                    Version::V3 => dispatch!(v3),
                    Version::V4 => dispatch!(v4),
                    Version::V5 => dispatch!(v5),
                })
            });
            let backstop = started + budget.deadline + BACKSTOP_GRACE;
            tokio::select! {
                biased;
                r = within(backstop, &moved, fut) => r.ok_or(FailureCode::Timeout),
                () = cancel.cancelled() => Err(FailureCode::Cancelled),
            }
        };

        report.fuel_consumed = budget.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let produced = store.data_mut().finish();
        report.instantiate = Duration::from_nanos(instantiated.unwrap_or_default());
        report.elapsed = Duration::from_nanos(clock.monotonic_ns().saturating_sub(t_start));
        let outcome = match result {
            Ok(Ok(Returned::Executed(out, Some(Err(RenderFailure::Trap(e)))))) => {
                let f = classify(&e, &produced, budget, policy);
                Ok(Returned::Executed(out, Some(Err(RenderFailure::Failed(f)))))
            }
            // A tool that failed after `context.cancelled` told it to stop
            // stopped as asked: the call was cancelled, or timed out, as if
            // the host had stopped it (its own code would say `cancelled`
            // for a deadline, and a retry wrapper could take it for the
            // tool's own failure).
            Ok(Ok(Returned::Executed(Err(_), _))) if produced.told_to_stop => {
                Err(if cancel.is_cancelled() {
                    cancelled()
                } else {
                    timeout(budget)
                })
            }
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(classify(&e, &produced, budget, policy)),
            Err(FailureCode::Cancelled) => Err(cancelled()),
            Err(_) => Err(timeout(budget)),
        };
        report.stdout = produced.stdout;
        report.stderr = produced.stderr;
        report.network_denied = produced.network_denied;
        report.bytes_written = produced.bytes_written;
        report.entries_created = produced.entries_created;
        (report.context, report.context_dropped) = produced.context;
        if let Err(f) = &outcome {
            tracing::info!(code = %f.code, fuel = report.fuel_consumed, "call failed in sandbox");
        } else {
            *staged = produced.staged;
        }
        // The store, and the pool slot after it (a tuple drops in order),
        // end now or once the response is out (see `retire`).
        crate::retire::retire((store, slot), retire.as_ref());
        (outcome, report)
    }
}

/// A compile error, with what it means when the component is built for
/// WASI 0.3 (async functions, streams, futures): this host runs WASI 0.2
/// components (its wasmtime is built without the component model's async
/// ABI, which WASI 0.3's sandboxed file system and HTTP would also need
/// this host's own mediation for).
fn wasi_03_hint(reason: String) -> String {
    if reason.contains("component model async feature") {
        format!(
            "{reason}: it is built for WASI 0.3 (async functions); toolhost runs WASI 0.2 \
             components (rebuild it for wasm32-wasip2)"
        )
    } else {
        reason
    }
}

/// A failure the tool reported itself, unless the policy refused a
/// request it made: then that refusal is why it failed (the tool's own
/// message goes into `info`).
fn tool_failed(f: ToolFailure, report: &ExecutionReport) -> ToolFailure {
    if report.network_denied.is_empty() {
        return f;
    }
    ToolFailure::new(
        FailureCode::NetworkDenied,
        format!(
            "request to {} denied by policy (not on the network allow-list)",
            report.network_denied.join(", ")
        ),
    )
    .with_info(serde_json::json!({"denied": report.network_denied, "toolMessage": f.message}))
}

/// What one declared tool weighs, for the descriptor bounds.
fn sizes(t: &RawTool) -> DeclaredSizes<'_> {
    DeclaredSizes {
        name: &t.name,
        description: t.description.len(),
        title: t.title.as_ref().map_or(0, String::len),
        input_schema: t.input_schema.len(),
        output_schema: t.output_schema.len(),
        pointers: t.paths.iter().map(|p| p.pointer.len()).sum::<usize>()
            + t.urls.iter().map(String::len).sum::<usize>(),
    }
}

/// Grace after the deadline before the tokio backstop gives up on a guest
/// blocked inside a host call (where epoch interruption cannot reach it).
const BACKSTOP_GRACE: Duration = Duration::from_millis(200);

/// `fut`'s output, or `None` once `until` (moved on by `moved`
/// nanoseconds, which may grow meanwhile) has passed. The timer is armed
/// only when `fut` does not finish in its first poll: most calls never
/// yield, and registering a timer and removing it again took the timer
/// wheel's lock twice per call for nothing.
async fn within<F: std::future::Future>(
    until: Instant,
    moved: &std::sync::atomic::AtomicU64,
    fut: F,
) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(out) = first {
        return Some(out);
    }
    let at = || until + Duration::from_nanos(moved.load(std::sync::atomic::Ordering::Relaxed));
    loop {
        let deadline = at();
        match tokio::time::timeout_at(deadline.into(), fut.as_mut()).await {
            Ok(out) => return Some(out),
            // Moved on while it waited (a person was answering): wait on.
            Err(_) if at() > deadline => {}
            Err(_) => return None,
        }
    }
}

/// Counts a call as waiting for a pool slot until dropped.
struct Queued<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Queued<'a> {
    fn enter(count: &'a std::sync::atomic::AtomicUsize) -> Queued<'a> {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Queued(count)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn within_gives_the_output_of_a_future_that_finishes_in_time() {
        let soon = Instant::now() + Duration::from_secs(5);
        let moved = std::sync::atomic::AtomicU64::new(0);
        assert_eq!(within(soon, &moved, async { 7 }).await, Some(7));
        // Pending at the first poll, done after a yield: the timer path.
        let yielded = async {
            tokio::task::yield_now().await;
            8
        };
        assert_eq!(within(soon, &moved, yielded).await, Some(8));
    }

    #[tokio::test]
    async fn within_gives_up_on_a_future_that_never_finishes() {
        let t = Instant::now();
        let until = t + Duration::from_millis(30);
        let moved = std::sync::atomic::AtomicU64::new(0);
        assert_eq!(
            within(until, &moved, std::future::pending::<()>()).await,
            None
        );
        assert!(t.elapsed() >= Duration::from_millis(30));
    }

    #[tokio::test]
    async fn within_waits_on_when_the_deadline_moves() {
        let t = Instant::now();
        let moved = std::sync::atomic::AtomicU64::new(0);
        let slow = async {
            // Past the first deadline, and before the moved one.
            moved.fetch_add(200_000_000, std::sync::atomic::Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(60)).await;
            9
        };
        let out = within(t + Duration::from_millis(30), &moved, slow).await;
        assert_eq!(out, Some(9));
    }
}
