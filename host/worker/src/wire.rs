//! The channel between the serving process and a worker: frames of a
//! 4-byte little-endian length and a JSON message (the compiled artifact
//! goes as one raw frame after `Start`).

use crate::wall::{WallSpec, WallStatus};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use toolhost_contract::clock::PortableClock;
use toolhost_contract::{ContentBlock, ContextEvent, ToolDescriptor, ToolFailure};
use toolhost_effects::{OverlaySnapshot, TxSnapshot};
use toolhost_policy::ToolPolicy;
use toolhost_runtime::{RelayError, RelayedRequest, RelayedResponse};

/// The largest frame either side accepts (a compiled artifact included).
pub const MAX_FRAME: usize = 1 << 30;

/// From the serving process to a worker.
// Externally tagged: an internally tagged enum buffers its content, and
// that cannot hold the i128 timestamps of a staged file's record.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// The first message: what the worker runs, and its walls. The
    /// compiled artifact follows as a raw frame.
    Start(Box<Start>),
    /// Run `execute` (and a same-instance render when the policy says).
    Execute(Box<Execute>),
    /// Run `render` in a sandbox that grants nothing.
    Render(Box<Render>),
    /// Run the component's `list-tools` (under a policy granting nothing).
    ListTools,
    /// The running call's caller cancelled it.
    Cancel,
    /// The answer to a relayed HTTP request.
    Http {
        /// The request's number.
        id: u64,
        /// The response, or why there is none.
        result: Result<RelayedResponse, RelayError>,
    },
}

/// What a worker runs.
#[derive(Debug, Serialize, Deserialize)]
pub struct Start {
    /// The component's origin (for messages).
    pub origin: PathBuf,
    /// Its SHA-256.
    pub id: String,
    /// Its tools, as the serving process read them.
    pub tools: Vec<ToolDescriptor>,
    /// The engine's wasm stack limit (must match the artifact's engine).
    pub max_wasm_stack: usize,
    /// The epoch tick, in microseconds.
    pub epoch_tick_us: u64,
    /// Whether file I/O runs on the calling thread.
    pub fs_on_calling_thread: bool,
    /// Whether writes are staged.
    pub stage_writes: bool,
    /// Test builds only: link the escape hatch.
    pub escape_hatch: bool,
    /// The worker's own directory (its staging lives there).
    pub dir: PathBuf,
    /// What it may reach on disk.
    pub walls: WallSpec,
}

/// One `execute`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Execute {
    /// The tool, by the name the component declared.
    pub tool: String,
    /// The arguments, JSON.
    pub arguments: String,
    /// The call's policy (environment values already resolved into
    /// `env_set`); `None`: the same as the worker's last call's.
    pub policy: Option<ToolPolicy>,
    /// Fuel.
    pub fuel: u64,
    /// Deadline, in nanoseconds from the start.
    pub deadline_ns: u64,
    /// `None`: the OS's randomness; else the seed.
    pub seed: Option<u64>,
    /// The guest's clock (`None`: the worker's system clock).
    pub clock: Option<PortableClock>,
    /// Whether the caller listens to what the tool reports while it runs.
    pub live: bool,
    /// A script's call: what the script's transaction stages in the
    /// call's granted directories (`None`: a call of its own).
    pub transaction: Option<TxSnapshot>,
}

/// One pure `render`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Render {
    /// The tool.
    pub tool: String,
    /// The arguments, JSON.
    pub arguments: String,
    /// The value, JSON.
    pub value: String,
    /// The call's policy (only its limits apply).
    pub policy: ToolPolicy,
}

/// From a worker to the serving process.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// Walled in (as far as the kernel allowed) and loaded.
    Ready {
        /// The walls it built.
        walls: WallStatus,
    },
    /// It could not start.
    Failed {
        /// Why.
        reason: String,
    },
    /// What the running tool reported.
    Context {
        /// The event.
        event: ContextEvent,
    },
    /// An outgoing HTTP request for the serving process's gate.
    Http {
        /// Its number, for the answer.
        id: u64,
        /// The request.
        request: RelayedRequest,
    },
    /// An `execute` ended.
    Executed(Box<Executed>),
    /// `list-tools` ended: what the component declared, unchecked.
    Listed {
        /// The declaration, or why there is none.
        declared: Result<toolhost_runtime::Declared, String>,
    },
    /// A `render` ended.
    Rendered {
        /// Its outcome.
        outcome: Result<Option<Vec<ContentBlock>>, ToolFailure>,
    },
}

/// How an `execute` ended.
#[derive(Debug, Serialize, Deserialize)]
pub struct Executed {
    /// The value or the failure.
    pub outcome: Result<String, ToolFailure>,
    /// A same-instance render's outcome.
    pub rendered: Option<Result<Option<Vec<ContentBlock>>, ToolFailure>>,
    /// What the sandbox observed.
    pub report: toolhost_runtime::ExecutionReport,
    /// What it staged: (guest path, host directory, overlay) per grant.
    pub staged: Vec<(String, PathBuf, OverlaySnapshot)>,
    /// A script's call: the transaction as the call left it.
    pub transaction: Option<TxSnapshot>,
    /// Reads of the guest's clock (to move the caller's copy on).
    pub clock_reads: u64,
}

/// Why the channel failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The other side went away, or the pipe broke.
    #[error("the channel closed: {0}")]
    Io(#[from] std::io::Error),
    /// A frame was not a message.
    #[error("a malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A frame was larger than [`MAX_FRAME`].
    #[error("a frame of {0} bytes (most is {MAX_FRAME})")]
    TooLarge(usize),
}

/// Reads one frame.
pub async fn read_frame<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> Result<Vec<u8>, WireError> {
    use tokio::io::AsyncReadExt as _;
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge(len));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    Ok(buf)
}

/// Writes one frame.
pub async fn write_frame<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    bytes: &[u8],
) -> Result<(), WireError> {
    use tokio::io::AsyncWriteExt as _;
    if bytes.len() > MAX_FRAME {
        return Err(WireError::TooLarge(bytes.len()));
    }
    let len = u32::try_from(bytes.len()).map_err(|_| WireError::TooLarge(bytes.len()))?;
    w.write_all(&len.to_le_bytes()).await?;
    w.write_all(bytes).await?;
    w.flush().await?;
    Ok(())
}

/// Reads one message.
pub async fn read<R, T>(r: &mut R) -> Result<T, WireError>
where
    R: tokio::io::AsyncRead + Unpin,
    T: for<'de> Deserialize<'de>,
{
    Ok(serde_json::from_slice(&read_frame(r).await?)?)
}

/// Writes one message: its length and its JSON in one write.
pub async fn write<W, T>(w: &mut W, msg: &T) -> Result<(), WireError>
where
    W: tokio::io::AsyncWrite + Unpin,
    T: Serialize,
{
    use tokio::io::AsyncWriteExt as _;
    let mut buf = vec![0u8; 4];
    serde_json::to_writer(&mut buf, msg)?;
    let n = buf.len() - 4;
    if n > MAX_FRAME {
        return Err(WireError::TooLarge(n));
    }
    let len = u32::try_from(n).map_err(|_| WireError::TooLarge(n))?;
    buf[..4].copy_from_slice(&len.to_le_bytes());
    w.write_all(&buf).await?;
    w.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_message_goes_through_in_one_frame_and_a_huge_one_is_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write(&mut a, &ToWorker::Cancel).await.unwrap();
        write(&mut a, &ToWorker::ListTools).await.unwrap();
        assert!(matches!(
            read::<_, ToWorker>(&mut b).await,
            Ok(ToWorker::Cancel)
        ));
        assert!(matches!(
            read::<_, ToWorker>(&mut b).await,
            Ok(ToWorker::ListTools)
        ));
        // A length past the bound is refused before anything is allocated.
        use tokio::io::AsyncWriteExt as _;
        a.write_all(&u32::MAX.to_le_bytes()).await.unwrap();
        assert!(matches!(
            read::<_, ToWorker>(&mut b).await,
            Err(WireError::TooLarge(_))
        ));
        // Not a message: malformed, not a panic.
        let (mut a, mut b) = tokio::io::duplex(64);
        write_frame(&mut a, b"{\"nope\":1}").await.unwrap();
        assert!(matches!(
            read::<_, FromWorker>(&mut b).await,
            Err(WireError::Malformed(_))
        ));
    }
}
