//! `ask` goes to the person at the client, the way the negotiated protocol
//! revision asks:
//!
//! - **before 2026-07-28**, the server sends `elicitation/create` while the
//!   call waits (the bounded approval summary as a form's message);
//! - **from 2026-07-28**, servers may not send requests of their own: the
//!   call ends with an `input_required` result carrying the same elicitation
//!   and a sealed `requestState`, and the client sends the call again with
//!   the user's answer. The state is HMAC-sealed (rmcp's
//!   `RequestStateCodec`), bound to the call's tool and canonical
//!   arguments, the caller (principal) and a lifetime, and usable once.
//!
//! Either way approval fails closed: a client that did not declare the
//! elicitation capability, a decline, a cancel, a timeout, a transport
//! error, or a state that does not verify (forged, tampered, expired,
//! replayed, from another call or caller) all deny. And what was approved
//! is what runs: the retry is validated again from scratch, and the summary
//! it would ask about must be the one the user answered.

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitationAction, ErrorData,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    SealOptions,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolhost_pipeline::{Approval, ApprovalRequest, Approver};

/// The key of the one input request an approval asks for.
const APPROVAL_INPUT: &str = "approval";

/// Sealed states whose single use is remembered at once; beyond it new
/// approvals are refused (fail closed) until old ones expire.
const MAX_LIVE_STATES: usize = 100_000;

/// Whether a client that declared `capabilities` can ask its user a form.
pub(crate) fn can_ask(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// How one call's `ask` reaches the user.
enum Route {
    /// Ask now with `elicitation/create` (revisions before 2026-07-28).
    Elicit {
        peer: Peer<RoleServer>,
        can_ask: bool,
    },
    /// 2026-07-28: use the answer this request brought, or end the call
    /// `approval_pending` and remember what to ask.
    Inline {
        can_ask: bool,
        answer: Option<Answer>,
        asked: Option<ApprovalRequest>,
    },
    /// A call that is (or becomes) an MCP task: ask through the task's
    /// `input_required`, and wait for `tasks/update`.
    Task {
        slot: std::sync::Arc<crate::tasks::Slot>,
        can_ask: bool,
    },
}

/// Who puts a question to the user, once its route is read.
enum Asker {
    /// The client, with `elicitation/create`.
    Peer(Peer<RoleServer>),
    /// The call's task, through `input_required`.
    Task(std::sync::Arc<crate::tasks::Slot>),
}

/// The user's answer that came with a retried call, once its state verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Accepted: the digest of what the user was shown.
    Accepted([u8; 32]),
    /// Declined, cancelled, or accepted with `approve` unchecked.
    Declined(String),
    /// The state verified but the answer is missing: asked again.
    Missing,
    /// The state or the answer did not verify.
    Invalid(String),
}

/// The approver of one session: each call's route, by call id.
#[derive(Default)]
pub(crate) struct Approvals {
    timeout: Duration,
    routes: Mutex<HashMap<String, Route>>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").finish_non_exhaustive()
    }
}

/// Removes a call's route when the call is over.
pub(crate) struct Routed {
    approvals: std::sync::Arc<Approvals>,
    call_id: String,
}

impl Drop for Routed {
    fn drop(&mut self) {
        self.approvals.lock().remove(&self.call_id);
    }
}

impl Routed {
    /// What the call asked, when it ended waiting for the user (2026-07-28).
    pub(crate) fn asked(&self) -> Option<ApprovalRequest> {
        match self.approvals.lock().get_mut(&self.call_id) {
            Some(Route::Inline { asked, .. }) => asked.take(),
            _ => None,
        }
    }
}

impl Approvals {
    /// An approver whose `elicitation/create` waits at most `timeout`.
    pub(crate) fn new(timeout: Duration) -> Approvals {
        Approvals {
            timeout,
            routes: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks for `call_id` through `elicitation/create` on `peer`.
    pub(crate) fn elicit(
        self: &std::sync::Arc<Self>,
        call_id: &str,
        peer: Peer<RoleServer>,
        capabilities: Option<&ClientCapabilities>,
    ) -> Routed {
        self.route(
            call_id,
            Route::Elicit {
                peer,
                can_ask: can_ask(capabilities),
            },
        )
    }

    /// Asks for `call_id` inline (2026-07-28), with the answer the request
    /// brought, if any.
    pub(crate) fn inline(
        self: &std::sync::Arc<Self>,
        call_id: &str,
        capabilities: Option<&ClientCapabilities>,
        answer: Option<Answer>,
    ) -> Routed {
        self.route(
            call_id,
            Route::Inline {
                can_ask: can_ask(capabilities),
                answer,
                asked: None,
            },
        )
    }

    /// Asks for `call_id` through the task it is or becomes.
    pub(crate) fn in_task(
        self: &std::sync::Arc<Self>,
        call_id: &str,
        capabilities: Option<&ClientCapabilities>,
        slot: std::sync::Arc<crate::tasks::Slot>,
    ) -> Routed {
        self.route(
            call_id,
            Route::Task {
                slot,
                can_ask: can_ask(capabilities),
            },
        )
    }

    fn route(self: &std::sync::Arc<Self>, call_id: &str, route: Route) -> Routed {
        self.lock().insert(call_id.to_owned(), route);
        Routed {
            approvals: self.clone(),
            call_id: call_id.to_owned(),
        }
    }
}

/// What the user is shown for `request`, as a digest: the retry must ask
/// about exactly this for the answer to count.
pub(crate) fn shown(request: &ApprovalRequest) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [&request.tool, &request.summary, &request.reason] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// The message the user reads.
fn message(request: &ApprovalRequest) -> String {
    format!(
        "Allow the tool call `{}`?\n{}\n({})",
        request.tool, request.summary, request.reason
    )
}

/// The elicitation for one approval: the bounded summary as the message
/// and a single optional `approve` switch (accepting without touching it
/// approves).
fn params(request: &ApprovalRequest) -> Result<ElicitRequestParams, serde_json::Error> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message(request),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": "Run this tool call",
                    "default": true
                }
            }
        }
    }))
}

/// Each input response is the client's result for one input request: an
/// object, or the request is malformed (SEP-2322), and nothing of it is
/// taken.
pub(crate) fn objects_only(responses: &InputResponses) -> Result<(), ErrorData> {
    match responses.iter().find(|(_, v)| !v.is_object()) {
        Some((key, _)) => Err(ErrorData::invalid_params(
            format!(
                "inputResponses[{key:?}] must be an object: the client's result for that input request"
            ),
            Some(json!({"key": key})),
        )),
        None => Ok(()),
    }
}

/// Why a client that cannot ask is denied.
const CANNOT_ASK: &str =
    "the client cannot ask its user (it did not declare the elicitation capability)";

/// The form asking `request`, or the denial when it cannot be asked.
fn form(request: &ApprovalRequest, can_ask: bool) -> Result<ElicitRequestParams, Approval> {
    if !can_ask {
        return Err(Approval::Denied(CANNOT_ASK.into()));
    }
    params(request)
        .map_err(|e| Approval::Denied(format!("the approval request could not be built: {e}")))
}

/// An answer's verdict: accept (with `approve` not unchecked) approves.
fn verdict(action: &ElicitationAction, content: Option<&Value>) -> Result<(), String> {
    match action {
        ElicitationAction::Accept => {
            if content.and_then(|c| c.get("approve")) == Some(&json!(false)) {
                Err("the user unchecked `approve`".into())
            } else {
                Ok(())
            }
        }
        ElicitationAction::Decline => Err("the user declined".into()),
        ElicitationAction::Cancel => Err("the user cancelled".into()),
        other => Err(format!("the user answered {other:?}")),
    }
}

#[async_trait::async_trait]
impl Approver for Approvals {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        // Who asks, taken out of the routes: the asking waits, unlocked.
        let (asker, can_ask) = {
            let mut routes = self.lock();
            match routes.get_mut(&request.call_id) {
                None => return Approval::Denied("there is no client connection to ask".into()),
                Some(Route::Elicit { peer, can_ask }) => (Asker::Peer(peer.clone()), *can_ask),
                Some(Route::Task { slot, can_ask }) => (Asker::Task(slot.clone()), *can_ask),
                Some(Route::Inline {
                    can_ask,
                    answer,
                    asked,
                }) => {
                    return match answer.take() {
                        Some(Answer::Accepted(digest)) if digest == shown(request) => {
                            Approval::Approved
                        }
                        Some(Answer::Accepted(_)) => Approval::Denied(
                            "what the call would do now differs from what the user approved \
                             (the file changed since?); call the tool again to be asked again"
                                .into(),
                        ),
                        Some(Answer::Declined(why) | Answer::Invalid(why)) => Approval::Denied(why),
                        None | Some(Answer::Missing) if !*can_ask => {
                            Approval::Denied(CANNOT_ASK.into())
                        }
                        // Not asked yet, or the answer did not come:
                        // asked (again, with a new state).
                        None | Some(Answer::Missing) => {
                            *asked = Some(request.clone());
                            Approval::Pending(request.summary.clone())
                        }
                    };
                }
            }
        };
        let params = match form(request, can_ask) {
            Ok(p) => p,
            Err(denied) => return denied,
        };
        let peer = match asker {
            Asker::Peer(peer) => peer,
            Asker::Task(slot) => return self.through_task(&slot, params, request).await,
        };
        match peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
        {
            Ok(r) => match verdict(&r.action, r.content.as_ref()) {
                Ok(()) => Approval::Approved,
                Err(why) => Approval::Denied(why),
            },
            Err(rmcp::ServiceError::Timeout { timeout }) => Approval::Denied(format!(
                "the user did not answer within {} s",
                timeout.as_secs()
            )),
            Err(e) => Approval::Denied(format!("asking the user failed: {e}")),
        }
    }
}

impl Approvals {
    /// Asks `request` through the call's task and waits for the answer.
    async fn through_task(
        &self,
        slot: &crate::tasks::Slot,
        params: ElicitRequestParams,
        request: &ApprovalRequest,
    ) -> Approval {
        match slot.ask(params, message(request), self.timeout).await {
            Ok(answer) => match serde_json::from_value::<rmcp::model::ElicitResult>(answer) {
                Ok(r) => match verdict(&r.action, r.content.as_ref()) {
                    Ok(()) => Approval::Approved,
                    Err(why) => Approval::Denied(why),
                },
                Err(_) => Approval::Denied("the answer is not an elicitation result".into()),
            },
            Err(why) => Approval::Denied(why),
        }
    }
}

/// Seals and opens the `requestState` of approvals asked inline, and
/// remembers which were used. One per server (every session's retries
/// open each other's states: under stateless HTTP each request is its own
/// session).
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
    ttl: Duration,
    used: Mutex<HashMap<String, Instant>>,
    /// A directory the replicas share, where each used state leaves a file
    /// (created exclusively): a state opens once across every process
    /// that records there. `None`: this process's memory only.
    shared: Option<SharedUse>,
}

/// The shared record of used states.
struct SharedUse {
    dir: std::path::PathBuf,
    /// When expired records were last swept.
    swept: Mutex<Instant>,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSeal")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// What a sealed approval state carries (authenticated, not secret).
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    /// Single use: a random id.
    nonce: String,
    /// The digest of what the user is shown (hex).
    shown: String,
    /// Where the call stopped to ask (a script's checkpoint), handed back
    /// to the pipeline with the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resume: Option<String>,
}

/// A retried call's state, opened: the answer, and where the call goes on
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opened {
    /// The user's answer.
    pub(crate) answer: Answer,
    /// The continuation the pipeline gave when it asked.
    pub(crate) resume: Option<String>,
}

/// What a state is bound to: the caller and the call (its tool and its
/// canonical arguments), so it opens for nothing else.
pub(crate) fn binding(principal: &str, tool: &str, arguments: &Value) -> Vec<u8> {
    let args = toolhost_pipeline::replay::canonical_sha256(arguments);
    format!("toolhost/approval/v1\n{principal}\n{tool}\n{args}").into_bytes()
}

impl StateSeal {
    /// A seal with `key` (at least 32 bytes) whose states live `ttl`.
    pub(crate) fn new(key: &[u8], ttl: Duration) -> Result<StateSeal, String> {
        Ok(StateSeal {
            codec: RequestStateCodec::try_new(key).map_err(|e| e.to_string())?,
            ttl,
            used: Mutex::new(HashMap::new()),
            shared: None,
        })
    }

    /// The same seal, recording used states in `dir` too (created if
    /// missing), shared with the other replicas.
    pub(crate) fn recording_in(mut self, dir: &std::path::Path) -> std::io::Result<StateSeal> {
        std::fs::create_dir_all(dir)?;
        self.shared = Some(SharedUse {
            dir: dir.to_owned(),
            swept: Mutex::new(Instant::now()),
        });
        Ok(self)
    }

    /// The `input_required` result asking `request`, bound to `binding`,
    /// carrying `resume` (where the call stopped) for its retry.
    pub(crate) fn ask(
        &self,
        request: &ApprovalRequest,
        binding: &[u8],
        resume: Option<String>,
    ) -> Result<InputRequiredResult, String> {
        let sealed = Sealed {
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            shown: toolhost_contract::hex(&shown(request)),
            resume,
        };
        let payload = serde_json::to_vec(&sealed).map_err(|e| e.to_string())?;
        let state = self.codec.seal_with(
            &payload,
            &SealOptions::new().associated_data(binding).ttl(self.ttl),
        );
        let params = params(request).map_err(|e| e.to_string())?;
        let mut asks = InputRequests::new();
        asks.insert(
            APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        Ok(InputRequiredResult::new(Some(asks), Some(state)))
    }

    /// The answer a retried call brought, and where it goes on from: its
    /// state opened against `binding` (integrity, lifetime, single use) and
    /// its elicitation result read. A state that does not open carries no
    /// continuation.
    pub(crate) fn open(
        &self,
        state: &str,
        binding: &[u8],
        responses: Option<&InputResponses>,
    ) -> Opened {
        match self.verify(state, binding) {
            Ok(sealed) => Opened {
                answer: answer(&sealed, responses),
                resume: sealed.resume,
            },
            Err(answer) => Opened {
                answer,
                resume: None,
            },
        }
    }

    /// What `state` sealed, once verified against `binding` (integrity,
    /// lifetime, single use); else why it is refused.
    fn verify(&self, state: &str, binding: &[u8]) -> Result<Sealed, Answer> {
        let opened = match self.codec.open_with(state, binding) {
            Ok(p) => p,
            Err(rmcp::model::RequestStateError::Expired) => {
                return Err(invalid("the answer came after the approval expired"));
            }
            Err(_) => {
                return Err(invalid(
                    "its requestState is not one this server sealed for this call and caller",
                ));
            }
        };
        let Ok(sealed) = serde_json::from_slice::<Sealed>(&opened) else {
            return Err(invalid("its requestState is malformed"));
        };
        if !self.first_use(&sealed.nonce) {
            return Err(invalid("its requestState was already used"));
        }
        Ok(sealed)
    }

    /// Records `nonce` as used; false when it was (or the record is full).
    fn first_use(&self, nonce: &str) -> bool {
        let now = Instant::now();
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if used.len() >= MAX_LIVE_STATES {
            used.retain(|_, until| *until > now);
        }
        if used.len() >= MAX_LIVE_STATES || used.contains_key(nonce) {
            return false;
        }
        // Kept a little past the state's own expiry (clock granularity).
        used.insert(nonce.to_owned(), now + self.ttl + Duration::from_secs(1));
        drop(used);
        match &self.shared {
            None => true,
            Some(shared) => self.first_use_shared(shared, nonce),
        }
    }

    /// Records `nonce` in the shared directory: false when another process
    /// (or this one) did first, or the record cannot be written (fail closed).
    fn first_use_shared(&self, shared: &SharedUse, nonce: &str) -> bool {
        // Nonces are ours (the state's tag verified), 32 hex digits: a file name.
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        let keep = self.ttl + Duration::from_secs(1);
        {
            let mut swept = shared.swept.lock().unwrap_or_else(|e| e.into_inner());
            if swept.elapsed() >= keep {
                *swept = Instant::now();
                sweep(&shared.dir, keep);
            }
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(shared.dir.join(nonce))
        {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => {
                tracing::error!(
                    "the shared record of used approval states ({}) cannot be written: {e}; the approval is refused",
                    shared.dir.display()
                );
                false
            }
        }
    }
}

/// The person's answer in `responses` to the question `sealed` records.
fn answer(sealed: &Sealed, responses: Option<&InputResponses>) -> Answer {
    let Some(response) = responses.and_then(|r| r.get(APPROVAL_INPUT)) else {
        return Answer::Missing;
    };
    let Ok(result) = serde_json::from_value::<rmcp::model::ElicitResult>(response.clone()) else {
        return invalid("its answer is not an elicitation result");
    };
    match verdict(&result.action, result.content.as_ref()) {
        Err(why) => Answer::Declined(why),
        Ok(()) => match toolhost_contract::unhex::<32>(&sealed.shown) {
            Some(digest) => Answer::Accepted(digest),
            None => invalid("its requestState is malformed"),
        },
    }
}

/// A state that cannot be acted on, saying why.
fn invalid(why: &str) -> Answer {
    Answer::Invalid(format!(
        "the approval could not be verified ({why}); call the tool again to be asked again"
    ))
}

/// Deletes the records in `dir` older than `keep` (their states expired).
fn sweep(dir: &std::path::Path, keep: Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > keep);
        if old {
            // Another replica may have swept it already.
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c".into(),
            tool: "edit".into(),
            summary: "edit: patch /workspace/a.txt (+1 −1 lines)".into(),
            reason: "policy requires approval for `edit`".into(),
        }
    }

    fn seal() -> StateSeal {
        StateSeal::new(&[7u8; 32], Duration::from_secs(60)).expect("key")
    }

    fn accepted(content: Value) -> InputResponses {
        let mut r = InputResponses::new();
        r.insert(
            APPROVAL_INPUT.into(),
            json!({"action": "accept", "content": content}),
        );
        r
    }

    fn state_of(asked: &InputRequiredResult) -> String {
        asked.request_state.clone().expect("a state")
    }

    #[test]
    fn the_request_is_a_form_with_the_summary() {
        let v = serde_json::to_value(params(&request()).expect("valid params")).expect("encodes");
        assert_eq!(v["mode"], "form");
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.contains("patch /workspace/a.txt"))
        );
        assert_eq!(
            v["requestedSchema"]["properties"]["approve"]["type"],
            "boolean"
        );
    }

    #[test]
    fn an_inline_ask_is_an_input_required_result_with_the_elicitation() {
        let asked = seal().ask(&request(), b"bound", None).expect("asks");
        let v = serde_json::to_value(&asked).expect("encodes");
        assert_eq!(v["resultType"], "input_required");
        assert_eq!(
            v["inputRequests"]["approval"]["method"],
            "elicitation/create"
        );
        assert!(
            v["inputRequests"]["approval"]["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("patch /workspace/a.txt"))
        );
        assert!(v["requestState"].is_string());
    }

    #[test]
    fn an_accepted_state_opens_once_for_its_own_call() {
        let s = seal();
        let asked = s.ask(&request(), b"bound", None).expect("asks");
        let state = state_of(&asked);
        let yes = accepted(json!({"approve": true}));
        // Another call or caller: refused, and that does not use it up.
        assert!(matches!(
            s.open(&state, b"other", Some(&yes)).answer,
            Answer::Invalid(_)
        ));
        assert_eq!(
            s.open(&state, b"bound", Some(&yes)).answer,
            Answer::Accepted(shown(&request()))
        );
        let again = s.open(&state, b"bound", Some(&yes)).answer;
        assert!(
            matches!(&again, Answer::Invalid(why) if why.contains("already used")),
            "{again:?}"
        );
    }

    #[test]
    fn a_state_carries_where_its_call_goes_on_from() {
        let s = seal();
        let resume = "toolhost://artifacts/x#d";
        let open = |binding: &[u8]| {
            let asked = s
                .ask(&request(), b"bound", Some(resume.into()))
                .expect("asks");
            s.open(&state_of(&asked), binding, Some(&accepted(json!({}))))
        };
        let opened = open(b"bound");
        assert_eq!(opened.answer, Answer::Accepted(shown(&request())));
        assert_eq!(opened.resume.as_deref(), Some(resume));
        // Another call's state hands on nothing.
        let opened = open(b"other");
        assert!(matches!(opened.answer, Answer::Invalid(_)));
        assert_eq!(opened.resume, None);
    }

    #[test]
    fn tampered_expired_and_declined_states_do_not_approve() {
        let s = seal();
        let state = state_of(&s.ask(&request(), b"bound", None).expect("asks"));
        let yes = accepted(json!({}));
        // One character changed anywhere.
        let mut tampered = state.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).expect("ascii");
        assert!(matches!(
            s.open(&tampered, b"bound", Some(&yes)).answer,
            Answer::Invalid(_)
        ));
        // Sealed with another key.
        let other = StateSeal::new(&[8u8; 32], Duration::from_secs(60)).expect("key");
        let foreign = state_of(&other.ask(&request(), b"bound", None).expect("asks"));
        assert!(matches!(
            s.open(&foreign, b"bound", Some(&yes)).answer,
            Answer::Invalid(_)
        ));
        // Expired.
        let short = StateSeal::new(&[7u8; 32], Duration::from_millis(1)).expect("key");
        let old = state_of(&short.ask(&request(), b"bound", None).expect("asks"));
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            matches!(short.open(&old, b"bound", Some(&yes)).answer, Answer::Invalid(why) if why.contains("expired"))
        );
        // No answer: asked again.
        let state = state_of(&s.ask(&request(), b"bound", None).expect("asks"));
        assert_eq!(s.open(&state, b"bound", None).answer, Answer::Missing);
        // Declined, unchecked.
        let mut no = InputResponses::new();
        no.insert(APPROVAL_INPUT.into(), json!({"action": "decline"}));
        for (responses, why) in [
            (Some(no), "declined"),
            (Some(accepted(json!({"approve": false}))), "unchecked"),
        ] {
            let state = state_of(&s.ask(&request(), b"bound", None).expect("asks"));
            assert!(
                matches!(
                    s.open(&state, b"bound", responses.as_ref()).answer,
                    Answer::Declined(_)
                ),
                "{why}"
            );
        }
    }

    #[tokio::test]
    async fn an_inline_route_asks_once_then_uses_the_answer() {
        let approvals = std::sync::Arc::new(Approvals::new(Duration::from_secs(1)));
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("caps");
        {
            let routed = approvals.inline("c", Some(&caps), None);
            assert_eq!(
                approvals.approve(&request()).await,
                Approval::Pending(request().summary)
            );
            assert_eq!(routed.asked(), Some(request()));
        }
        // The route is gone with its call.
        assert!(matches!(
            approvals.approve(&request()).await,
            Approval::Denied(_)
        ));
        let answer = Answer::Accepted(shown(&request()));
        {
            let _routed = approvals.inline("c", Some(&caps), Some(answer));
            assert_eq!(approvals.approve(&request()).await, Approval::Approved);
        }
        // An answer to something else does not approve this.
        let mut changed = request();
        changed.summary = "edit: patch /workspace/a.txt (+9 −9 lines)".into();
        {
            let _routed =
                approvals.inline("c", Some(&caps), Some(Answer::Accepted(shown(&request()))));
            assert!(matches!(
                approvals.approve(&changed).await,
                Approval::Denied(_)
            ));
        }
        // No elicitation capability: never asked.
        let _routed = approvals.inline("c", None, None);
        assert!(matches!(
            approvals.approve(&request()).await,
            Approval::Denied(_)
        ));
    }

    #[test]
    fn a_state_opens_once_across_replicas_that_share_a_directory() {
        let dir = tempfile::tempdir().expect("tmp");
        let replica = || seal().recording_in(dir.path()).expect("dir");
        let (a, b) = (replica(), replica());
        let state = state_of(&a.ask(&request(), b"bound", None).expect("asks"));
        let yes = accepted(json!({"approve": true}));
        assert!(matches!(
            b.open(&state, b"bound", Some(&yes)).answer,
            Answer::Accepted(_)
        ));
        assert!(
            matches!(a.open(&state, b"bound", Some(&yes)).answer, Answer::Invalid(why) if why.contains("already used")),
            "replayed on the replica that asked"
        );
        // Without the shared record, each replica would have opened it once.
        let (c, d) = (seal(), seal());
        let state = state_of(&c.ask(&request(), b"bound", None).expect("asks"));
        assert!(matches!(
            c.open(&state, b"bound", Some(&yes)).answer,
            Answer::Accepted(_)
        ));
        assert!(matches!(
            d.open(&state, b"bound", Some(&yes)).answer,
            Answer::Accepted(_)
        ));
    }
}
