//! The one place a host is assembled: toolbox → components → policies →
//! registry. The CLI, the MCP server, the demo and the tests all go through
//! [`Host::load`], so they serve the same tools under the same rules.
//!
//! A tool that can never run under its policy (the policy denies it, or its
//! component imports an interface the policy does not grant) is not
//! registered, so it is never advertised; the [`LoadReport`] says why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ContentBlock, ToolDescriptor, ToolFailure, valid_name};
use toolhost_effects::{Journal, Recovery};
use toolhost_pipeline::bound::Artifacts;
use toolhost_pipeline::{
    Availability, Invocation, Pipeline, PipelineBuilder, Registration, Registry, RegistryError,
    Scope, ToolBody, ToolSpec,
};
use toolhost_policy::{Decision, Isolation, Policy, ToolPolicy, Walls};
use toolhost_runtime::{
    CompileProgress, Execution, LoadError, LoadedComponent, Runtime, RuntimeConfig,
};

use crate::file::{Advertise, ComponentEntry, PolicySource, Source, Toolbox};
use crate::load::{Listing, listing, load_listed, placement, resolve_policy};
use crate::model::SearchModel;
use crate::remote::{Pin, Provenance, ProvenanceMap};

// Part of the host's public API (`toolhost_toolbox::host::…`); each is
// defined beside what it belongs with.
pub use crate::dirs::{default_cache_dir, default_journal_dir};
pub use crate::discover::{embedded_default, find_toolbox, watched_files};
pub use crate::error::HostError;
pub use crate::load::load_component_file;

/// Settings of a [`Host`].
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Compiled-component cache; `None` compiles on every load.
    pub cache_dir: Option<PathBuf>,
    /// Instances alive at once (calls beyond it queue).
    pub max_instances: u32,
    /// Bytes of truncated-result overflow kept for paging, shared by every
    /// session of this host.
    pub artifact_capacity: usize,
    /// Keep artifacts in this directory instead of in memory: replicas
    /// that share it serve each other's artifacts to their owners.
    pub artifacts_dir: Option<PathBuf>,
    /// Told when a component must be compiled (see [`CompileProgress`]).
    pub on_compile: Option<Arc<dyn CompileProgress>>,
    /// Where remote components are kept (content-addressed; default
    /// `~/.cache/toolhost/store`).
    pub store_dir: Option<PathBuf>,
    /// The journal of committed file effects, for crash recovery and undo
    /// (`None`: `journal` in the cache directory, else in the default one,
    /// else in the system's temporary directory).
    pub journal_dir: Option<PathBuf>,
    /// Flush every commit to disk step by step, so it is all or nothing
    /// across a power loss too (see [`Journal::with_sync`]).
    pub journal_sync: bool,
    /// Start a worker for each component that runs in workers as soon as
    /// it loads, so that its first call finds one ready (a server's
    /// choice; a one-shot call would only pay for it).
    pub warm_workers: bool,
    /// Where the search's model comes from (see [`crate::model`]): read
    /// in the background once a toolbox defers tools. Default: what
    /// `TOOLHOST_SEARCH_MODEL` says, else fetched into `store_dir`.
    pub search_model: SearchModel,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            store_dir: crate::dirs::default_store_dir(),
            cache_dir: default_cache_dir(),
            max_instances: RuntimeConfig::default().max_instances,
            artifact_capacity: toolhost_pipeline::bound::DEFAULT_ARTIFACT_CAPACITY,
            artifacts_dir: None,
            on_compile: None,
            journal_dir: None,
            journal_sync: false,
            warm_workers: false,
            search_model: SearchModel::from_env(),
        }
    }
}

/// A tool the host serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedTool {
    /// Its name as advertised (prefix included).
    pub name: String,
    /// The component it comes from (`builtin:read` or a path).
    pub component: String,
    /// What its policy decides for a call.
    pub decision: Decision,
    /// Not advertised: callable by name, found by `search_tools`.
    pub deferred: bool,
    /// Where its calls run.
    pub isolation: Isolation,
}

/// A tool a component declares that is not served, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// Its name (prefix included).
    pub name: String,
    /// The component.
    pub component: String,
    /// Why it can never run.
    pub reason: String,
}

/// What a load served, skipped and should watch for changes.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Served tools, sorted by name.
    pub served: Vec<ServedTool>,
    /// Declared tools that can never run under their policy.
    pub skipped: Vec<SkippedTool>,
    /// The component and policy files the toolbox names, whose change
    /// should reload it (a watcher adds the toolbox file itself, which it
    /// knows by path; `origin` is only a name for messages).
    pub watch: Vec<PathBuf>,
    /// Components that did not load (a first start serves the others), by
    /// origin, with why.
    pub failed: Vec<(String, String)>,
    /// Where each remote component's bytes came from, by origin.
    pub provenance: ProvenanceMap,
    /// What a person should look at in what the served components declare
    /// (see [`crate::descriptors`]): characters a person cannot see,
    /// escaped; a description naming another component's tool (possible
    /// shadowing); descriptors changed since the previous load (a hot
    /// reload). One line each.
    pub warnings: Vec<String>,
}

/// A runtime, a registry and the toolbox currently served.
pub struct Host {
    runtime: Runtime,
    registry: Registry,
    artifacts: Arc<Artifacts>,
    /// Checkpoints of scripts waiting for an answer (never served as
    /// resources).
    checkpoints: Arc<Artifacts>,
    current: Mutex<Current>,
    store_dir: Option<PathBuf>,
    journal: Arc<Journal>,
    recovery: Recovery,
    /// `HostConfig::journal_sync`, the default under a toolbox.
    journal_sync: bool,
    /// The served toolbox's `[tasks]`.
    tasks: Mutex<toolhost_toolbox_file::TaskSettings>,
    /// `HostConfig::warm_workers`.
    warm_workers: bool,
    /// `HostConfig::search_model`.
    search_model: SearchModel,
    /// Whether the search model's loading has started.
    model_started: std::sync::atomic::AtomicBool,
    /// The tools' embeddings on disk (in the cache directory).
    embeddings: Option<crate::model::EmbeddingCache>,
}

#[derive(Default)]
struct Current {
    registration: Option<Registration>,
    report: LoadReport,
    components: Vec<Arc<LoadedComponent>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

/// One component entry, loaded, with its policy resolved.
struct Prepared {
    /// Its place in the toolbox.
    index: usize,
    entry: ComponentEntry,
    component: Arc<LoadedComponent>,
    policy: Policy,
    /// Its tools as served: what the component declares, with what its
    /// policy declares about them ([`crate::declare`]).
    tools: Vec<ToolDescriptor>,
}

impl Host {
    /// A host with an empty registry.
    pub fn new(config: HostConfig) -> Result<Host, HostError> {
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: config.cache_dir.clone(),
            max_instances: config.max_instances,
            on_compile: config.on_compile,
            // Test builds only (and only when asked): see the runtime's
            // `escape-hatch` feature.
            escape_hatch: std::env::var_os("TOOLHOST_TEST_ESCAPE_HATCH").is_some(),
            ..RuntimeConfig::default()
        })?;
        // Finishes or rolls back a commit a killed host left halfway,
        // before anything else touches the files.
        let journal_dir = match (&config.journal_dir, &config.cache_dir) {
            (Some(j), _) => j.clone(),
            (None, Some(c)) => c.join("journal"),
            (None, None) => toolhost_effects::private_dir("journal"),
        };
        // Then what stopped hosts staged goes (a finished or rolled-back
        // commit needs none of it).
        let (journal, recovery) = toolhost_effects::recover(&journal_dir, &runtime.staging_dir())?;
        let journal = journal.with_sync(config.journal_sync);
        for id in &recovery.rolled_forward {
            tracing::warn!(entry = %id, "finished a commit interrupted by the last exit");
        }
        for id in &recovery.rolled_back {
            tracing::warn!(entry = %id, "rolled back a commit interrupted before its commit point");
        }
        if let Some(s) = recovery.staging.summary() {
            if recovery.staging.stuck.is_empty() {
                tracing::info!("staging: {s}");
            } else {
                tracing::warn!("staging: {s}");
            }
        }
        let store = |dir: Option<PathBuf>| match dir {
            None => Ok(Artifacts::with_capacity(config.artifact_capacity)),
            Some(dir) => Artifacts::in_dir(&dir, config.artifact_capacity)
                .map_err(|error| HostError::Artifacts { path: dir, error }),
        };
        let artifacts = store(config.artifacts_dir.clone())?;
        // Beside the artifacts, so replicas that share them resume each
        // other's scripts (a subdirectory: the artifact store lists only
        // its own files).
        let checkpoints = store(config.artifacts_dir.as_ref().map(|d| d.join("checkpoints")))?;
        Ok(Host {
            runtime,
            registry: Registry::new(),
            artifacts: Arc::new(artifacts),
            checkpoints: Arc::new(checkpoints),
            current: Mutex::new(Current::default()),
            store_dir: config.store_dir,
            journal: Arc::new(journal),
            recovery,
            journal_sync: config.journal_sync,
            tasks: Mutex::default(),
            warm_workers: config.warm_workers,
            search_model: config.search_model,
            model_started: Default::default(),
            embeddings: config
                .cache_dir
                .as_deref()
                .map(crate::model::EmbeddingCache::in_dir),
        })
    }

    /// The toolbox's `[journal]` settings over the host's defaults, and its
    /// `[tasks]`.
    fn apply_journal(&self, toolbox: &Toolbox) {
        let j = &toolbox.journal;
        self.journal.set_limits(
            j.max_bytes
                .unwrap_or(toolhost_effects::DEFAULT_MAX_JOURNAL_BYTES),
            j.max_age
                .unwrap_or(toolhost_effects::DEFAULT_MAX_JOURNAL_AGE),
        );
        self.journal.set_sync(j.sync.unwrap_or(self.journal_sync));
        *self.tasks.lock().unwrap_or_else(|e| e.into_inner()) = toolbox.tasks;
    }

    /// The served toolbox's `[tasks]`: when a call becomes an MCP task,
    /// and how long its result is kept.
    pub fn task_settings(&self) -> toolhost_toolbox_file::TaskSettings {
        *self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The journal of committed file effects (history, undo, redo).
    pub fn journal(&self) -> &Arc<Journal> {
        &self.journal
    }

    /// What opening the journal finished or rolled back.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The sandbox runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Starts reading the search's model in the background (fetching it
    /// first when the store lacks it), once per host; the registry says
    /// where it stands ([`Registry::model_state`]). Without a tokio
    /// runtime, or with the model off, nothing starts.
    pub fn start_search_model(&self) {
        if self.search_model == SearchModel::Off
            || self
                .model_started
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.model_started
                .store(false, std::sync::atomic::Ordering::SeqCst);
            return;
        };
        // Said before the task runs, so whoever waits for the model
        // (`Registry::model_resolved`) waits for this load.
        self.registry
            .set_model_state(toolhost_pipeline::ModelState::Loading);
        let (source, registry) = (self.search_model.clone(), self.registry.clone());
        let (store, cache) = (self.store_dir.clone(), self.embeddings.clone());
        rt.spawn(async move {
            crate::model::load(&source, store.as_deref(), &registry, cache.as_ref()).await
        });
    }

    /// The registry every session of this host resolves tools in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The bounded store of truncated results, shared by every session.
    pub fn artifacts(&self) -> &Arc<Artifacts> {
        &self.artifacts
    }

    /// The components currently served.
    pub fn components(&self) -> Vec<Arc<LoadedComponent>> {
        self.lock().components.clone()
    }

    /// What the last successful load served and skipped.
    pub fn report(&self) -> LoadReport {
        self.lock().report.clone()
    }

    /// [`walls_line`] of the current load, without copying its report
    /// (`/readyz` asks on every probe).
    pub fn walls_line(&self) -> String {
        walls_line(&self.lock().report)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pipeline builder for one session over this host's registry and
    /// artifact store. Front ends add their approver, log and listeners.
    pub fn session(&self) -> PipelineBuilder {
        Pipeline::builder(self.registry.clone())
            .artifacts(self.artifacts.clone())
            .checkpoints(self.checkpoints.clone())
            .journal(self.journal.clone())
            .staging_dir(self.runtime.staging_dir())
    }

    /// Loads every component of `toolbox` and serves its tools in place of
    /// whatever was served before, atomically: on any error nothing changes.
    pub async fn load(&self, toolbox: &Toolbox) -> Result<LoadReport, HostError> {
        let toolbox = &with_runner(toolbox)?;
        let sources = self.read_sources(toolbox)?;
        self.apply_journal(toolbox);
        let mut loads = spawn_loads(&self.runtime, toolbox, sources);
        let mut loaded: Vec<Option<Result<Loaded, LoadError>>> =
            (0..toolbox.components.len()).map(|_| None).collect();
        while let Some(joined) = loads.join_next().await {
            match joined {
                Ok((i, r)) => loaded[i] = Some(r),
                Err(e) => {
                    return Err(HostError::Load {
                        origin: toolbox.origin.clone(),
                        line: 0,
                        error: LoadError::Compile {
                            path: PathBuf::from("<load task>"),
                            reason: e.to_string(),
                        },
                    });
                }
            }
        }
        let mut components = Vec::with_capacity(loaded.len());
        let mut provenance = ProvenanceMap::new();
        for (entry, r) in toolbox.components.iter().zip(loaded) {
            match r {
                Some(Ok((c, p))) => {
                    if let Some(p) = p {
                        provenance.insert(entry.source.to_string(), p);
                    }
                    components.push(Some(c));
                }
                Some(Err(error)) => {
                    return Err(HostError::Load {
                        origin: toolbox.origin.clone(),
                        line: entry.line,
                        error,
                    });
                }
                None => return Err(unreachable_load(toolbox, entry)),
            }
        }
        let prepared = prepare(toolbox, components)?;
        let mut assembled = assemble(toolbox, &prepared, Strictness::Strict, &self.registry)?;
        assembled.report.provenance = provenance;
        self.install(assembled, &prepared, Vec::new(), Vec::new(), &|| {})
    }

    /// Starts serving `toolbox` without waiting for its components to
    /// compile: what can be checked at once is (the toolbox's policies, its
    /// component files readable), and an error there is returned now; each
    /// component then loads in the background and its tools are served as
    /// soon as it is ready, `on_change` being called after each change of
    /// the tools. Meanwhile the registry says which components are still
    /// loading ([`Registry::is_loading`]): lookup and `tools/list` wait for
    /// them. A component that fails to load is reported, not served, and
    /// does not stop the others (a name declared twice is served from the
    /// first component in the toolbox).
    pub fn start(
        self: &Arc<Self>,
        toolbox: Toolbox,
        on_change: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Startup, HostError> {
        let toolbox = with_runner(&toolbox)?;
        let sources = self.read_sources(&toolbox)?;
        self.apply_journal(&toolbox);
        for entry in &toolbox.components {
            resolve_policy(&toolbox, entry)?;
        }
        let origins: Vec<String> = toolbox
            .components
            .iter()
            .map(|e| e.source.to_string())
            .collect();
        self.registry.set_availability(Availability {
            loading: origins.clone(),
            ..self.registry.availability()
        });
        let (done, finished) = tokio::sync::watch::channel(None);
        let host = self.clone();
        tokio::spawn(async move {
            let report = host.load_progressively(&toolbox, sources, &on_change).await;
            let _ = done.send(Some(report));
        });
        Ok(Startup { finished })
    }

    async fn load_progressively(
        &self,
        toolbox: &Toolbox,
        sources: Vec<Loadable>,
        on_change: &Arc<dyn Fn() + Send + Sync>,
    ) -> LoadReport {
        let n = toolbox.components.len();
        let mut loads = spawn_loads(&self.runtime, toolbox, sources);
        let mut components: Vec<Option<Arc<LoadedComponent>>> = (0..n).map(|_| None).collect();
        let mut provenance = ProvenanceMap::new();
        let mut pending: Vec<bool> = vec![true; n];
        let mut failed: Vec<(usize, String)> = Vec::new();
        let mut report = LoadReport::default();
        while let Some(joined) = loads.join_next().await {
            match joined {
                Ok((i, r)) => {
                    pending[i] = false;
                    match r {
                        Ok((c, p)) => {
                            if let Some(p) = p {
                                provenance.insert(toolbox.components[i].source.to_string(), p);
                            }
                            components[i] = Some(c);
                        }
                        Err(e) => failed.push((i, e.to_string())),
                    }
                }
                Err(e) => {
                    // A load task panicked: which one is unknown, so every
                    // component still pending fails with it.
                    for (i, p) in pending.iter_mut().enumerate() {
                        if std::mem::take(p) {
                            failed.push((i, format!("its load task failed: {e}")));
                        }
                    }
                }
            }
            let loading: Vec<String> = toolbox
                .components
                .iter()
                .zip(&pending)
                .filter(|(_, p)| **p)
                .map(|(e, _)| e.source.to_string())
                .collect();
            report = self.serve_ready(toolbox, &components, &mut failed, loading, on_change);
            report.provenance = provenance.clone();
            self.lock().report.provenance = provenance.clone();
        }
        // Nothing is loading any more, even if serving failed somewhere:
        // nobody may wait for it.
        if self.registry.is_loading() {
            self.registry.set_availability(Availability {
                loading: Vec::new(),
                ..self.registry.availability()
            });
        }
        report
    }

    /// Serves the components loaded so far (the rest are `loading`); a
    /// component whose tools cannot be served joins `failed`.
    fn serve_ready(
        &self,
        toolbox: &Toolbox,
        components: &[Option<Arc<LoadedComponent>>],
        failed: &mut Vec<(usize, String)>,
        loading: Vec<String>,
        on_change: &Arc<dyn Fn() + Send + Sync>,
    ) -> LoadReport {
        loop {
            let ready: Vec<Option<Arc<LoadedComponent>>> = components
                .iter()
                .enumerate()
                .map(|(i, c)| c.clone().filter(|_| !failed.iter().any(|(f, _)| *f == i)))
                .collect();
            let prepared = match prepare(toolbox, ready) {
                Ok(p) => p,
                // Policies were checked before loading started.
                Err(e) => {
                    tracing::error!("{e}");
                    return LoadReport::default();
                }
            };
            let result = assemble(
                toolbox,
                &prepared,
                Strictness::Lenient(failed),
                &self.registry,
            )
            .and_then(|a| {
                let failed = failed
                    .iter()
                    .map(|(i, why)| (toolbox.components[*i].source.to_string(), why.clone()))
                    .collect();
                self.install(a, &prepared, failed, loading.clone(), &**on_change)
            });
            match result {
                Ok(report) => return report,
                // A schema the registry cannot compile: that component is
                // not served; try again without it.
                Err(HostError::Registry(e)) => {
                    let tool = match &e {
                        RegistryError::Schema { tool, .. } | RegistryError::Duplicate(tool) => {
                            tool.clone()
                        }
                        _ => String::new(),
                    };
                    let culprit = prepared.iter().find(|p| {
                        p.component
                            .tools()
                            .iter()
                            .any(|d| prefixed(&p.entry, &d.name) == tool)
                    });
                    match culprit {
                        Some(p) => failed.push((p.index, e.to_string())),
                        None => {
                            tracing::error!("{e}");
                            return LoadReport::default();
                        }
                    }
                }
                Err(e) => {
                    tracing::error!("{e}");
                    return LoadReport::default();
                }
            }
        }
    }

    /// Registers `assembled` in place of what was served, and records it
    /// with the components that `failed` and those still `loading`.
    /// `on_change` is called once the new tools are registered and before
    /// the registry says what is loading: whoever waits for the load to
    /// settle lists after the change is announced, not before.
    fn install(
        &self,
        assembled: Assembled,
        prepared: &[Prepared],
        failed: Vec<(String, String)>,
        loading: Vec<String>,
        on_change: &dyn Fn(),
    ) -> Result<LoadReport, HostError> {
        let Assembled {
            specs,
            mut report,
            mode,
            language,
            workers,
        } = assembled;
        let mut current = self.lock();
        let new: Vec<Arc<LoadedComponent>> = prepared.iter().map(|p| p.component.clone()).collect();
        report
            .warnings
            .extend(crate::descriptors::changes(&current.components, &new));
        let registration = match &current.registration {
            Some(old) => self.registry.replace(old, Scope::Global, specs)?,
            None => self.registry.register(Scope::Global, specs)?,
        };
        current.registration = Some(registration);
        self.registry.set_mode(mode);
        self.registry.set_language(language);
        current.components = new;
        report.failed = failed.clone();
        current.report = report.clone();
        drop(current);
        on_change();
        self.registry.set_availability(Availability {
            unserved: report
                .skipped
                .iter()
                .map(|s| (s.name.clone(), s.reason.clone()))
                .collect(),
            loading,
            failed,
        });
        // The search index, built now rather than by the first search
        // (15 ms for a thousand tools), off the caller's thread; and the
        // model that makes the search hybrid, read in the background.
        if report.served.iter().any(|s| s.deferred) {
            self.start_search_model();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let (registry, cache) = (self.registry.clone(), self.embeddings.clone());
                rt.spawn(async move { crate::model::index(&registry, cache.as_ref()).await });
            }
        }
        // A worker per component served in workers, started now so that
        // its first call finds one ready.
        if self.warm_workers
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            for (origin, body) in workers {
                if body.available().is_err() {
                    continue;
                }
                rt.spawn(async move {
                    if let Err(f) = body.prestart().await {
                        tracing::warn!(component = %origin, "no warm worker: {}", f.message);
                    }
                });
            }
        }
        Ok(report)
    }
}

/// A toolbox being served while its components load ([`Host::start`]).
#[derive(Debug, Clone)]
pub struct Startup {
    finished: tokio::sync::watch::Receiver<Option<LoadReport>>,
}

impl Startup {
    /// Waits until every component loaded (or failed); what was served.
    pub async fn finished(&self) -> LoadReport {
        let mut rx = self.finished.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(report) => report.clone().unwrap_or_default(),
            // The loading task is gone without a report (the runtime shut
            // down): nothing more will load.
            Err(_) => LoadReport::default(),
        }
    }
}

/// What a component's bytes come from.
enum Loadable {
    /// A file, read.
    File(PathBuf, Vec<u8>),
    /// An embedded built-in.
    Builtin(&'static toolhost_builtins::Builtin),
    /// A remote component, pinned by the lock (fetched when loaded).
    Remote(Box<Pin>, toolhost_registry::Store),
}

/// A loaded component, and where its bytes came from when it is remote.
type Loaded = (Arc<LoadedComponent>, Option<Provenance>);

impl Loadable {
    /// How many bytes it has to compile, if it must be compiled.
    fn size(&self) -> usize {
        match self {
            Loadable::File(_, bytes) => bytes.len(),
            Loadable::Builtin(b) => b.wasm.len(),
            // Unknown until fetched: after the local ones.
            Loadable::Remote(..) => usize::MAX,
        }
    }
}

/// The sources with their places in the toolbox, smallest first: the
/// runtime compiles one component at a time in the order asked, so the
/// small ones are served while a large one still compiles.
fn smallest_first(sources: Vec<Loadable>) -> Vec<(usize, Loadable)> {
    let mut indexed: Vec<(usize, Loadable)> = sources.into_iter().enumerate().collect();
    indexed.sort_by_key(|(_, s)| s.size());
    indexed
}

/// Loads `sources` (the components of `toolbox`, in its order) in
/// parallel, each load independent of the others (compilations take turns,
/// smallest first); each task answers with its component's index.
fn spawn_loads(
    runtime: &Runtime,
    toolbox: &Toolbox,
    sources: Vec<Loadable>,
) -> JoinSet<(usize, Result<Loaded, LoadError>)> {
    let mut loads = JoinSet::new();
    let shared = Arc::new(toolbox.clone());
    for (i, source) in smallest_first(sources) {
        let rt = runtime.clone();
        let toolbox = shared.clone();
        let listing = listing(&toolbox, &toolbox.components[i]);
        loads.spawn(async move { (i, load_source(&rt, source, &toolbox, &listing).await) });
    }
    loads
}

/// Loads one component: fetched first when it is remote (and its tools
/// checked against the lock's pins), listed where `listing` says.
async fn load_source(
    rt: &Runtime,
    source: Loadable,
    toolbox: &Toolbox,
    listing: &Listing,
) -> Result<Loaded, LoadError> {
    match source {
        Loadable::File(path, bytes) => Ok((load_listed(rt, &path, bytes, listing).await?, None)),
        Loadable::Builtin(b) => Ok((
            rt.load_precompiled(Path::new(&b.origin()), b.wasm, b.precompiled)
                .await?,
            None,
        )),
        Loadable::Remote(pin, store) => {
            let origin = PathBuf::from(pin.source.to_string());
            let (bytes, provenance) =
                crate::remote::fetch(&pin, toolbox, &store)
                    .await
                    .map_err(|reason| LoadError::Read {
                        path: origin.clone(),
                        source: std::io::Error::other(reason),
                    })?;
            let loaded = load_listed(rt, &origin, bytes, listing).await?;
            if let Some(pinned) = &pin.locked.tools {
                crate::descriptors::check_pins(&loaded, pinned).map_err(|reason| {
                    LoadError::Pinned {
                        path: origin.clone(),
                        reason,
                    }
                })?;
            }
            Ok((loaded, Some(provenance)))
        }
    }
}

impl Host {
    /// Every component's bytes, or its pin (a missing file, an unknown
    /// built-in or an unlocked remote source is an error now, naming its
    /// toolbox line).
    fn read_sources(&self, toolbox: &Toolbox) -> Result<Vec<Loadable>, HostError> {
        let lock = crate::remote::lock_of(toolbox)?;
        let store = if toolbox.has_remote() {
            Some(crate::remote::open_store(self.store_dir.as_deref())?)
        } else {
            None
        };
        toolbox
            .components
            .iter()
            .map(|entry| {
                let error = |error: LoadError| HostError::Load {
                    origin: toolbox.origin.clone(),
                    line: entry.line,
                    error,
                };
                match &entry.source {
                    Source::File(path) => std::fs::read(path)
                        .map(|bytes| Loadable::File(path.clone(), bytes))
                        .map_err(|source| {
                            error(LoadError::Read {
                                path: path.clone(),
                                source,
                            })
                        }),
                    Source::Builtin(name) => toolhost_builtins::get(name)
                        .map(Loadable::Builtin)
                        .ok_or_else(|| {
                            error(LoadError::Read {
                                path: PathBuf::from(format!("builtin:{name}")),
                                source: std::io::Error::new(
                                    std::io::ErrorKind::NotFound,
                                    "no such built-in tool",
                                ),
                            })
                        }),
                    Source::Oci(_) | Source::Https { .. } => {
                        let pin = crate::remote::pin(toolbox, entry, lock.as_ref())?;
                        let store = store.clone().ok_or_else(|| HostError::Remote {
                            origin: toolbox.origin.clone(),
                            line: entry.line,
                            source_name: entry.source.to_string(),
                            reason: "no component store".into(),
                        })?;
                        Ok(Loadable::Remote(Box::new(pin), store))
                    }
                }
            })
            .collect()
    }
}

/// The loaded components (`None`: not loaded, left out) with their policies.
fn prepare(
    toolbox: &Toolbox,
    components: Vec<Option<Arc<LoadedComponent>>>,
) -> Result<Vec<Prepared>, HostError> {
    let mut prepared = Vec::new();
    for (index, (entry, component)) in toolbox.components.iter().zip(components).enumerate() {
        let Some(component) = component else {
            continue;
        };
        let policy = resolve_policy(toolbox, entry)?;
        let tools =
            crate::declare::apply(component.tools(), &policy).map_err(|e| HostError::Policy {
                origin: toolbox.origin.clone(),
                line: entry.line,
                source_name: entry.source.to_string(),
                error: Box::new(e),
            })?;
        prepared.push(Prepared {
            index,
            entry: entry.clone(),
            component,
            policy,
            tools,
        });
    }
    Ok(prepared)
}

/// How [`assemble`] treats a component whose tools cannot be served as
/// named (a bad prefixed name, a name another component declared).
enum Strictness<'a> {
    /// The whole load fails (hot reload and the CLI: all or nothing).
    Strict,
    /// The component is left out and joins the failed ones (a first start
    /// serving what it can).
    Lenient(&'a mut Vec<(usize, String)>),
}

/// The specs to register and the report of a set of prepared components.
struct Assembled {
    specs: Vec<ToolSpec>,
    report: LoadReport,
    /// How the tools are offered (the toolbox's mode).
    mode: toolhost_policy::Mode,
    /// Code mode's language (the toolbox's).
    language: toolhost_policy::Language,
    /// The components served in workers, by origin (started warm once
    /// installed, when the host is asked to).
    workers: Vec<(String, Arc<toolhost_worker::Isolated>)>,
}

/// `toolbox` with the code runner of its language among its components
/// when its mode serves `run_code` and it does not name the runner itself
/// (naming it sets its policy). A named runner of another language (the
/// file's, with `--language` saying otherwise) is refused at its line.
fn with_runner(toolbox: &Toolbox) -> Result<Toolbox, HostError> {
    let mut toolbox = toolbox.clone();
    if let Some(entry) = toolbox.components.iter().find(|e| is_runner(e)) {
        let runs = entry.source.runner_language();
        if runs != Some(toolbox.language) {
            return Err(HostError::Toolbox(Box::new(
                toolhost_toolbox_file::ToolboxError {
                    line: Some(entry.line),
                    column: Some(1),
                    ..toolhost_toolbox_file::ToolboxError::new(
                        &toolbox.origin,
                        format!(
                            "`{}` runs {}, but code mode's language is {}",
                            entry.source,
                            runs.map_or("another language", |l| l.as_str()),
                            toolbox.language
                        ),
                    )
                },
            )));
        }
    } else if toolbox.mode.runs_code() {
        toolbox.components.push(ComponentEntry {
            source: Source::runner(toolbox.language),
            policy: PolicySource::BuiltinDefault,
            prefix: None,
            advertise: Default::default(),
            line: 0,
        });
    }
    Ok(toolbox)
}

/// Whether `entry` is a built-in code runner.
fn is_runner(entry: &ComponentEntry) -> bool {
    entry.source.runner_language().is_some()
}

/// `name` as `entry` serves it (its prefix first).
fn prefixed(entry: &ComponentEntry, name: &str) -> String {
    match &entry.prefix {
        Some(prefix) => format!("{prefix}{name}"),
        None => name.to_owned(),
    }
}

/// Decides what is served: every declared tool that can run under its
/// policy, under its (prefixed) name; names clash across components.
fn assemble(
    toolbox: &Toolbox,
    prepared: &[Prepared],
    mut strictness: Strictness<'_>,
    registry: &Registry,
) -> Result<Assembled, HostError> {
    let mut specs = Vec::new();
    let mut workers = Vec::new();
    let mut served = Vec::new();
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    // Every file the toolbox names, loaded or not: a fix to a component
    // that failed is a change to reload for.
    let mut report = LoadReport {
        watch: watched_files(toolbox),
        ..LoadReport::default()
    };
    // The runners' specs, to declare the tools their scripts may call once
    // every component is in.
    let mut runners = Vec::new();
    // Each spec's component's `advertise` (`Auto` left only to the
    // components not built in): which tools are deferred is known once
    // every component is in.
    let mut advertise: Vec<Advertise> = Vec::new();
    // The runner comes last wherever it is listed: a tool already named
    // `run_code` keeps the name, and the runner is the one refused.
    let (listed_runners, others): (Vec<&Prepared>, Vec<&Prepared>) =
        prepared.iter().partition(|p| is_runner(&p.entry));
    'components: for p in others.into_iter().chain(listed_runners) {
        let origin = p.entry.source.to_string();
        let runner = is_runner(&p.entry);
        if runner && !toolbox.mode.runs_code() {
            report.warnings.push(format!(
                "{origin} ({}:{}) is listed, but the toolbox's mode is native: `run_code` is \
                 not served (set mode = \"code\" or \"both\")",
                toolbox.origin, p.entry.line
            ));
            continue;
        }
        if runner && p.entry.prefix.is_some() {
            report.warnings.push(format!(
                "{origin} ({}:{}): a prefix is ignored: `run_code` is code mode's reserved name",
                toolbox.origin, p.entry.line
            ));
        }
        let at = match runner {
            true => format!("{origin} (code mode's reserved tool)"),
            false => format!("{origin} ({}:{})", toolbox.origin, p.entry.line),
        };
        // The runner's tool keeps its reserved name.
        let named = |d: &ToolDescriptor| match runner {
            true => d.name.clone(),
            false => prefixed(&p.entry, &d.name),
        };
        // Checked whole first, so a component is served entirely or not at all.
        for d in &p.tools {
            let name = named(d);
            let refusal = if !valid_name(&name) {
                HostError::BadName {
                    origin: toolbox.origin.clone(),
                    line: p.entry.line,
                    prefix: p.entry.prefix.clone().unwrap_or_default(),
                    name,
                }
            } else if let Some(first) = owners.get(&name) {
                HostError::DuplicateTool {
                    name,
                    first: first.clone(),
                    second: at.clone(),
                }
            } else {
                continue;
            };
            match &mut strictness {
                Strictness::Strict => return Err(refusal),
                Strictness::Lenient(failed) => {
                    failed.push((p.index, refusal.to_string()));
                    continue 'components;
                }
            }
        }
        report
            .warnings
            .extend(crate::descriptors::escaped(&origin, &p.component));
        let (isolation, body) = match body_of(
            &p.entry,
            &p.component,
            &p.policy,
            &origin,
            &mut report.warnings,
        ) {
            Body::InProcess(body) => (Isolation::InProcess, body),
            Body::Workers(isolated) => {
                workers.push((origin.clone(), isolated.clone()));
                (Isolation::Process, isolated as Arc<dyn ToolBody>)
            }
        };
        for u in p.component.unserved() {
            report.skipped.push(SkippedTool {
                name: u.function.clone(),
                component: origin.clone(),
                reason: u.reason.clone(),
            });
        }
        for d in &p.tools {
            let name = named(d);
            owners.insert(name.clone(), at.clone());
            let policy = p.policy.for_tool(&d.name);
            if let Some(reason) =
                never_runs(&p.component, &policy).or_else(|| unreachable_in(toolbox.mode, &policy))
            {
                report.skipped.push(SkippedTool {
                    name,
                    component: origin.clone(),
                    reason,
                });
                continue;
            }
            report.served.push(ServedTool {
                name: name.clone(),
                component: origin.clone(),
                decision: policy.decision,
                deferred: false,
                isolation,
            });
            advertise.push(match p.entry.advertise {
                _ if runner => Advertise::Eager,
                Advertise::Auto if matches!(p.entry.source, Source::Builtin(_)) => Advertise::Eager,
                how => how,
            });
            if runner {
                runners.push(specs.len());
            } else {
                served.push((name.clone(), p.index, d));
            }
            specs.push(spec(&body, d, name, policy, &origin));
        }
    }
    // Progressive discovery: past `defer_over` tools, those of components
    // not eager are deferred (callable by name, found by `search_tools`).
    let many = specs.len().saturating_sub(runners.len()) > toolbox.defer_over;
    for (spec, how) in specs.iter_mut().zip(&advertise) {
        spec.deferred = match how {
            Advertise::Eager => false,
            Advertise::Deferred => true,
            Advertise::Auto => many,
        };
    }
    if specs.iter().any(|s| s.deferred) {
        if owners.contains_key(crate::search::NAME) {
            // A component's own `search_tools` keeps the name; nothing is
            // deferred then, or the deferred tools could not be found.
            report.warnings.push(format!(
                "`{}` is served by {}, so the reserved search of progressive discovery is not: \
                 every tool is advertised (rename it with a prefix)",
                crate::search::NAME,
                owners[crate::search::NAME]
            ));
            for s in &mut specs {
                s.deferred = false;
            }
        } else {
            specs.push(crate::search::spec(
                registry,
                toolbox.mode,
                toolbox.language,
            ));
            report.served.push(ServedTool {
                name: crate::search::NAME.into(),
                component: "builtin:search_tools".into(),
                decision: Decision::Allow,
                deferred: false,
                isolation: Isolation::InProcess,
            });
        }
    }
    let deferred: std::collections::HashSet<&str> = specs
        .iter()
        .filter(|s| s.deferred)
        .map(|s| s.descriptor.name.as_str())
        .collect();
    for served in &mut report.served {
        served.deferred = deferred.contains(served.name.as_str());
    }
    // Code mode's `run_code`: its description declares the tools its
    // scripts may call (those deferred are found by search instead), its
    // annotations say what they could all do together.
    // Two descriptions: the tools as a host lists them that issues
    // baseline handles, and as one that does not.
    let declared = |handles: bool| -> Vec<ToolDescriptor> {
        crate::code::callable(&specs, handles)
            .into_iter()
            .filter(|d| !deferred.contains(d.name.as_str()))
            .collect()
    };
    let (plain, with_handles) = (declared(false), declared(true));
    let annotations = crate::code::annotations(&crate::code::callable(&specs, false));
    for i in runners {
        let spec = &mut specs[i];
        let intro = spec.descriptor.description.clone();
        spec.descriptor.annotations = annotations;
        spec.descriptor.description = crate::code::description(&intro, &plain, toolbox.language);
        spec.listed_with_handles = Some(ToolDescriptor {
            description: crate::code::description(&intro, &with_handles, toolbox.language),
            ..spec.descriptor.clone()
        });
    }
    let origins: Vec<String> = toolbox
        .components
        .iter()
        .map(|e| e.source.to_string())
        .collect();
    let served: Vec<crate::descriptors::Served<'_>> = served
        .into_iter()
        .map(|(name, index, descriptor)| crate::descriptors::Served {
            name,
            origin: &origins[index],
            descriptor,
        })
        .collect();
    report
        .warnings
        .extend(crate::descriptors::shadowing(&served));
    report.served.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Assembled {
        specs,
        report,
        mode: toolbox.mode,
        language: toolbox.language,
        workers,
    })
}

/// Why a tool can never be called in `mode`: only scripts may call it,
/// and the mode runs none.
fn unreachable_in(mode: toolhost_policy::Mode, policy: &ToolPolicy) -> Option<String> {
    (!mode.runs_code() && !policy.callers.model()).then(|| {
        "its policy's callers = \"code\" (scripts only), and the toolbox runs no scripts \
         (mode = \"native\"; set mode = \"code\" or \"both\")"
            .to_owned()
    })
}

fn unreachable_load(toolbox: &Toolbox, entry: &ComponentEntry) -> HostError {
    HostError::Load {
        origin: toolbox.origin.clone(),
        line: entry.line,
        error: LoadError::Compile {
            path: PathBuf::from(entry.source.to_string()),
            reason: "the load task did not report".into(),
        },
    }
}

/// Why a tool can never run under `policy`, if so.
fn never_runs(component: &LoadedComponent, policy: &ToolPolicy) -> Option<String> {
    if policy.decision == Decision::Deny {
        return Some("its policy denies it".into());
    }
    component
        .import_denial(&policy.sandbox)
        .map(|why| format!("its component needs what the policy does not grant: {why}"))
}

/// The tool `d` of `component` registered as `name` under `policy`.
fn spec(
    component: &Arc<dyn ToolBody>,
    d: &ToolDescriptor,
    name: String,
    policy: ToolPolicy,
    origin: &str,
) -> ToolSpec {
    let body: Arc<dyn ToolBody> = if name == d.name {
        component.clone()
    } else {
        Arc::new(Renamed {
            inner: component.clone(),
            original: d.name.clone(),
        })
    };
    let mut descriptor = d.clone();
    descriptor.name = name;
    ToolSpec {
        descriptor,
        policy,
        body,
        source: origin.to_owned(),
        deferred: false,
        listed_with_handles: None,
    }
}

/// A prefixed tool: advertised and called by its new name, dispatched to
/// the component under the name it declared.
struct Renamed {
    inner: Arc<dyn ToolBody>,
    original: String,
}

#[async_trait::async_trait]
impl ToolBody for Renamed {
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        let input = Invocation {
            tool: &self.original,
            ..input
        };
        self.inner.execute(input).await
    }

    async fn render(
        &self,
        _tool: &str,
        arguments: &str,
        value: &str,
        policy: &ToolPolicy,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        self.inner
            .render(&self.original, arguments, value, policy, cancel)
            .await
    }

    fn component_id(&self) -> Option<&str> {
        self.inner.component_id()
    }
}

/// Where `entry`'s calls run, and its body: its policy's `isolation`, else
/// in-process for the built-ins but the code runner, and in workers for
/// every other component (a code runner's scripts' calls come back over
/// the channel to this process's pipeline). Warnings go to `warnings`.
fn body_of(
    entry: &ComponentEntry,
    component: &Arc<LoadedComponent>,
    policy: &Policy,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Body {
    let (isolation, walls) = placement(entry, policy);
    match isolation {
        Isolation::InProcess => Body::InProcess(Arc::new(component.clone())),
        Isolation::Process => {
            let missing = toolhost_worker::support().missing();
            if !missing.is_empty() {
                warnings.push(match walls {
                    Walls::Required => format!(
                        "{origin}: this kernel lacks {} for the worker's walls, and its policy \
                         requires them: its calls fail with `walls_unavailable`",
                        missing.join(" and ")
                    ),
                    Walls::BestEffort => format!(
                        "{origin}: this kernel lacks {}: its workers run without that wall",
                        missing.join(" and ")
                    ),
                });
            }
            Body::Workers(Arc::new(toolhost_worker::Isolated::new(
                component.clone(),
                policy,
                walls,
            )))
        }
    }
}

/// Where a component's calls run.
enum Body {
    /// In this process, behind wasmtime alone.
    InProcess(Arc<dyn ToolBody>),
    /// In walled worker processes.
    Workers(Arc<toolhost_worker::Isolated>),
}

/// What the kernel offers for the workers' walls, and how many of the
/// served tools run in workers: one line for people (`toolhost tools`,
/// `serve`, `/readyz`), loud when a wall is missing.
pub fn walls_line(report: &LoadReport) -> String {
    let support = toolhost_worker::support();
    let isolated = report
        .served
        .iter()
        .filter(|s| s.isolation == Isolation::Process)
        .count();
    let missing = support.missing();
    let state = if missing.is_empty() {
        "both walls stand".to_owned()
    } else {
        format!(
            "MISSING {}: workers run without it, or not at all where walls = \"required\"",
            missing.join(" and ")
        )
    };
    format!(
        "walls: {} ({state}); {isolated} of {} tools run in worker processes",
        support.summary(),
        report.served.len()
    )
}
