//! `ask` goes to the person at the client: an approver that sends
//! `elicitation/create` with the bounded approval summary.

use rmcp::model::{ClientCapabilities, ElicitRequestParams, ElicitationAction};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;
use toolhost_pipeline::{Approval, ApprovalRequest, Approver};

/// Asks the client's user through MCP elicitation. Fails closed: a client
/// that did not declare the elicitation capability, a decline, a cancel, a
/// timeout or a transport error all deny.
#[derive(Debug)]
pub struct ElicitApprover {
    /// The client connection and whether it can ask its user (form mode).
    peer: Mutex<Option<(Peer<RoleServer>, bool)>>,
    timeout: Duration,
}

impl ElicitApprover {
    /// An approver that waits at most `timeout` for the user's answer.
    pub fn new(timeout: Duration) -> ElicitApprover {
        ElicitApprover {
            peer: Mutex::new(None),
            timeout,
        }
    }

    /// The client connection to ask and the capabilities it declared (set
    /// from each request's context: under the stateless protocol revision
    /// they come with every request).
    pub fn set_peer(&self, peer: Peer<RoleServer>, capabilities: Option<&ClientCapabilities>) {
        let can_ask = capabilities
            .and_then(|c| c.elicitation.as_ref())
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        *self.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some((peer, can_ask));
    }

    fn peer(&self) -> Option<(Peer<RoleServer>, bool)> {
        self.peer.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The elicitation request for one approval: the bounded summary as the
/// message and a single optional `approve` switch (accepting without
/// touching it approves).
fn params(request: &ApprovalRequest) -> Result<ElicitRequestParams, serde_json::Error> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": format!(
            "Allow the tool call `{}`?\n{}\n({})",
            request.tool, request.summary, request.reason
        ),
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

#[async_trait::async_trait]
impl Approver for ElicitApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let Some((peer, can_ask)) = self.peer() else {
            return Approval::Denied("there is no client connection to ask".into());
        };
        if !can_ask {
            return Approval::Denied(
                "the client cannot ask its user (it did not declare the elicitation capability)"
                    .into(),
            );
        }
        let params = match params(request) {
            Ok(p) => p,
            Err(e) => {
                return Approval::Denied(format!("the approval request could not be built: {e}"));
            }
        };
        match peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
        {
            Ok(r) if r.action == ElicitationAction::Accept => {
                let declined = r
                    .content
                    .as_ref()
                    .and_then(|c| c.get("approve"))
                    .is_some_and(|v| v == &json!(false));
                if declined {
                    Approval::Denied("the user unchecked `approve`".into())
                } else {
                    Approval::Approved
                }
            }
            Ok(r) => Approval::Denied(match r.action {
                ElicitationAction::Decline => "the user declined".into(),
                ElicitationAction::Cancel => "the user cancelled".into(),
                other => format!("the user answered {other:?}"),
            }),
            Err(rmcp::ServiceError::Timeout { timeout }) => Approval::Denied(format!(
                "the user did not answer within {} s",
                timeout.as_secs()
            )),
            Err(e) => Approval::Denied(format!("asking the user failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_a_form_with_the_summary() {
        let p = params(&ApprovalRequest {
            call_id: "c".into(),
            tool: "edit".into(),
            summary: "edit: patch /workspace/a.txt (+1 −1 lines)".into(),
            reason: "policy requires approval for `edit`".into(),
        })
        .expect("valid params");
        let v = serde_json::to_value(&p).expect("serializes");
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
}
