//! The channel's fast lane: a region of memory shared by the serving
//! process and one worker, holding one ring of frames each way.
//!
//! A frame put in a ring costs its copy and no system call: the other side,
//! spinning for it, sees it at once. Only a side that has parked (it says
//! so in the region) is woken, with an empty frame on the socket. Frames
//! that do not fit go on the socket, and a marker in the ring keeps their
//! place in order.
//!
//! The serving process trusts nothing in the region: the worker may write
//! any of it at any time. Each side keeps its own copy of the counters it
//! owns (what it wrote, what it read) and only publishes them; a counter
//! read from the region is checked against its own before use, and a frame
//! is copied out, then decoded from the copy.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};

/// Words (8 bytes) in each ring: 64 KiB, a power of two.
const RING_WORDS: usize = 8 * 1024;
/// Mask of a ring position.
const MASK: u64 = RING_WORDS as u64 - 1;
/// The largest frame put in a ring; a larger one goes on the socket.
pub const INLINE_MAX: usize = 16 * 1024;
/// Words between the counters: one cache line each, so that the two sides
/// do not write the same line.
const LINE: usize = 8;
/// The header: per direction, a written, a read and a parked counter.
const HEADER_WORDS: usize = 6 * LINE;
/// The region's size in bytes.
pub const REGION_BYTES: usize = (HEADER_WORDS + 2 * RING_WORDS) * 8;

/// A frame's header word: its length, and in the high half its kind.
const KIND_SHIFT: u32 = 32;
/// The frame is in the ring.
const KIND_INLINE: u64 = 0;
/// The frame is the next one on the socket.
const KIND_SOCKET: u64 = 1;

/// Which way a ring carries frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the serving process to the worker.
    ToWorker = 0,
    /// From the worker to the serving process.
    FromWorker = 1,
}

/// What a ring holds was not written by a well-behaved peer.
#[derive(Debug, thiserror::Error)]
#[error("the shared channel is corrupt: {0}")]
pub struct Corrupt(pub String);

/// The shared region, mapped.
pub struct Region {
    base: std::ptr::NonNull<AtomicU64>,
    /// The memory file, kept so the serving process can hand it over.
    fd: OwnedFd,
}

// SAFETY: the region is only ever accessed through atomics.
#[allow(unsafe_code)]
unsafe impl Send for Region {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for Region {}

impl Region {
    /// A new region, zeroed, in a memory file closed on exec (the worker
    /// gets it as a standard stream, which is not).
    #[allow(unsafe_code)]
    pub fn create() -> std::io::Result<Region> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"toolhost-channel".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned here alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let file = std::fs::File::from(fd);
        file.set_len(REGION_BYTES as u64)?;
        Region::map(file.into())
    }

    /// Maps the region in `fd`, which must be a memory file of exactly
    /// [`REGION_BYTES`].
    #[allow(unsafe_code)]
    pub fn map(fd: OwnedFd) -> std::io::Result<Region> {
        let file = std::fs::File::from(fd);
        let len = file.metadata()?.len();
        if len != REGION_BYTES as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a channel region of {len} bytes, not {REGION_BYTES}"),
            ));
        }
        // SAFETY: a fresh shared mapping of a file of that length; nothing
        // else in this process refers to the address it returns.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = std::ptr::NonNull::new(p.cast::<AtomicU64>())
            .ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(Region {
            base,
            fd: file.into(),
        })
    }

    /// A copy of the memory file's descriptor (for the worker).
    pub fn fd(&self) -> std::io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// Word `i` of the region.
    #[allow(unsafe_code)]
    fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < REGION_BYTES / 8);
        // SAFETY: `i` is inside the mapping, which lives as long as `self`,
        // is aligned to a page, and is only accessed as atomic words (the
        // other process included).
        unsafe { &*self.base.as_ptr().add(i) }
    }

    /// The written counter of the ring going `d`.
    fn written(&self, d: Direction) -> &AtomicU64 {
        self.word(d as usize * 3 * LINE)
    }

    /// Its read counter.
    fn read(&self, d: Direction) -> &AtomicU64 {
        self.word((d as usize * 3 + 1) * LINE)
    }

    /// Whether its reader has parked (1) or spins (0).
    fn parked(&self, d: Direction) -> &AtomicU64 {
        self.word((d as usize * 3 + 2) * LINE)
    }

    /// Word `pos` of the ring going `d`.
    fn slot(&self, d: Direction, pos: u64) -> &AtomicU64 {
        self.word(HEADER_WORDS + d as usize * RING_WORDS + (pos & MASK) as usize)
    }
}

impl Drop for Region {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; no reference
        // into it outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), REGION_BYTES);
        }
    }
}

/// A side parked on the socket (see [`Lanes::park`]); spinning again
/// once dropped.
pub struct Parked {
    region: Arc<Region>,
    rx: Direction,
}

impl Parked {
    fn say(&self, parked: bool) {
        self.region
            .parked(self.rx)
            .store(u64::from(parked), Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.say(false);
    }
}

/// What a read of a ring found.
#[derive(Debug, PartialEq, Eq)]
pub enum Popped {
    /// A frame.
    Frame(Vec<u8>),
    /// The next frame is the next one on the socket.
    OnSocket,
}

/// One side's view of the region: the ring it writes and the ring it reads,
/// with its own copies of the counters it owns.
pub struct Lanes {
    region: Arc<Region>,
    tx: Direction,
    rx: Direction,
    /// Words written to `tx` (the region's copy is only published).
    sent: AtomicU64,
    /// Words read from `rx`.
    taken: u64,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("tx", &self.tx)
            .field("taken", &self.taken)
            .finish_non_exhaustive()
    }
}

impl Lanes {
    /// The serving process's side of `region`.
    pub fn serving(region: Region) -> Lanes {
        Lanes::new(region, Direction::ToWorker)
    }

    /// The worker's side of `region`.
    pub fn worker(region: Region) -> Lanes {
        Lanes::new(region, Direction::FromWorker)
    }

    fn new(region: Region, tx: Direction) -> Lanes {
        let rx = match tx {
            Direction::ToWorker => Direction::FromWorker,
            Direction::FromWorker => Direction::ToWorker,
        };
        Lanes {
            region: Arc::new(region),
            tx,
            rx,
            sent: AtomicU64::new(0),
            taken: 0,
        }
    }

    /// Free words in the ring this side writes.
    fn room(&self) -> Result<u64, Corrupt> {
        let sent = self.sent.load(Ordering::Relaxed);
        let read = self.region.read(self.tx).load(Ordering::Acquire);
        let used = sent.wrapping_sub(read);
        if used > RING_WORDS as u64 {
            return Err(Corrupt(format!(
                "the reader says it read {read} words of the {sent} written"
            )));
        }
        Ok(RING_WORDS as u64 - used)
    }

    /// Puts `frame` in the ring (`Ok(false)`: it does not fit now, or is
    /// larger than [`INLINE_MAX`]). The caller is the only writer.
    pub fn push(&self, frame: &[u8]) -> Result<bool, Corrupt> {
        if frame.len() > INLINE_MAX {
            return Ok(false);
        }
        let words = frame.len().div_ceil(8) as u64;
        if self.room()? < 1 + words {
            return Ok(false);
        }
        let at = self.sent.load(Ordering::Relaxed);
        for (i, chunk) in frame.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.region
                .slot(self.tx, at + 1 + i as u64)
                .store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
        self.region.slot(self.tx, at).store(
            KIND_INLINE << KIND_SHIFT | frame.len() as u64,
            Ordering::Relaxed,
        );
        self.publish(at + 1 + words);
        Ok(true)
    }

    /// Puts a marker for a frame written on the socket (`Ok(false)`: the
    /// ring is full).
    pub fn push_marker(&self) -> Result<bool, Corrupt> {
        if self.room()? < 1 {
            return Ok(false);
        }
        let at = self.sent.load(Ordering::Relaxed);
        self.region
            .slot(self.tx, at)
            .store(KIND_SOCKET << KIND_SHIFT, Ordering::Relaxed);
        self.publish(at + 1);
        Ok(true)
    }

    /// Debug builds' forgeries: a header claiming `len` bytes.
    #[cfg(debug_assertions)]
    pub fn push_header(&self, len: u64) {
        let at = self.sent.load(Ordering::Relaxed);
        self.region.slot(self.tx, at).store(len, Ordering::Relaxed);
        self.publish(at + 1);
    }

    /// Debug builds' forgeries: a written counter far past the ring.
    #[cfg(debug_assertions)]
    pub fn scribble(&self) {
        self.region
            .written(self.tx)
            .store(u64::MAX / 2, Ordering::Release);
    }

    /// Debug builds' forgeries (and the fuzz target's): any word of the
    /// region (`word` modulo its length), as a peer may write it.
    #[cfg(debug_assertions)]
    pub fn poke(&self, word: usize, value: u64) {
        self.region
            .word(word % (REGION_BYTES / 8))
            .store(value, Ordering::Release);
    }

    fn publish(&self, sent: u64) {
        self.sent.store(sent, Ordering::Relaxed);
        self.region.written(self.tx).store(sent, Ordering::Release);
    }

    /// Whether the reader of this side's ring has parked (and so must be
    /// woken). Pairs with [`Lanes::park`]: each side first says, then
    /// looks, so that at least one of them sees the other.
    pub fn peer_parked(&self) -> bool {
        fence(Ordering::SeqCst);
        self.region.parked(self.tx).load(Ordering::Relaxed) != 0
    }

    /// This side's parked state in the region, said as `parked` until
    /// the returned guard drops. Pairs with [`Lanes::peer_parked`]: each
    /// side first says, then looks, so that at least one sees the other.
    pub fn park(&self) -> Parked {
        let parked = Parked {
            region: self.region.clone(),
            rx: self.rx,
        };
        parked.say(true);
        parked
    }

    /// The next frame in the ring this side reads, if one is there; at
    /// most `max_frame` bytes.
    pub fn pop(&mut self, max_frame: usize) -> Result<Option<Popped>, Corrupt> {
        let written = self.region.written(self.rx).load(Ordering::Acquire);
        let ready = written.wrapping_sub(self.taken);
        if ready == 0 {
            return Ok(None);
        }
        if ready > RING_WORDS as u64 {
            return Err(Corrupt(format!(
                "the writer says it wrote {written} words, {ready} past the {} read",
                self.taken
            )));
        }
        let header = self
            .region
            .slot(self.rx, self.taken)
            .load(Ordering::Relaxed);
        let len = header & u64::from(u32::MAX);
        let popped = match header >> KIND_SHIFT {
            KIND_INLINE => {
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                if len > max_frame.min(INLINE_MAX) {
                    return Err(Corrupt(format!(
                        "a frame of {len} bytes in the ring (most is {})",
                        max_frame.min(INLINE_MAX)
                    )));
                }
                let words = len.div_ceil(8) as u64;
                if 1 + words > ready {
                    return Err(Corrupt(format!(
                        "a frame of {len} bytes with {} words written",
                        ready - 1
                    )));
                }
                let mut frame = Vec::with_capacity(len);
                for i in 0..words {
                    let w = self
                        .region
                        .slot(self.rx, self.taken + 1 + i)
                        .load(Ordering::Relaxed)
                        .to_le_bytes();
                    let take = (len - frame.len()).min(8);
                    frame.extend_from_slice(&w[..take]);
                }
                self.taken += 1 + words;
                Popped::Frame(frame)
            }
            KIND_SOCKET if len == 0 => {
                self.taken += 1;
                Popped::OnSocket
            }
            kind => {
                return Err(Corrupt(format!("a frame of kind {kind} and length {len}")));
            }
        };
        self.region
            .read(self.rx)
            .store(self.taken, Ordering::Release);
        Ok(Some(popped))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The two sides of one region (the second maps the first's file, as
    /// the worker does).
    fn sides() -> (Lanes, Lanes) {
        let region = Region::create().unwrap();
        let other = Region::map(region.fd().unwrap()).unwrap();
        (Lanes::serving(region), Lanes::worker(other))
    }

    #[test]
    fn frames_of_every_length_come_back_whole_across_the_wrap() {
        let (serving, mut worker) = sides();
        for round in 0..40usize {
            let sent: Vec<Vec<u8>> = (0..17)
                .map(|i| (0..(round * 97 + i * 13) % 3000).map(|b| b as u8).collect())
                .collect();
            for f in &sent {
                assert!(serving.push(f).unwrap());
            }
            for f in &sent {
                assert_eq!(
                    worker.pop(usize::MAX).unwrap(),
                    Some(Popped::Frame(f.clone()))
                );
            }
            assert_eq!(worker.pop(usize::MAX).unwrap(), None);
        }
    }

    #[test]
    fn a_full_ring_says_so_and_a_marker_keeps_the_order() {
        let (serving, mut worker) = sides();
        let big = vec![7u8; INLINE_MAX];
        let mut n = 0;
        while serving.push(&big).unwrap() {
            n += 1;
        }
        assert!(n >= 3, "{n}");
        assert!(!serving.push(&vec![1u8; INLINE_MAX + 1]).unwrap());
        assert!(serving.push_marker().unwrap());
        for _ in 0..n {
            assert!(matches!(
                worker.pop(usize::MAX).unwrap(),
                Some(Popped::Frame(_))
            ));
        }
        assert_eq!(worker.pop(usize::MAX).unwrap(), Some(Popped::OnSocket));
        assert_eq!(worker.pop(usize::MAX).unwrap(), None);
    }

    #[test]
    fn a_parked_reader_is_seen_by_the_writer() {
        let (serving, worker) = sides();
        assert!(!serving.peer_parked());
        let parked = worker.park();
        assert!(serving.peer_parked());
        drop(parked);
        assert!(!serving.peer_parked());
    }

    #[test]
    fn counters_a_peer_scribbled_are_refused() {
        let (mut serving, worker) = sides();
        worker.scribble();
        assert!(serving.pop(usize::MAX).is_err());
        // A header past the bound, and one claiming more than was written.
        let (serving3, mut worker3) = sides();
        serving3.push_header(1 << 20);
        assert!(worker3.pop(usize::MAX).is_err());
        let (serving4, mut worker4) = sides();
        serving4.push_header(100);
        assert!(worker4.pop(usize::MAX).is_err());
        // A frame under the ring's limit but over the reader's.
        let (serving5, mut worker5) = sides();
        assert!(serving5.push(&[0u8; 100]).unwrap());
        assert!(worker5.pop(99).is_err());
        // A reader that says it read more than was written.
        let (serving6, worker6) = sides();
        worker6
            .region
            .read(Direction::ToWorker)
            .store(5, Ordering::Release);
        assert!(serving6.push(b"x").is_err());
    }
}
