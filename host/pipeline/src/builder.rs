//! Building a [`Pipeline`]: its registry, listeners, wrappers, log,
//! clock and stores.

use crate::baseline::HandleKey;
use crate::bound::Artifacts;
use crate::listeners::{Approver, Guard, PostExecute, PreExecute, ResultListener};
use crate::pipeline::{Pipeline, StageObserver};
use crate::registry::Registry;
use crate::replay::{Mode, Replay};
use crate::session_log::SessionLog;
use crate::wrappers::{self, Wrapper};
use std::sync::Arc;
use toolhost_contract::clock::{Clock, SystemClock};
use toolhost_effects::Journal;

/// Builds a [`Pipeline`].
pub struct PipelineBuilder {
    pub(crate) registry: Registry,
    pub(crate) pre: Vec<Arc<dyn PreExecute>>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) guards: Vec<Arc<dyn Guard>>,
    pub(crate) wrappers: Vec<Arc<dyn Wrapper>>,
    pub(crate) post: Vec<Arc<dyn PostExecute>>,
    pub(crate) results: Vec<Arc<dyn ResultListener>>,
    pub(crate) observers: Vec<Arc<dyn StageObserver>>,
    pub(crate) log: Option<Arc<SessionLog>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) seed: Option<u64>,
    pub(crate) session_id: Option<String>,
    pub(crate) artifacts: Option<Arc<Artifacts>>,
    pub(crate) cassette: Option<Arc<Replay>>,
    pub(crate) journal: Option<Arc<Journal>>,
    pub(crate) handles: Option<HandleKey>,
    pub(crate) staging: Option<std::path::PathBuf>,
    pub(crate) checkpoints: Option<Arc<Artifacts>>,
}

impl PipelineBuilder {
    /// A builder over `registry`, with the defaults.
    pub(crate) fn new(registry: Registry) -> PipelineBuilder {
        PipelineBuilder {
            registry,
            pre: Vec::new(),
            approver: None,
            guards: Vec::new(),
            wrappers: wrappers::standard(),
            post: Vec::new(),
            results: Vec::new(),
            observers: Vec::new(),
            log: None,
            clock: SystemClock::shared(),
            seed: None,
            session_id: None,
            artifacts: None,
            cassette: None,
            journal: None,
            handles: None,
            staging: None,
            checkpoints: None,
        }
    }

    /// Keeps the checkpoints of scripts waiting for an answer in this
    /// store (never served as resources; a store of this pipeline's own
    /// by default). Replicas that share one resume each other's scripts.
    pub fn checkpoints(mut self, store: Arc<Artifacts>) -> Self {
        self.checkpoints = Some(store);
        self
    }
    /// Where scripts stage their calls' writes (default: `staging` in
    /// the user's cache directory, as the runtime's own).
    pub fn staging_dir(mut self, dir: std::path::PathBuf) -> Self {
        self.staging = Some(dir);
        self
    }
    /// Issues and accepts baseline handles sealed with `key` (see
    /// [`crate::baseline`]): a call that reads or writes a file returns its
    /// handle, and a later change of the file may present it as its
    /// `baseline` argument instead of relying on this session's memory.
    pub fn baseline_handles(mut self, key: HandleKey) -> Self {
        self.handles = Some(key);
        self
    }
    /// Names the session (it prefixes every execution token and artifact
    /// id). Default: the seed in hex, else the clock and process id.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }
    /// Keeps truncated results' overflow in this (shared, bounded) store
    /// instead of a store of this pipeline's own.
    pub fn artifacts(mut self, store: Arc<Artifacts>) -> Self {
        self.artifacts = Some(store);
        self
    }
    /// Adds a pre-execute listener (run in the order added, after the policy).
    pub fn pre_execute(mut self, l: Arc<dyn PreExecute>) -> Self {
        self.pre.push(l);
        self
    }
    /// Mounts the approver. Without one, `ask` is denied.
    pub fn approver(mut self, a: Arc<dyn Approver>) -> Self {
        self.approver = Some(a);
        self
    }
    /// Adds a guard.
    pub fn guard(mut self, g: Arc<dyn Guard>) -> Self {
        self.guards.push(g);
        self
    }
    /// Replaces the wrapper chain (default: [`wrappers::standard`]).
    /// Without the budget wrapper a call has no fuel or deadline and fails closed.
    pub fn wrappers(mut self, w: Vec<Arc<dyn Wrapper>>) -> Self {
        self.wrappers = w;
        self
    }
    /// Adds an around-dispatch wrapper outside the existing ones: it runs
    /// first, and a call it refuses reaches none of them.
    pub fn outer_wrapper(mut self, w: Arc<dyn Wrapper>) -> Self {
        self.wrappers.insert(0, w);
        self
    }
    /// Adds an around-dispatch wrapper inside the existing ones.
    pub fn wrapper(mut self, w: Arc<dyn Wrapper>) -> Self {
        self.wrappers.push(w);
        self
    }
    /// Adds a post-execute listener.
    pub fn post_execute(mut self, l: Arc<dyn PostExecute>) -> Self {
        self.post.push(l);
        self
    }
    /// Adds a `tools/result` listener.
    pub fn on_result(mut self, l: Arc<dyn ResultListener>) -> Self {
        self.results.push(l);
        self
    }
    /// The journal file effects are committed through (default: the user's
    /// `~/.cache/toolhost/journal`, opened at the first commit).
    pub fn journal(mut self, journal: Arc<Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Adds a stage observer.
    pub fn observer(mut self, o: Arc<dyn StageObserver>) -> Self {
        self.observers.push(o);
        self
    }
    /// Records the session to this log.
    pub fn session_log(mut self, log: Arc<SessionLog>) -> Self {
        self.log = Some(log);
        self
    }
    /// Uses this clock for events and timings (in deterministic mode each
    /// call has its own virtual clock instead).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    /// Deterministic mode: everything a guest or the session log can
    /// observe (clocks, randomness, session id, tokens, timings, artifact
    /// ids, the order of result events) derives from `seed` and each call's
    /// position. The rules are in the crate's `determinism` module.
    pub fn deterministic(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Records calls to, or plays them back from, a cassette (see
    /// [`crate::replay`]). Recording and playing back are deterministic:
    /// playback uses the recording's seed, recording the one given to
    /// [`deterministic`](Self::deterministic) (else 0).
    pub fn cassette(mut self, replay: Arc<Replay>) -> Self {
        self.cassette = Some(replay);
        self
    }
    /// Builds it.
    pub fn build(mut self) -> Pipeline {
        if let Some(replay) = &self.cassette {
            self.seed = match (replay.recorded_seed(), replay.mode()) {
                (Some(recorded), _) => Some(recorded),
                (None, Mode::Passthrough) => self.seed,
                (None, _) => Some(self.seed.unwrap_or(0)),
            };
            replay.start(&self.registry, self.seed.unwrap_or(0));
        }
        let session = match (&self.session_id, self.seed) {
            (Some(id), _) => id.clone(),
            (None, Some(s)) => format!("{s:x}"),
            (None, None) => format!("{:x}{:x}", self.clock.wall_ms(), std::process::id()),
        };
        let artifacts = self.artifacts.clone().unwrap_or_default();
        let checkpoints = self.checkpoints.clone().unwrap_or_default();
        Pipeline::new(self, session, artifacts, checkpoints)
    }
}
