//! MCP tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension): a
//! call that runs long answers its `tools/call` with a task handle, and the
//! client polls `tasks/get` for the result instead of holding its request
//! open.
//!
//! - **When.** Only for a request that declared the extension. A call
//!   becomes a task when it is still running after the toolbox's `[tasks]
//!   after_ms`, when it stops to ask its user, or at once when its policy
//!   says `task = "always"` (scripts). A call that ends sooner is answered
//!   as it always was, and no task exists.
//! - **Where.** A task's record lives in a [`Store`]: this process's memory,
//!   or a directory the replicas share (beside the artifacts), so any of
//!   them answers `tasks/get`. The record is written before the handle is
//!   returned (a `tasks/get` for it always resolves). The call runs where
//!   it started; `tasks/update` and `tasks/cancel` on any replica leave a
//!   file the running one picks up.
//! - **Questions.** An approval the call asks is the task's
//!   `input_required` status, its elicitation in `inputRequests` under a
//!   key used once (`approval-N`), answered by `tasks/update`; it fails
//!   closed as every approval does (a decline, a timeout, a cancel deny).
//! - **Cancel** reaches the call's cancellation token: its staged effects
//!   are dropped, and the task ends `cancelled`.
//! - **Bounds.** A result larger than `max_result_kib` is kept as an error
//!   result saying so; a finished task is kept `keep_secs`, then dropped.
//!   Task ids are random (122 bits) and each is bound to the principal that
//!   started it: another caller's `tasks/get` finds nothing.

use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams, ErrorData,
    InputRequest, InputRequests, InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;
use toolhost_contract::clock::Clock;
use toolhost_contract::{ContextEvent, ContextSink, FailureCode, ToolFailure, ToolResult};
use toolhost_mcp_wire::Revision;
use toolhost_toolbox::TaskSettings;

/// How often a running task looks for answers and cancels left by another
/// replica (this process's own wake it at once), and the poll interval
/// clients are asked to keep.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// The `pollIntervalMs` a task suggests.
const POLL_INTERVAL_MS: u64 = 500;

/// How often expired records are swept, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// How often the replica running a task says in its record that it is
/// alive.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long a task that has not ended may go without a sign of its
/// replica before it is reported failed: that replica stopped (a crash, a
/// restart), and nothing will finish it.
const ORPHANED_AFTER: Duration = Duration::from_secs(30);

/// Where task records live.
pub(crate) enum Store {
    /// This process's memory: file name → bytes.
    Memory(Mutex<HashMap<String, Vec<u8>>>),
    /// A directory the replicas share.
    Dir(PathBuf),
}

impl Store {
    /// A store in `dir` (created if missing), or in memory.
    pub(crate) fn new(dir: Option<&Path>) -> std::io::Result<Store> {
        match dir {
            None => Ok(Store::Memory(Mutex::default())),
            Some(d) => {
                std::fs::create_dir_all(d)?;
                Ok(Store::Dir(d.to_owned()))
            }
        }
    }

    fn memory(
        map: &Mutex<HashMap<String, Vec<u8>>>,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Vec<u8>>> {
        map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        match self {
            Store::Memory(m) => Ok(Self::memory(m).get(name).cloned()),
            Store::Dir(d) => match std::fs::read(d.join(name)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            },
        }
    }

    /// Replaces `name` whole: a reader sees the old bytes or the new.
    fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Store::Memory(m) => {
                Self::memory(m).insert(name.to_owned(), bytes.to_vec());
                Ok(())
            }
            Store::Dir(d) => {
                let tmp = d.join(format!(".{name}.{}", uuid::Uuid::new_v4().simple()));
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, d.join(name)).inspect_err(|_| {
                    let _ = std::fs::remove_file(&tmp);
                })
            }
        }
    }

    /// Creates `name` unless it exists; whether it did.
    fn create(&self, name: &str, bytes: &[u8]) -> std::io::Result<bool> {
        match self {
            Store::Memory(m) => {
                let mut map = Self::memory(m);
                if map.contains_key(name) {
                    return Ok(false);
                }
                map.insert(name.to_owned(), bytes.to_vec());
                Ok(true)
            }
            Store::Dir(d) => {
                use std::io::Write;
                match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(d.join(name))
                {
                    Ok(mut f) => f.write_all(bytes).map(|()| true),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// The names of every task record.
    fn records(&self) -> Vec<String> {
        match self {
            Store::Memory(m) => Self::memory(m)
                .keys()
                .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
                .collect(),
            Store::Dir(d) => std::fs::read_dir(d)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    name.strip_suffix(".json").map(str::to_owned)
                })
                .filter(|id| valid_id(id))
                .collect(),
        }
    }

    /// Removes every file of task `id`.
    fn remove(&self, id: &str) {
        let prefix = format!("{id}.");
        match self {
            Store::Memory(m) => Self::memory(m).retain(|n, _| !n.starts_with(&prefix)),
            Store::Dir(d) => {
                for e in std::fs::read_dir(d)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                {
                    if e.file_name().to_string_lossy().starts_with(&prefix) {
                        // Another replica may have removed it already.
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
        }
    }
}

/// A task's record, as stored: everything `tasks/get` answers, and whose
/// it is.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// Who started it: only they reach it.
    principal: String,
    /// The tool called.
    tool: String,
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    created_ms: u64,
    updated_ms: u64,
    /// The last sign of life of the replica running it.
    #[serde(default)]
    beat_ms: u64,
    /// Lifetime from creation: while it runs, renewed by the replica
    /// running it; once it ended, until `keep` after the end.
    ttl_ms: u64,
    /// The questions outstanding (`input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_requests: Option<InputRequests>,
    /// The `CallToolResult` (`completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    /// The JSON-RPC error (`failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<JsonObject>,
}

impl Record {
    fn expired(&self, now: u64) -> bool {
        now > self.created_ms.saturating_add(self.ttl_ms)
    }

    /// The record as it stands at `now`: a task whose replica gave no sign
    /// for [`ORPHANED_AFTER`] has failed, whatever it last said.
    fn seen_at(mut self, now: u64) -> Record {
        let silent = now.saturating_sub(self.beat_ms);
        if !self.status.is_terminal() && silent > ORPHANED_AFTER.as_millis() as u64 {
            let why = format!(
                "the replica running the task stopped (no sign of it for {} s): its result is lost",
                silent / 1000
            );
            self.status = TaskStatus::Failed;
            self.input_requests = None;
            self.error = failed(&why);
            self.message = Some(why);
        }
        self
    }

    /// The task as the protocol shows it.
    fn task(&self, id: &str) -> Task {
        let mut task = Task::new(
            id,
            self.status,
            timestamp(self.created_ms),
            timestamp(self.updated_ms),
        )
        .with_ttl_ms(self.ttl_ms)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        task.status_message = self.message.clone();
        task
    }

    /// The task with what its status carries.
    fn detailed(&self, id: &str) -> DetailedTask {
        let payload = match self.status {
            TaskStatus::InputRequired => TaskPayload::InputRequired {
                input_requests: self.input_requests.clone().unwrap_or_default(),
            },
            TaskStatus::Completed => TaskPayload::Completed {
                result: self.result.clone().unwrap_or_default(),
            },
            TaskStatus::Failed => TaskPayload::Failed {
                error: self.error.clone().unwrap_or_default(),
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        DetailedTask::new(self.task(id), payload)
    }
}

/// `ms` as an ISO 8601 timestamp (UTC, milliseconds).
fn timestamp(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Whether `id` could be one of ours (32 lowercase hex digits): anything
/// else is unknown before it reaches a file name.
fn valid_id(id: &str) -> bool {
    toolhost_contract::is_hex(id, 32)
}

fn record_file(id: &str) -> String {
    format!("{id}.json")
}

fn cancel_file(id: &str) -> String {
    format!("{id}.cancel")
}

fn answer_file(id: &str, key: &str) -> String {
    format!("{id}.answer.{key}")
}

/// A task request that cannot be served, as the JSON-RPC error it is.
fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task `{id}`: it is unknown here, or its result was kept its time and dropped"),
        Some(json!({"taskId": id})),
    )
}

fn internal(what: &str, e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(format!("{what}: {e}"), None)
}

/// The JSON-RPC internal error a failed task carries, saying `why`.
fn failed(why: &str) -> Option<JsonObject> {
    match serde_json::to_value(ErrorData::internal_error(why.to_owned(), None)) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// Every task of a server: the store, and a wake-up for this process's
/// running tasks when an answer or a cancel is left here.
pub(crate) struct Tasks {
    store: Store,
    clock: Arc<dyn Clock>,
    poke: Notify,
    /// When expired records were last swept.
    swept: Mutex<std::time::Instant>,
}

impl Tasks {
    /// Tasks kept in `dir` (shared by the replicas) or in memory.
    pub(crate) fn new(dir: Option<&Path>, clock: Arc<dyn Clock>) -> std::io::Result<Tasks> {
        Ok(Tasks {
            store: Store::new(dir)?,
            clock,
            poke: Notify::new(),
            swept: Mutex::new(std::time::Instant::now()),
        })
    }

    fn now_ms(&self) -> u64 {
        self.clock.wall_ms()
    }

    /// Task `id`'s record, for `principal`: another's, a malformed id, an
    /// unknown or an expired one are all unknown (an expired one is dropped).
    fn load(&self, id: &str, principal: &str) -> Result<Record, ErrorData> {
        if !valid_id(id) {
            return Err(unknown(id));
        }
        let bytes = self
            .store
            .read(&record_file(id))
            .map_err(|e| internal("reading the task", e))?
            .ok_or_else(|| unknown(id))?;
        let record: Record = serde_json::from_slice(&bytes)
            .map_err(|e| internal("the task record is damaged", e))?;
        if record.principal != principal {
            return Err(unknown(id));
        }
        let now = self.now_ms();
        if record.expired(now) {
            self.store.remove(id);
            return Err(unknown(id));
        }
        Ok(record.seen_at(now))
    }

    fn save(&self, id: &str, record: &Record) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        self.store.write(&record_file(id), &bytes)
    }

    /// Drops the expired records, at most once a [`SWEEP_EVERY`].
    fn sweep(&self) {
        {
            let mut swept = self.swept.lock().unwrap_or_else(|e| e.into_inner());
            if swept.elapsed() < SWEEP_EVERY {
                return;
            }
            *swept = std::time::Instant::now();
        }
        let now = self.now_ms();
        for id in self.store.records() {
            let expired = self
                .store
                .read(&record_file(&id))
                .ok()
                .flatten()
                .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
                .is_none_or(|r| r.expired(now));
            if expired {
                self.store.remove(&id);
            }
        }
    }

    /// Task `id`'s record while it has not ended; once it has, an error
    /// saying so and `then` (what that means for the request).
    fn unended(&self, id: &str, principal: &str, then: &str) -> Result<Record, ErrorData> {
        let record = self.load(id, principal)?;
        if record.status.is_terminal() {
            return Err(ErrorData::invalid_params(
                format!(
                    "task `{id}` has ended ({}): {then}",
                    status_name(record.status)
                ),
                Some(json!({"taskId": id})),
            ));
        }
        Ok(record)
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, id: &str, principal: &str) -> Result<DetailedTask, ErrorData> {
        Ok(self.load(id, principal)?.detailed(id))
    }

    /// `tasks/update`: the answers are left for the replica running the
    /// task. Every key must be a question the task asks now, answered
    /// once; otherwise nothing is taken, and the error says why.
    pub(crate) fn update(
        &self,
        id: &str,
        principal: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let record = self.unended(id, principal, "it asks nothing now")?;
        let asked = record.input_requests.unwrap_or_default();
        crate::approve::objects_only(responses)?;
        if responses.is_empty() {
            return Err(ErrorData::invalid_params(
                format!("tasks/update for `{id}` carries no inputResponses"),
                Some(json!({"taskId": id})),
            ));
        }
        for key in responses.keys() {
            if !asked.contains_key(key) {
                let now: Vec<&String> = asked.keys().collect();
                return Err(ErrorData::invalid_params(
                    format!(
                        "task `{id}` did not ask `{key}`, or it was answered already (it asks {now:?} now); nothing was taken"
                    ),
                    Some(json!({"taskId": id, "key": key})),
                ));
            }
        }
        for (key, value) in responses {
            let bytes = serde_json::to_vec(value).map_err(|e| internal("the answer", e))?;
            let created = self
                .store
                .create(&answer_file(id, key), &bytes)
                .map_err(|e| internal("keeping the answer", e))?;
            if !created {
                return Err(ErrorData::invalid_params(
                    format!("task `{id}`'s question `{key}` was answered already"),
                    Some(json!({"taskId": id, "key": key})),
                ));
            }
        }
        self.poke.notify_waiters();
        Ok(())
    }

    /// `tasks/cancel`: the cancel is left for the replica running the
    /// task. A task that has ended is refused (its result stays).
    pub(crate) fn cancel(&self, id: &str, principal: &str) -> Result<(), ErrorData> {
        self.unended(
            id,
            principal,
            "there is nothing to cancel, and its result is kept",
        )?;
        self.store
            .create(&cancel_file(id), b"")
            .map_err(|e| internal("keeping the cancel", e))?;
        self.poke.notify_waiters();
        Ok(())
    }
}

fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        _ => "unknown",
    }
}

/// A call that may become a task: created before it runs, so what it asks
/// can turn it into one.
pub(crate) struct Slot {
    tasks: Arc<Tasks>,
    /// The id it has if it becomes a task.
    id: String,
    principal: String,
    tool: String,
    settings: TaskSettings,
    /// The call's own cancellation: the request's until it becomes a task,
    /// then `tasks/cancel`'s.
    cancel: CancellationToken,
    /// Set when it became a task.
    tasked: watch::Sender<Option<Arc<Running>>>,
    /// Told when the call asks before it is a task.
    wants: Notify,
    /// The latest progress message the call reported, before and after
    /// it became a task: once it is one, its status message.
    progress: Arc<Mutex<Option<String>>>,
}

impl Slot {
    pub(crate) fn new(
        tasks: Arc<Tasks>,
        principal: &str,
        tool: &str,
        settings: TaskSettings,
        cancel: CancellationToken,
    ) -> Arc<Slot> {
        Arc::new(Slot {
            tasks,
            id: uuid::Uuid::new_v4().simple().to_string(),
            principal: principal.to_owned(),
            tool: tool.to_owned(),
            settings,
            cancel,
            tasked: watch::Sender::new(None),
            wants: Notify::new(),
            progress: Arc::default(),
        })
    }

    /// The id the call has if it becomes a task.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Resolves when the call asked its user before it became a task.
    pub(crate) async fn wanted(&self) {
        self.wants.notified().await;
    }

    /// Makes the call a task: its record is written (durably, where the
    /// replicas read) before this returns.
    pub(crate) fn materialize(&self) -> std::io::Result<Arc<Running>> {
        self.tasks.sweep();
        let now = self.tasks.now_ms();
        let record = Record {
            principal: self.principal.clone(),
            tool: self.tool.clone(),
            status: TaskStatus::Working,
            message: Some(format!("`{}` is running", self.tool)),
            created_ms: now,
            updated_ms: now,
            beat_ms: now,
            ttl_ms: self.settings.keep.as_millis() as u64,
            input_requests: None,
            result: None,
            error: None,
        };
        self.tasks.save(&self.id, &record)?;
        let running = Arc::new(Running {
            tasks: self.tasks.clone(),
            id: self.id.clone(),
            settings: self.settings,
            record: Mutex::new(record),
            pending: Mutex::default(),
            asked: AtomicU32::new(0),
            progress: self.progress.clone(),
            cancel: self.cancel.clone(),
        });
        self.tasked.send_replace(Some(running.clone()));
        Ok(running)
    }

    /// The task, for a question the call asks: made one now if it is not
    /// yet (the caller waiting on [`Slot::wanted`] makes it).
    async fn running(&self) -> Option<Arc<Running>> {
        let mut rx = self.tasked.subscribe();
        if let Some(r) = rx.borrow().clone() {
            return Some(r);
        }
        self.wants.notify_one();
        loop {
            tokio::select! {
                changed = rx.changed() => {
                    changed.ok()?;
                    if let Some(r) = rx.borrow().clone() {
                        return Some(r);
                    }
                }
                () = self.cancel.cancelled() => return None,
            }
        }
    }

    /// Puts `params` to the user through the task, and waits (at most
    /// `timeout`) for the answer: the client's `ElicitResult`, or why
    /// there is none.
    pub(crate) async fn ask(
        &self,
        params: ElicitRequestParams,
        message: String,
        timeout: Duration,
    ) -> Result<Value, String> {
        let running = self
            .running()
            .await
            .ok_or_else(|| "the call was cancelled".to_owned())?;
        running.ask(params, message, timeout).await
    }
}

/// What a call that may become a task reports: relayed live (`live`)
/// until it is one; its latest progress message is the task's status
/// message (a task's client hears nothing outside its polls).
#[derive(Debug)]
pub(crate) struct Reports {
    pub(crate) slot: Arc<Slot>,
    pub(crate) live: Option<Arc<dyn ContextSink>>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ContextSink for Reports {
    fn emit(&self, event: &ContextEvent) {
        // Kept before it is a task too: the first status message is the
        // latest report, whenever the task was made.
        if let ContextEvent::Progress {
            message: Some(m), ..
        } = event
        {
            *self.slot.progress.lock().unwrap_or_else(|e| e.into_inner()) = Some(m.clone());
        }
        if self.slot.tasked.borrow().is_none()
            && let Some(live) = &self.live
        {
            live.emit(event);
        }
    }
}

/// A task this process runs.
pub(crate) struct Running {
    tasks: Arc<Tasks>,
    id: String,
    settings: TaskSettings,
    record: Mutex<Record>,
    /// Questions waiting for their answer, by key.
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Questions asked so far (keys are never reused).
    asked: AtomicU32,
    /// The latest progress message, shown as the status message.
    progress: Arc<Mutex<Option<String>>>,
    cancel: CancellationToken,
}

impl Running {
    /// The task as `tools/call` returns it.
    pub(crate) fn created(&self) -> CreateTaskResult {
        CreateTaskResult::new(self.lock().task(&self.id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the record and stores it. A store that fails loses the
    /// change for the readers, not for the call: it is said in the log.
    fn update(&self, change: impl FnOnce(&mut Record)) {
        let mut record = self.lock();
        change(&mut record);
        let now = self.tasks.now_ms();
        record.updated_ms = now;
        self.store(&mut record, now);
    }

    /// Says the replica is alive, every [`HEARTBEAT`], without changing
    /// what the task shows.
    fn beat(&self) {
        let mut record = self.lock();
        let now = self.tasks.now_ms();
        if now.saturating_sub(record.beat_ms) >= HEARTBEAT.as_millis() as u64 {
            self.store(&mut record, now);
        }
    }

    /// Stores `record`, alive at `now` and kept `keep` from now: while the
    /// task runs its life is renewed, and once it ended it is kept `keep`
    /// after the end.
    fn store(&self, record: &mut Record, now: u64) {
        record.beat_ms = now;
        record.ttl_ms = (now - record.created_ms) + self.settings.keep.as_millis() as u64;
        if let Err(e) = self.tasks.save(&self.id, record) {
            tracing::error!(task = %self.id, "storing the task failed: {e}");
        }
    }

    async fn ask(
        &self,
        params: ElicitRequestParams,
        message: String,
        timeout: Duration,
    ) -> Result<Value, String> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        let key = format!("approval-{n}");
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), tx);
        self.update(|r| {
            r.status = TaskStatus::InputRequired;
            r.message = Some(message);
            r.input_requests
                .get_or_insert_with(InputRequests::new)
                .insert(
                    key.clone(),
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                );
        });
        let answer = tokio::select! {
            a = rx => a.map_err(|_| "the task ended before its answer came".to_owned()),
            () = tokio::time::sleep(timeout) => Err(format!("the user did not answer within {} s", timeout.as_secs())),
            () = self.cancel.cancelled() => Err("the task was cancelled".to_owned()),
        };
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        self.update(|r| {
            if let Some(asks) = &mut r.input_requests {
                asks.remove(&key);
            }
            if r.input_requests.as_ref().is_some_and(|a| a.is_empty()) {
                r.input_requests = None;
                r.status = TaskStatus::Working;
                r.message = Some(format!("`{}` is running", r.tool));
            }
        });
        answer
    }

    /// Picks up what was left for this task: a cancel, answers, progress.
    fn look(&self, shown: &mut Option<String>) {
        if !self.cancel.is_cancelled()
            && matches!(self.tasks.store.read(&cancel_file(&self.id)), Ok(Some(_)))
        {
            self.cancel.cancel();
        }
        let keys: Vec<String> = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        for key in keys {
            if let Ok(Some(bytes)) = self.tasks.store.read(&answer_file(&self.id, &key)) {
                let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                if let Some(tx) = self
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key)
                {
                    let _ = tx.send(value);
                }
            }
        }
        let progress = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if progress.is_some() && progress != *shown {
            *shown = progress.clone();
            self.update(|r| {
                if r.status == TaskStatus::Working
                    && let Some(p) = progress
                {
                    r.message = Some(p);
                }
            });
        } else {
            self.beat();
        }
    }

    /// Watches over the task until `done` brings the call's result (`None`:
    /// the call stopped without one), then stores how it ended, and says
    /// how.
    pub(crate) async fn watch(
        &self,
        done: impl Future<Output = Option<ToolResult>>,
        revision: Revision,
    ) -> TaskStatus {
        let mut shown = None;
        let mut done = std::pin::pin!(done);
        let result = loop {
            let poked = self.tasks.poke.notified();
            tokio::select! {
                r = &mut done => break r,
                () = poked => {}
                () = tokio::time::sleep(WATCH_INTERVAL) => {}
            }
            self.look(&mut shown);
        };
        let cancelled = self.cancel.is_cancelled();
        let bound = self.settings.max_result_bytes;
        self.update(|r| {
            r.input_requests = None;
            match result {
                // A cancel that came too late to stop the call does not
                // hide its result.
                Some(result) if !(cancelled && result.is_error()) => {
                    let json = wire(revision.call_result(result));
                    let size = serde_json::to_vec(&json).map_or(0, |b| b.len()) as u64;
                    r.status = TaskStatus::Completed;
                    if size > bound {
                        r.message = Some(format!(
                            "`{}` ended; its result was too large to keep",
                            r.tool
                        ));
                        r.result = Some(wire(revision.call_result(too_large(size, bound))));
                    } else {
                        r.message = Some(format!("`{}` ended", r.tool));
                        r.result = Some(json);
                    }
                }
                Some(_) => {
                    r.status = TaskStatus::Cancelled;
                    r.message = Some("cancelled: nothing it staged landed".into());
                }
                None => {
                    let why = "the call stopped without a result";
                    r.status = TaskStatus::Failed;
                    r.message = Some(why.into());
                    r.error = failed(why);
                }
            }
        });
        self.lock().status
    }
}

/// The failure kept in place of a result over the bound.
fn too_large(size: u64, bound: u64) -> ToolResult {
    ToolResult::from_failure(
        ToolFailure::new(
            FailureCode::TaskResultTooLarge,
            format!(
                "the result ({size} bytes) is over the {bound} bytes a task keeps (the toolbox's [tasks] max_result_kib)"
            ),
        )
        .with_info(json!({"bytes": size, "maxBytes": bound})),
    )
}

/// A `CallToolResult` as the JSON object a task keeps.
fn wire(result: CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::clock::SystemClock;

    fn settings() -> TaskSettings {
        TaskSettings::default()
    }

    fn params() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form", "message": "Allow?",
            "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap()
    }

    fn both_stores() -> Vec<(Arc<Tasks>, Option<tempfile::TempDir>)> {
        let dir = tempfile::tempdir().unwrap();
        vec![
            (
                Arc::new(Tasks::new(None, SystemClock::shared()).unwrap()),
                None,
            ),
            (
                Arc::new(Tasks::new(Some(dir.path()), SystemClock::shared()).unwrap()),
                Some(dir),
            ),
        ]
    }

    /// A call of alice's to `tool` that may become a task.
    fn slot(tasks: &Arc<Tasks>, tool: &str, cancel: CancellationToken) -> Arc<Slot> {
        Slot::new(tasks.clone(), "alice", tool, settings(), cancel)
    }

    /// Watches `running` until a result comes on the channel: how it
    /// ended.
    fn watched(
        running: Arc<Running>,
    ) -> (
        oneshot::Sender<ToolResult>,
        tokio::task::JoinHandle<TaskStatus>,
    ) {
        let (tx, rx) = oneshot::channel();
        let watching = tokio::spawn(async move {
            running
                .watch(async { rx.await.ok() }, Revision::Stateless)
                .await
        });
        (tx, watching)
    }

    /// A result whose value is `text`, and its content too.
    fn success(text: String) -> ToolResult {
        ToolResult::Success(toolhost_contract::ToolSuccess {
            value: json!(text),
            content: vec![toolhost_contract::ContentBlock::text(text)],
            meta: Default::default(),
            additional_context: vec![],
            concludes_turn: false,
        })
    }

    #[tokio::test]
    async fn a_task_is_readable_once_made_and_only_by_its_principal() {
        for (tasks, _dir) in both_stores() {
            let slot = slot(&tasks, "slow", CancellationToken::new());
            assert!(tasks.get(slot.id(), "alice").is_err(), "not a task yet");
            let running = slot.materialize().unwrap();
            let task = tasks.get(slot.id(), "alice").unwrap();
            assert_eq!(task.status(), TaskStatus::Working);
            let err = tasks.get(slot.id(), "bob").unwrap_err();
            assert!(err.message.contains("no task"), "{err:?}");
            assert!(tasks.get("../../etc/passwd", "alice").is_err());
            let (tx, watching) = watched(running);
            tx.send(success(String::new())).unwrap();
            watching.await.unwrap();
            let task = tasks.get(slot.id(), "alice").unwrap();
            assert_eq!(task.status(), TaskStatus::Completed);
            let err = tasks.cancel(slot.id(), "alice").unwrap_err();
            assert!(err.message.contains("nothing to cancel"), "{err:?}");
            assert_eq!(
                tasks.get(slot.id(), "alice").unwrap().status(),
                TaskStatus::Completed
            );
        }
    }

    #[tokio::test]
    async fn a_question_is_answered_once_through_the_store() {
        for (tasks, _dir) in both_stores() {
            let slot = slot(&tasks, "edit", CancellationToken::new());
            let running = slot.materialize().unwrap();
            let (tx, watching) = watched(running.clone());
            let asking = {
                let slot = slot.clone();
                tokio::spawn(async move {
                    slot.ask(params(), "Allow?".into(), Duration::from_secs(30))
                        .await
                })
            };
            let asked = loop {
                let t = tasks.get(slot.id(), "alice").unwrap();
                if let TaskPayload::InputRequired { input_requests } = &t.payload {
                    break input_requests.keys().cloned().collect::<Vec<_>>();
                }
                tokio::task::yield_now().await;
            };
            assert_eq!(asked, ["approval-1"]);
            let wrong: InputResponses =
                [("approval-9".to_owned(), json!({"action": "accept"}))].into();
            let err = tasks.update(slot.id(), "alice", &wrong).unwrap_err();
            assert!(err.message.contains("did not ask `approval-9`"), "{err:?}");
            let right: InputResponses =
                [("approval-1".to_owned(), json!({"action": "accept"}))].into();
            tasks.update(slot.id(), "alice", &right).unwrap();
            assert_eq!(asking.await.unwrap().unwrap(), json!({"action": "accept"}));
            assert!(
                tasks.update(slot.id(), "alice", &right).is_err(),
                "answered once"
            );
            tx.send(success(String::new())).unwrap();
            watching.await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_cancel_reaches_the_token_and_the_task_ends_cancelled() {
        for (tasks, _dir) in both_stores() {
            let token = CancellationToken::new();
            let slot = slot(&tasks, "slow", token.clone());
            let running = slot.materialize().unwrap();
            let (tx, watching) = watched(running);
            tasks.cancel(slot.id(), "alice").unwrap();
            token.cancelled().await;
            tx.send(ToolResult::failure(FailureCode::Cancelled, "cancelled"))
                .unwrap();
            watching.await.unwrap();
            assert_eq!(
                tasks.get(slot.id(), "alice").unwrap().status(),
                TaskStatus::Cancelled
            );
        }
    }

    #[tokio::test]
    async fn a_result_over_the_bound_is_kept_as_an_error() {
        let tasks = Arc::new(Tasks::new(None, SystemClock::shared()).unwrap());
        let small = TaskSettings {
            max_result_bytes: 64,
            ..settings()
        };
        let slot = Slot::new(
            tasks.clone(),
            "alice",
            "big",
            small,
            CancellationToken::new(),
        );
        let (tx, watching) = watched(slot.materialize().unwrap());
        tx.send(success("x".repeat(1000))).unwrap();
        watching.await.unwrap();
        let task = tasks.get(slot.id(), "alice").unwrap();
        let TaskPayload::Completed { result } = task.payload else {
            panic!("{task:?}")
        };
        assert_eq!(result["isError"], json!(true));
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("task_result_too_large")
        );
    }

    /// A running task of alice's, on a clock the test moves.
    fn on_a_manual_clock() -> (
        Arc<toolhost_contract::clock::ManualClock>,
        Arc<Tasks>,
        Arc<Slot>,
        Arc<Running>,
    ) {
        let clock = Arc::new(toolhost_contract::clock::ManualClock::new(1_000_000));
        let tasks = Arc::new(Tasks::new(None, clock.clone()).unwrap());
        let slot = slot(&tasks, "slow", CancellationToken::new());
        let running = slot.materialize().unwrap();
        (clock, tasks, slot, running)
    }

    #[test]
    fn a_task_whose_replica_went_silent_has_failed() {
        let (clock, tasks, slot, _running) = on_a_manual_clock();
        clock.advance_ms(29_000);
        assert_eq!(
            tasks.get(slot.id(), "alice").unwrap().status(),
            TaskStatus::Working
        );
        clock.advance_ms(2_000);
        let task = tasks.get(slot.id(), "alice").unwrap();
        assert_eq!(task.status(), TaskStatus::Failed);
        let TaskPayload::Failed { error } = &task.payload else {
            panic!("{task:?}")
        };
        assert!(
            error["message"].as_str().unwrap().contains("stopped"),
            "{error:?}"
        );
        let err = tasks.cancel(slot.id(), "alice").unwrap_err();
        assert!(err.message.contains("has ended (failed)"), "{err:?}");
    }

    #[tokio::test]
    async fn a_running_task_says_it_is_alive() {
        let (clock, tasks, slot, running) = on_a_manual_clock();
        for _ in 0..10 {
            clock.advance_ms(6_000);
            running.look(&mut None);
        }
        assert_eq!(
            tasks.get(slot.id(), "alice").unwrap().status(),
            TaskStatus::Working
        );
    }

    #[test]
    fn a_report_before_the_task_was_made_is_its_first_status_message() {
        let tasks = Arc::new(Tasks::new(None, SystemClock::shared()).unwrap());
        let slot = slot(&tasks, "run_code", CancellationToken::new());
        let reports = Reports {
            slot: slot.clone(),
            live: None,
        };
        reports.emit(&ContextEvent::Progress {
            done: 1,
            total: Some(2),
            message: Some("half way".into()),
        });
        let running = slot.materialize().unwrap();
        running.look(&mut None);
        let task = tasks.get(slot.id(), "alice").unwrap();
        assert_eq!(task.task.status_message.as_deref(), Some("half way"));
    }

    #[test]
    fn an_expired_task_is_unknown_and_dropped() {
        let tasks = Tasks::new(None, SystemClock::shared()).unwrap();
        let id = "0123456789abcdef0123456789abcdef";
        let record = Record {
            principal: "alice".into(),
            tool: "t".into(),
            status: TaskStatus::Completed,
            message: None,
            created_ms: 1,
            updated_ms: 1,
            beat_ms: 1,
            ttl_ms: 1,
            input_requests: None,
            result: Some(JsonObject::new()),
            error: None,
        };
        tasks.save(id, &record).unwrap();
        assert!(tasks.get(id, "alice").is_err());
        assert!(tasks.store.records().is_empty());
    }
}
