//! Bounded stdout/stderr for guests.

use bytes::Bytes;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// The error a guest's write fails with once it passes its output limit; the
/// runtime finds it by downcasting and reports `output_limit`.
#[derive(Debug, thiserror::Error)]
#[error("guest wrote more than {limit} bytes to {stream}")]
pub(crate) struct OutputLimitExceeded {
    pub(crate) stream: &'static str,
    pub(crate) limit: usize,
}

#[derive(Debug, Default)]
struct Buffer {
    bytes: Vec<u8>,
    overflowed: bool,
}

/// An in-memory output pipe that keeps at most `limit` bytes and traps the
/// guest on the write that would pass it.
#[derive(Debug, Clone)]
pub(crate) struct BoundedPipe {
    stream: &'static str,
    limit: usize,
    buf: Arc<Mutex<Buffer>>,
}

impl BoundedPipe {
    pub(crate) fn new(stream: &'static str, limit: usize) -> Self {
        BoundedPipe {
            stream,
            limit,
            buf: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.buf.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What was written, lossily decoded.
    pub(crate) fn contents(&self) -> String {
        String::from_utf8_lossy(&self.lock().bytes).into_owned()
    }

    /// Whether the guest tried to write past the limit.
    pub(crate) fn overflowed(&self) -> bool {
        self.lock().overflowed
    }

    fn push(&self, data: &[u8]) -> Result<(), OutputLimitExceeded> {
        let mut b = self.lock();
        if b.bytes.len() + data.len() > self.limit {
            b.overflowed = true;
            let room = self.limit - b.bytes.len();
            b.bytes.extend_from_slice(&data[..room]);
            return Err(OutputLimitExceeded {
                stream: self.stream,
                limit: self.limit,
            });
        }
        b.bytes.extend_from_slice(data);
        Ok(())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for BoundedPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for BoundedPipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.push(&bytes)
            .map_err(|e| StreamError::Trap(wasmtime::Error::new(e)))
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        // Always admit a write so that a flood reaches `write` and traps with
        // a precise error instead of blocking forever.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for BoundedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(
            self.push(buf)
                .map(|()| buf.len())
                .map_err(std::io::Error::other),
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for BoundedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for BoundedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_limit_then_fails() {
        let p = BoundedPipe::new("stdout", 5);
        assert!(p.push(b"abc").is_ok());
        assert!(p.push(b"defg").is_err());
        assert!(p.overflowed());
        assert_eq!(p.contents(), "abcde");
    }
}
