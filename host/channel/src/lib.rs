//! The channel between toolhost's serving process and one of its worker
//! processes: how frames move, not what they say (the messages are the
//! worker crate's).
//!
//! A frame is a 4-byte little-endian length and its bytes. Small frames go
//! through [`ring`]s in memory the two processes share, seen by a spinning
//! reader with no system call; the socket wakes a side that parked and
//! carries the frames too large for a ring. The serving process reads with
//! this crate what a worker, possibly compromised, wrote: every length and
//! counter is checked against its own bounds, so it is fuzzed (the
//! `channel` target in `tests/fuzz`).

pub mod ring;

use ring::{Corrupt, Lanes, Popped};
use serde::{Deserialize, Serialize};

/// The largest frame either side accepts (a compiled artifact included).
pub const MAX_FRAME: usize = 1 << 30;

/// Why the channel failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The other side went away, or the pipe broke.
    #[error("the channel closed: {0}")]
    Io(#[from] std::io::Error),
    /// A frame was not a message.
    #[error("a malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A frame was larger than the bound: the call's (see
    /// [`Channel::set_max_frame`]) when read, [`MAX_FRAME`] when written.
    #[error("a frame of {0} bytes, more than its bound")]
    TooLarge(usize),
    /// The shared region holds what no well-behaved peer writes.
    #[error(transparent)]
    Corrupt(#[from] Corrupt),
}

/// One end of the channel, as each side uses it on its hot path: a wait
/// for the other side's frame spins on the ring for a while before it
/// parks. Parking costs a wake-up on each side of every call (tens of
/// microseconds on a virtual machine's idle CPU, where a round trip that
/// never parks takes a few); a spin is bounded, and yields the CPU between
/// tries (on every try in a process that has one CPU only), so the other
/// side still runs when both share one CPU.
pub struct Channel {
    /// The socket, for waits that park and for writes.
    io: tokio::net::UnixStream,
    /// The same socket, read directly while spinning: tokio's readiness
    /// only moves when its reactor runs, which a spin does not let it do.
    raw: std::os::unix::net::UnixStream,
    /// Storage for bytes read; its length is what was ever zeroed, so a
    /// read never zeroes its target again (64 KiB on every try of a spin
    /// was a fifth of the serving side's time).
    buf: Vec<u8>,
    /// Where the unreturned bytes start in `buf`.
    start: usize,
    /// Where they end.
    end: usize,
    /// The largest frame accepted.
    max_frame: usize,
    /// The rings in memory shared with the other side, once attached.
    lanes: Option<Lanes>,
    /// Frames the ring said are on the socket, not yet taken from it.
    owed: usize,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("buffered", &(self.end - self.start))
            .field("max_frame", &self.max_frame)
            .finish_non_exhaustive()
    }
}

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;

/// The most buffer kept between frames.
const RETAINED: usize = 1024 * 1024;

impl Channel {
    /// The channel over `socket` (made non-blocking), accepting frames of
    /// at most `max_frame` bytes. Must be called in a tokio runtime.
    pub fn new(
        socket: std::os::unix::net::UnixStream,
        max_frame: usize,
    ) -> std::io::Result<Channel> {
        socket.set_nonblocking(true)?;
        let raw = socket.try_clone()?;
        Ok(Channel {
            io: tokio::net::UnixStream::from_std(socket)?,
            raw,
            buf: Vec::new(),
            start: 0,
            end: 0,
            max_frame,
            lanes: None,
            owed: 0,
        })
    }

    /// From now on, frames go through the rings in `lanes` (the socket
    /// carries those too large for a ring, and wake-ups). Both sides attach
    /// before either writes a frame after the ones already on the socket.
    pub fn attach(&mut self, lanes: Lanes) {
        self.lanes = Some(lanes);
    }

    /// Sets the largest frame accepted from now on (never past
    /// [`MAX_FRAME`]).
    pub fn set_max_frame(&mut self, max_frame: usize) {
        self.max_frame = max_frame.min(MAX_FRAME);
    }

    /// A whole frame among the bytes read already, if there is one.
    fn buffered_frame(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        let pending = &self.buf[self.start..self.end];
        let Some(len) = pending.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > self.max_frame {
            return Err(WireError::TooLarge(len));
        }
        if pending.len() < 4 + len {
            return Ok(None);
        }
        let frame = pending[4..4 + len].to_vec();
        self.start += 4 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(Some(frame))
    }

    /// Reads what the socket holds now, without waiting. `Ok(false)`:
    /// nothing to read.
    fn read_now(&mut self, through_tokio: bool) -> Result<bool, WireError> {
        use std::io::Read as _;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > RETAINED {
                // A large frame's room is not kept for the worker's life.
                self.buf.truncate(READ_CHUNK);
                self.buf.shrink_to_fit();
            }
        } else if self.buf.len() - self.end < READ_CHUNK && self.start > 0 {
            // Keep the unreturned bytes and room for a chunk after them.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK {
            self.buf.resize(self.end + READ_CHUNK, 0);
        }
        let raw = &self.raw;
        let target = &mut self.buf[self.end..];
        let got = if through_tokio {
            // After a park: through tokio, so that a stale readiness is
            // cleared when there is nothing after all.
            self.io
                .try_io(tokio::io::Interest::READABLE, || (&*raw).read(target))
        } else {
            (&*raw).read(target)
        };
        match got {
            Ok(0) => Err(WireError::Io(std::io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => {
                self.end += n;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(WireError::Io(e)),
        }
    }

    /// The next frame among what has come already, with no system call:
    /// from the ring, or from the bytes read from the socket.
    fn next_ready(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        let Some(lanes) = self.lanes.as_mut() else {
            return self.buffered_frame();
        };
        loop {
            if self.owed > 0 {
                // Its place in the ring came: the next frame on the socket
                // (the empty ones are wake-ups).
                while let Some(f) = self.buffered_frame()? {
                    if !f.is_empty() {
                        self.owed -= 1;
                        return Ok(Some(f));
                    }
                }
                return Ok(None);
            }
            match lanes.pop(self.max_frame)? {
                Some(Popped::Frame(f)) => return Ok(Some(f)),
                Some(Popped::OnSocket) => self.owed += 1,
                None => break,
            }
        }
        // The ring is empty now, and what the socket held was read before:
        // a frame there has no place in the ring (its marker comes first).
        while let Some(f) = self.buffered_frame()? {
            if !f.is_empty() {
                return Err(WireError::Corrupt(Corrupt(format!(
                    "a frame of {} bytes on the socket out of turn",
                    f.len()
                ))));
            }
        }
        Ok(None)
    }

    /// The next frame, if one has come whole (never waits; reads what the
    /// socket holds).
    pub fn try_frame(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        loop {
            if let Some(f) = self.next_ready()? {
                return Ok(Some(f));
            }
            if !self.read_now(false)? {
                return Ok(None);
            }
        }
    }

    /// One try of a spin: with rings, the socket is read only when a frame
    /// is owed from it, so that a spin makes no system call.
    fn spin_once(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        if self.lanes.is_some() && self.owed == 0 {
            return self.next_ready();
        }
        self.try_frame()
    }

    /// The next frame: spinning for up to `spin` (yielding the CPU between
    /// tries), then parked until it comes. Cancel-safe: a frame read in
    /// part stays buffered.
    pub async fn frame(&mut self, spin: std::time::Duration) -> Result<Vec<u8>, WireError> {
        if let Some(f) = self.try_frame()? {
            return Ok(f);
        }
        if !spin.is_zero() {
            // On one CPU the other side runs only while this one yields,
            // so it yields on every try there: handing the CPU over that
            // way costs less than a park and a wake-up through the event
            // loop (the stdio bench on one CPU: 1.6x in process at p50
            // spinning so, 2.1x parking at once).
            let every = if one_cpu() { 1 } else { 16 };
            let until = std::time::Instant::now() + spin;
            let mut tries = 0u32;
            while std::time::Instant::now() < until {
                tries = tries.wrapping_add(1);
                if tries.is_multiple_of(every) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                if let Some(f) = self.spin_once()? {
                    return Ok(f);
                }
            }
        }
        // Said before the last look at the ring; taken back when the wait
        // ends, or is dropped.
        let _parked = self.lanes.as_ref().map(Lanes::park);
        if let Some(f) = self.try_frame()? {
            return Ok(f);
        }
        loop {
            self.io.readable().await?;
            loop {
                let more = match self.read_now(true) {
                    Ok(more) => more,
                    Err(e) => {
                        // What came before the socket closed still counts.
                        return match self.next_ready()? {
                            Some(f) => Ok(f),
                            None => Err(e),
                        };
                    }
                };
                if let Some(f) = self.next_ready()? {
                    return Ok(f);
                }
                if !more {
                    break;
                }
            }
        }
    }

    /// The next message (see [`Channel::frame`]).
    pub async fn read<T>(&mut self, spin: std::time::Duration) -> Result<T, WireError>
    where
        T: for<'de> Deserialize<'de>,
    {
        Ok(serde_json::from_slice(&self.frame(spin).await?)?)
    }

    /// Writes one frame: into the ring when it fits, else on the socket
    /// (a marker in the ring keeps its place); written at once when the
    /// socket's buffer takes it, else as the socket drains.
    pub async fn write_frame(&self, bytes: &[u8]) -> Result<(), WireError> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|_| bytes.len() <= MAX_FRAME)
            .ok_or(WireError::TooLarge(bytes.len()))?;
        if let Some(lanes) = &self.lanes {
            if lanes.push(bytes)? {
                return self.wake(lanes).await;
            }
            self.mark(lanes).await?;
        }
        let mut framed = Vec::with_capacity(4 + bytes.len());
        framed.extend_from_slice(&len.to_le_bytes());
        framed.extend_from_slice(bytes);
        self.write_all(&framed).await
    }

    /// Writes one message as a frame of its JSON.
    pub async fn write<T: Serialize>(&self, msg: &T) -> Result<(), WireError> {
        self.write_frame(&serde_json::to_vec(msg)?).await
    }

    /// Wakes the other side if it has parked: an empty frame on the socket.
    async fn wake(&self, lanes: &Lanes) -> Result<(), WireError> {
        if lanes.peer_parked() {
            self.write_all(&0u32.to_le_bytes()).await?;
        }
        Ok(())
    }

    /// Puts a marker in the ring for a frame about to go on the socket,
    /// waiting for room if the other side has not read the ring yet (it
    /// reads while it waits for anything, and the call's deadline bounds a
    /// peer that never does).
    async fn mark(&self, lanes: &Lanes) -> Result<(), WireError> {
        let mut tries = 0u32;
        while !lanes.push_marker()? {
            tries += 1;
            self.wake(lanes).await?;
            if tries < 64 {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            }
        }
        Ok(())
    }

    /// Debug builds' forgeries: the rings, to write past the protocol.
    #[cfg(debug_assertions)]
    pub fn lanes(&self) -> Option<&Lanes> {
        self.lanes.as_ref()
    }

    /// Writes `bytes` as they are (a frame's parts; the test worker's
    /// forgeries).
    pub async fn write_all(&self, mut bytes: &[u8]) -> Result<(), WireError> {
        use std::io::Write as _;
        while !bytes.is_empty() {
            match (&self.raw).write(bytes) {
                Ok(0) => return Err(WireError::Io(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.io.writable().await?;
                    let raw = &self.raw;
                    match self
                        .io
                        .try_io(tokio::io::Interest::WRITABLE, || (&*raw).write(bytes))
                    {
                        Ok(n) => bytes = &bytes[n..],
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(WireError::Io(e)),
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(WireError::Io(e)),
            }
        }
        Ok(())
    }
}

/// Whether this process may run on one CPU only.
fn one_cpu() -> bool {
    static ONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ONE.get_or_init(|| std::thread::available_parallelism().map_or(true, |n| n.get() == 1))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ring::INLINE_MAX;

    /// Messages for the tests (the worker crate has the real ones).
    #[derive(Debug, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Msg {
        Cancel,
        ListTools { seq: u64 },
    }
    use std::time::Duration;

    fn pair(max: usize) -> (Channel, Channel) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        (Channel::new(a, max).unwrap(), Channel::new(b, max).unwrap())
    }

    /// A pair sharing rings, as the serving process and a worker do.
    fn ringed(max: usize) -> (Channel, Channel) {
        let (mut a, mut b) = pair(max);
        let region = crate::ring::Region::create().unwrap();
        let theirs = crate::ring::Region::map(region.fd().unwrap()).unwrap();
        a.attach(Lanes::serving(region));
        b.attach(Lanes::worker(theirs));
        (a, b)
    }

    #[tokio::test]
    async fn through_rings_frames_of_every_size_keep_their_order_and_a_parked_side_wakes() {
        let (a, mut b) = ringed(MAX_FRAME);
        // Small frames in the ring, large ones on the socket in between,
        // more than a ring holds in all.
        let sizes = [
            0usize,
            1,
            300,
            INLINE_MAX,
            INLINE_MAX + 1,
            5,
            200_000,
            9,
            70_000,
        ];
        let frames: Vec<Vec<u8>> = sizes
            .iter()
            .cycle()
            .take(40)
            .enumerate()
            .map(|(i, &n)| (0..n).map(|b| (b + i) as u8).collect())
            .collect();
        let expect = frames.clone();
        let writer = tokio::spawn(async move {
            for f in &frames {
                a.write_frame(f).await.unwrap();
            }
            a
        });
        for (i, f) in expect.iter().enumerate() {
            let got = b.frame(Duration::from_micros(50)).await.unwrap();
            assert_eq!(got.len(), f.len(), "frame {i}");
            assert!(got == *f, "frame {i}");
        }
        let a = writer.await.unwrap();
        // Nothing more: the reader parks; a frame written later wakes it.
        let later = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            a.write(&Msg::Cancel).await.unwrap();
            a.write(&Msg::ListTools { seq: 3 }).await.unwrap();
            a
        });
        assert!(matches!(
            b.read(Duration::from_micros(100)).await,
            Ok(Msg::Cancel)
        ));
        let a = later.await.unwrap();
        // A frame in the ring before the other side went away still
        // comes; then the channel says it closed.
        drop(a);
        assert!(matches!(
            b.read(Duration::ZERO).await,
            Ok(Msg::ListTools { seq: 3 })
        ));
        assert!(matches!(
            b.read::<Msg>(Duration::ZERO).await,
            Err(WireError::Io(_))
        ));
    }

    #[tokio::test]
    async fn through_rings_a_frame_on_the_socket_out_of_turn_is_refused() {
        let (a, mut b) = ringed(MAX_FRAME);
        a.write_all(&[3, 0, 0, 0, b'a', b'b', b'c']).await.unwrap();
        // Read before the ring is looked at: out of turn.
        assert!(matches!(b.try_frame(), Err(WireError::Corrupt(_))));
        // Wake-ups (empty frames) are not frames.
        let (a, mut b) = ringed(MAX_FRAME);
        a.write_all(&[0; 12]).await.unwrap();
        assert!(b.try_frame().unwrap().is_none());
        // The policy's bound holds for a frame on the socket too.
        let (a, mut b) = ringed(1000);
        a.write_frame(&[1u8; 20_000]).await.unwrap();
        assert!(matches!(b.try_frame(), Err(WireError::TooLarge(20_000))));
    }

    #[tokio::test]
    async fn messages_go_through_whole_and_in_order() {
        let (a, mut b) = pair(MAX_FRAME);
        a.write(&Msg::Cancel).await.unwrap();
        a.write(&Msg::ListTools { seq: 1 }).await.unwrap();
        assert!(matches!(b.read(Duration::ZERO).await, Ok(Msg::Cancel)));
        assert!(matches!(
            b.read(Duration::from_millis(1)).await,
            Ok(Msg::ListTools { seq: 1 })
        ));
        // Nothing more: a spin gives up and parks; a frame written later
        // wakes it.
        let later = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            a.write(&Msg::Cancel).await.unwrap();
            a
        });
        assert!(matches!(
            b.read(Duration::from_micros(100)).await,
            Ok(Msg::Cancel)
        ));
        drop(later.await.unwrap());
        // The other side gone: the channel says so.
        assert!(matches!(
            b.read::<Msg>(Duration::ZERO).await,
            Err(WireError::Io(_))
        ));
    }

    #[tokio::test]
    async fn a_frame_in_pieces_is_read_whole_and_a_large_one_refused() {
        use std::io::Write as _;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut b = Channel::new(b, 16).unwrap();
        let mut raw = a;
        raw.write_all(&[5, 0]).unwrap();
        assert!(b.try_frame().unwrap().is_none());
        raw.write_all(&[0, 0, b'h', b'e']).unwrap();
        assert!(b.try_frame().unwrap().is_none());
        raw.write_all(b"llo").unwrap();
        assert_eq!(b.try_frame().unwrap().as_deref(), Some(&b"hello"[..]));
        // A length past the bound is refused before it is read.
        raw.write_all(&17u32.to_le_bytes()).unwrap();
        assert!(matches!(b.try_frame(), Err(WireError::TooLarge(17))));
        // Not a message: malformed, not a panic.
        let (a, mut b) = pair(MAX_FRAME);
        a.write_frame(b"{\"nope\":1}").await.unwrap();
        assert!(matches!(
            b.read::<Msg>(Duration::ZERO).await,
            Err(WireError::Malformed(_))
        ));
    }

    #[tokio::test]
    async fn a_frame_larger_than_the_sockets_buffer_goes_through() {
        let (a, mut b) = pair(MAX_FRAME);
        let big = vec![7u8; 8 << 20];
        let sent = big.clone();
        let writer = tokio::spawn(async move { a.write_frame(&sent).await });
        assert_eq!(b.frame(Duration::ZERO).await.unwrap(), big);
        writer.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn frames_of_mixed_sizes_in_odd_pieces_come_back_whole() {
        use std::io::Write as _;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut b = Channel::new(b, MAX_FRAME).unwrap();
        // Sizes around the read chunk, so the buffer both compacts and grows.
        let frames: Vec<Vec<u8>> = (0..120u32)
            .map(|i| vec![i as u8; ((i * 7919) % 150_000) as usize])
            .collect();
        let mut bytes = Vec::new();
        for f in &frames {
            bytes.extend_from_slice(&(f.len() as u32).to_le_bytes());
            bytes.extend_from_slice(f);
        }
        let writer = std::thread::spawn(move || {
            let mut raw = a;
            let mut at = 0;
            let mut piece = 1;
            while at < bytes.len() {
                let to = (at + piece).min(bytes.len());
                raw.write_all(&bytes[at..to]).unwrap();
                at = to;
                piece = piece * 3 % 100_003 + 1;
            }
        });
        for f in &frames {
            assert_eq!(&b.frame(Duration::from_micros(50)).await.unwrap(), f);
        }
        writer.join().unwrap();
        assert!(
            b.buf.len() <= RETAINED + READ_CHUNK,
            "kept {} bytes",
            b.buf.len()
        );
    }
}
