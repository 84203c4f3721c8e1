//! The tool registry: a service, not a map. Registering returns a handle
//! whose drop unregisters exactly what it registered; per-agent tools shadow
//! global ones of the same name. Schemas are compiled once, here.
//!
//! Beside the tools it serves, the registry knows why others are not
//! ([`Availability`]): declared tools their policy can never run, components
//! that failed to load, and components still loading. Lookup waits for the
//! ones still loading and names the reason when a tool is not served, so
//! every front end says why, where the user asks.

pub use crate::tool::{RegisteredTool, ToolSpec};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use toolhost_policy::{Language, Mode, Policy};
use toolhost_runtime::LoadedComponent;

/// Where a tool is visible.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// To every agent (and calls without an agent).
    Global,
    /// To one agent only; shadows a global tool of the same name.
    Agent(String),
}

/// Registration failed; nothing was registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A schema does not compile.
    #[error("tool `{tool}`: {which} schema does not compile: {reason}")]
    Schema {
        /// The tool.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// The compiler's message.
        reason: String,
    },
    /// The name is taken in this scope.
    #[error("tool `{0}` is already registered in this scope")]
    Duplicate(String),
}

type Entries = BTreeMap<(Scope, String), (u64, Arc<RegisteredTool>)>;

#[derive(Default)]
struct Inner {
    entries: Entries,
    next_id: u64,
    /// Bumped by every change of the entries (the search index's key).
    generation: u64,
    /// Once the first load settled: each name's place in the advertised
    /// order, kept for the registry's life so a tool added later goes
    /// after those advertised before it and never moves them (a model's
    /// cached prompt prefix stays valid). Before that, the order is by name.
    ranks: Option<std::collections::HashMap<String, u64>>,
    /// The search index of the tools at `generation`.
    index: Option<(u64, Arc<crate::discovery::SearchIndex>)>,
}

impl Inner {
    /// Ranks the names not ranked yet after all those that are, in name
    /// order (nothing before the first load settled).
    fn rank_new(&mut self) {
        let Some(ranks) = &mut self.ranks else {
            return;
        };
        let mut next = ranks.values().max().map_or(0, |m| m + 1);
        for (_, name) in self.entries.keys() {
            if !ranks.contains_key(name) {
                ranks.insert(name.clone(), next);
                next += 1;
            }
        }
    }
}

/// Longest a listing (`tools/list`, `search_tools`) waits for components
/// still compiling before it answers with what is ready and says what is
/// still loading (their tools follow with `notifications/tools/list_changed`).
/// Clients give up on a request after 5 s by default (openai-agents,
/// pydantic-ai), and a loaded machine answers late: 2 s leaves them room.
pub const LOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What the registry does not serve, and why; and what may still come.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Availability {
    /// Declared tools that are not served, by name, with why (their policy
    /// denies them, their component needs what the policy does not grant).
    pub unserved: BTreeMap<String, String>,
    /// Components still loading (compiling), by origin: their tools are not
    /// known yet.
    pub loading: Vec<String>,
    /// Components that failed to load, by origin, with why.
    pub failed: Vec<(String, String)>,
}

impl Availability {
    /// Why `name` is not served, when the registry knows: its own reason,
    /// or the components still loading or that failed (whose tools are
    /// unknown). One line, for a model.
    pub fn why_not(&self, name: &str) -> Option<String> {
        if let Some(reason) = self.unserved.get(name) {
            return Some(format!("`{name}` is not served: {reason}"));
        }
        let mut parts = Vec::new();
        if !self.loading.is_empty() {
            parts.push(format!(
                "still loading: {} (their tools are not known yet)",
                self.loading.join(", ")
            ));
        }
        if !self.failed.is_empty() {
            let failed: Vec<String> = self
                .failed
                .iter()
                .map(|(origin, why)| format!("{origin} ({})", first_line(why)))
                .collect();
            parts.push(format!("not loaded: {}", failed.join("; ")));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The first line of `text`, clipped: reasons go into one-line messages.
fn first_line(text: &str) -> String {
    crate::summary::clip(text.lines().next().unwrap_or(""), 300)
}

/// Where the search's model stands ([`crate::discovery`]): a search is
/// hybrid once it is ready, BM25 alone before and without it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ModelState {
    /// No model is wanted: BM25 alone.
    #[default]
    Off,
    /// Its weights are being downloaded (a first start): searches do not
    /// wait for them.
    Fetching,
    /// Its weights are being read: a search waits for them (briefly).
    Loading,
    /// Searches are hybrid.
    Ready,
    /// It could not be had, with why: BM25 alone.
    Unavailable(String),
}

/// The registry service. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Mutex<Inner>>,
    availability: Arc<tokio::sync::watch::Sender<Availability>>,
    mode: Arc<std::sync::atomic::AtomicU8>,
    /// Code mode's language (0 JavaScript, 1 Python).
    language: Arc<std::sync::atomic::AtomicU8>,
    /// Held while the search index is built: one build at a time, and a
    /// search arriving meanwhile waits for it rather than building again.
    /// It keeps the tools' embeddings between builds.
    indexing: Arc<Mutex<crate::discovery::EmbeddingMemo>>,
    /// The search's model, once ready.
    model: Arc<Mutex<Option<Arc<toolhost_embed::Model>>>>,
    model_state: Arc<tokio::sync::watch::Sender<ModelState>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            inner: Arc::default(),
            availability: Arc::new(tokio::sync::watch::Sender::new(Availability::default())),
            mode: Arc::default(),
            language: Arc::default(),
            indexing: Arc::default(),
            model: Arc::default(),
            model_state: Arc::new(tokio::sync::watch::Sender::new(ModelState::Off)),
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

/// Unregisters its tools when dropped (or on [`Registration::dispose`]).
#[must_use = "dropping a Registration unregisters its tools"]
#[derive(Debug)]
pub struct Registration {
    registry: Weak<Mutex<Inner>>,
    keys: Vec<((Scope, String), u64)>,
}

impl Registration {
    /// Unregisters now.
    pub fn dispose(self) {}

    /// Names registered by this handle.
    pub fn names(&self) -> Vec<&str> {
        self.keys.iter().map(|((_, n), _)| n.as_str()).collect()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(inner) = self.registry.upgrade() else {
            return;
        };
        let mut inner = inner.lock().unwrap_or_else(|e| e.into_inner());
        for (key, id) in self.keys.drain(..) {
            if inner.entries.get(&key).is_some_and(|(i, _)| *i == id) {
                inner.entries.remove(&key);
                inner.generation += 1;
            }
        }
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers tools in `scope`, all or nothing.
    pub fn register(
        &self,
        scope: Scope,
        tools: Vec<ToolSpec>,
    ) -> Result<Registration, RegistryError> {
        self.install(None, scope, tools)
    }

    /// Atomically replaces what `old` registered with `tools` (hot reload):
    /// callers see either the old set or the new one, never a mix or a gap.
    /// All or nothing: on error the old tools stay registered. `old` no
    /// longer owns anything afterwards (dropping it is harmless).
    pub fn replace(
        &self,
        old: &Registration,
        scope: Scope,
        tools: Vec<ToolSpec>,
    ) -> Result<Registration, RegistryError> {
        self.install(Some(old), scope, tools)
    }

    fn install(
        &self,
        old: Option<&Registration>,
        scope: Scope,
        tools: Vec<ToolSpec>,
    ) -> Result<Registration, RegistryError> {
        let mut compiled = Vec::with_capacity(tools.len());
        for t in tools {
            let compile = |which: &'static str, schema| {
                jsonschema::validator_for(schema).map_err(|e| RegistryError::Schema {
                    tool: t.descriptor.name.clone(),
                    which,
                    reason: e.to_string(),
                })
            };
            let input = compile("input", &t.descriptor.input_schema)?;
            let output = compile("output", &t.descriptor.output_schema)?;
            compiled.push(RegisteredTool {
                digest: t.descriptor.digest(),
                descriptor: t.descriptor,
                policy: t.policy,
                body: t.body,
                source: t.source,
                deferred: t.deferred,
                listed_with_handles: t.listed_with_handles,
                input,
                output,
            });
        }
        let mut inner = self.lock();
        let owned_by_old = |key: &(Scope, String), inner: &Inner| {
            old.is_some_and(|o| {
                o.keys
                    .iter()
                    .any(|(k, id)| k == key && inner.entries.get(k).is_some_and(|(i, _)| i == id))
            })
        };
        let mut batch = std::collections::BTreeSet::new();
        for t in &compiled {
            let name = &t.descriptor.name;
            let key = (scope.clone(), name.clone());
            if !batch.insert(name)
                || inner.entries.contains_key(&key) && !owned_by_old(&key, &inner)
            {
                return Err(RegistryError::Duplicate(name.clone()));
            }
        }
        if let Some(old) = old {
            for (key, id) in &old.keys {
                if inner.entries.get(key).is_some_and(|(i, _)| i == id) {
                    inner.entries.remove(key);
                }
            }
        }
        let mut keys = Vec::with_capacity(compiled.len());
        for t in compiled {
            inner.next_id += 1;
            let id = inner.next_id;
            let key = (scope.clone(), t.descriptor.name.clone());
            keys.push((key.clone(), id));
            inner.entries.insert(key, (id, Arc::new(t)));
        }
        inner.generation += 1;
        inner.rank_new();
        Ok(Registration {
            registry: Arc::downgrade(&self.inner),
            keys,
        })
    }

    /// Registers every tool of a loaded component, each with its policy from `policy`.
    pub fn register_component(
        &self,
        scope: Scope,
        component: &Arc<LoadedComponent>,
        policy: &Policy,
    ) -> Result<Registration, RegistryError> {
        let specs = component
            .tools()
            .iter()
            .map(|d| ToolSpec {
                descriptor: d.clone(),
                policy: policy.for_tool(&d.name),
                body: Arc::new(component.clone()),
                source: component.path().display().to_string(),
                deferred: false,
                listed_with_handles: None,
            })
            .collect();
        self.register(scope, specs)
    }

    /// Says what is not served and why, and what is still loading (the
    /// host assembly sets it with each change of the tools).
    pub fn set_availability(&self, availability: Availability) {
        if availability.loading.is_empty() {
            // The first load settled: from now on the advertised order only
            // grows at its end.
            let mut inner = self.lock();
            if inner.ranks.is_none() {
                inner.ranks = Some(std::collections::HashMap::new());
                inner.rank_new();
            }
        }
        self.availability.send_replace(availability);
    }

    /// What is not served and why, and what is still loading.
    pub fn availability(&self) -> Availability {
        self.availability.borrow().clone()
    }

    /// Whether components are still loading (their tools may come).
    pub fn is_loading(&self) -> bool {
        !self.availability.borrow().loading.is_empty()
    }

    /// Returns once no component is loading any more.
    pub async fn settled(&self) {
        let mut rx = self.availability.subscribe();
        // The sender lives as long as `self`: the wait cannot end in error.
        let _ = rx.wait_for(|a| a.loading.is_empty()).await;
    }

    /// The tool `name` as `agent` sees it: the agent's own, else the global one.
    pub fn resolve(&self, name: &str, agent: Option<&str>) -> Option<Arc<RegisteredTool>> {
        let inner = self.lock();
        agent
            .and_then(|a| {
                inner
                    .entries
                    .get(&(Scope::Agent(a.to_owned()), name.to_owned()))
            })
            .or_else(|| inner.entries.get(&(Scope::Global, name.to_owned())))
            .map(|(_, t)| t.clone())
    }

    /// Says how the tools are offered to the model (the host assembly sets
    /// it with each load of a toolbox).
    pub fn set_mode(&self, mode: Mode) {
        let m = match mode {
            Mode::Native => 0,
            Mode::Code => 1,
            Mode::Both => 2,
        };
        self.mode.store(m, std::sync::atomic::Ordering::Relaxed);
    }

    /// Says which language code mode's scripts are written in (the host
    /// assembly sets it with each load of a toolbox).
    pub fn set_language(&self, language: Language) {
        let l = match language {
            Language::Javascript => 0,
            Language::Python => 1,
        };
        self.language.store(l, std::sync::atomic::Ordering::Relaxed);
    }

    /// Which language code mode's scripts are written in.
    pub fn language(&self) -> Language {
        match self.language.load(std::sync::atomic::Ordering::Relaxed) {
            1 => Language::Python,
            _ => Language::Javascript,
        }
    }

    /// How the tools are offered to the model.
    pub fn mode(&self) -> Mode {
        match self.mode.load(std::sync::atomic::Ordering::Relaxed) {
            1 => Mode::Code,
            2 => Mode::Both,
            _ => Mode::Native,
        }
    }

    /// The tools `agent` sees advertised, in the advertised order (see
    /// [`Registry::visible`]): in native mode every tool the model may
    /// call; in code mode `run_code` (and the tools only the model may
    /// call) instead of the tools scripts reach; in both, all of them; and
    /// never a deferred one. A tool not advertised may still be called by
    /// name, when its policy's callers include the model.
    pub fn advertised(&self, agent: Option<&str>) -> Vec<Arc<RegisteredTool>> {
        self.listed(agent, false)
    }

    /// The deferred tools `agent` may find by search (as
    /// [`Registry::advertised`], for the deferred ones).
    pub fn deferred(&self, agent: Option<&str>) -> Vec<Arc<RegisteredTool>> {
        self.listed(agent, true)
    }

    /// The tools the mode lists to `agent`, deferred or not.
    fn listed(&self, agent: Option<&str>, deferred: bool) -> Vec<Arc<RegisteredTool>> {
        let mode = self.mode();
        self.visible(agent)
            .into_iter()
            .filter(|t| t.deferred == deferred && mode.lists(t.policy.callers))
            .collect()
    }

    /// Every tool `agent` can see, in the advertised order: by name for
    /// the tools of the first load; once it settled, a tool registered
    /// later comes after every tool before it, so the serialized list only
    /// grows at its end (a provider's prompt-cache prefix stays valid)
    /// and is byte-identical from run to run.
    pub fn visible(&self, agent: Option<&str>) -> Vec<Arc<RegisteredTool>> {
        let inner = self.lock();
        let mut by_name: BTreeMap<&str, Arc<RegisteredTool>> = BTreeMap::new();
        for ((scope, name), (_, t)) in &inner.entries {
            match scope {
                Scope::Global => {
                    by_name.entry(name).or_insert_with(|| t.clone());
                }
                Scope::Agent(a) if Some(a.as_str()) == agent => {
                    by_name.insert(name, t.clone());
                }
                Scope::Agent(_) => {}
            }
        }
        let mut out: Vec<(&str, Arc<RegisteredTool>)> = by_name.into_iter().collect();
        if let Some(ranks) = &inner.ranks {
            // Every name has its rank once ranks exist (`rank_new`).
            out.sort_by_key(|(n, _)| ranks.get(*n).copied().unwrap_or(u64::MAX));
        }
        out.into_iter().map(|(_, t)| t).collect()
    }

    /// Makes searches hybrid with `model` (the index is built anew, the
    /// tools embedded once each).
    pub fn set_model(&self, model: Arc<toolhost_embed::Model>) {
        *self.model.lock().unwrap_or_else(|e| e.into_inner()) = Some(model);
        self.lock().generation += 1;
        self.model_state.send_replace(ModelState::Ready);
    }

    /// The tools' embeddings the search has computed, by descriptor digest
    /// (to keep them on disk).
    pub fn embeddings(&self) -> crate::discovery::EmbeddingMemo {
        self.indexing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Adds embeddings computed before (read from disk) to those the
    /// search reuses; those it has already are kept.
    pub fn keep_embeddings(&self, kept: crate::discovery::EmbeddingMemo) {
        let mut memo = self.indexing.lock().unwrap_or_else(|e| e.into_inner());
        for (digest, e) in kept {
            memo.entry(digest).or_insert(e);
        }
    }

    /// Says where the search's model stands while it is not ready.
    pub fn set_model_state(&self, state: ModelState) {
        self.model_state.send_replace(state);
    }

    /// Where the search's model stands.
    pub fn model_state(&self) -> ModelState {
        self.model_state.borrow().clone()
    }

    /// Returns once the model is no longer being read from disk (ready,
    /// or not to be had); a download is not waited for.
    pub async fn model_settled(&self) {
        let mut rx = self.model_state.subscribe();
        let _ = rx.wait_for(|s| *s != ModelState::Loading).await;
    }

    /// Returns once the model is ready or not to be had (a download
    /// included): for a one-shot search, which has no later search to
    /// rank better.
    pub async fn model_resolved(&self) {
        let mut rx = self.model_state.subscribe();
        let _ = rx
            .wait_for(|s| !matches!(s, ModelState::Fetching | ModelState::Loading))
            .await;
    }

    /// The global tools `query` is about, best first, at most `limit`
    /// (see [`crate::discovery`]); the caller keeps those its caller may
    /// reach.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Arc<RegisteredTool>> {
        self.search_index().search(query, limit)
    }

    /// The search index of the global tools as they are now: built once
    /// per change of the registry, by one caller at a time (one arriving
    /// meanwhile waits for that build rather than making its own).
    pub fn search_index(&self) -> Arc<crate::discovery::SearchIndex> {
        let cached = || {
            let inner = self.lock();
            inner
                .index
                .as_ref()
                .filter(|(g, _)| *g == inner.generation)
                .map(|(_, i)| i.clone())
        };
        if let Some(index) = cached() {
            return index;
        }
        let mut memo = self.indexing.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = cached() {
            return index;
        }
        let generation = self.lock().generation;
        let model = self.model.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let tools = self.visible(None);
        let built = Arc::new(match model {
            Some(model) => crate::discovery::SearchIndex::with_model(tools, model, &mut memo),
            None => crate::discovery::SearchIndex::new(tools),
        });
        let mut inner = self.lock();
        if inner.generation == generation {
            inner.index = Some((generation, built.clone()));
        }
        built
    }
}
