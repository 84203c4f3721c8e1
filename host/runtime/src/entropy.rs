//! Where a call's randomness comes from, and the seeded stream that makes
//! a call's randomness reproducible.

use rand_core::TryRng;
use sha2::{Digest, Sha256};
use std::convert::Infallible;

/// Where a call's randomness comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Entropy {
    /// The operating system's generator.
    #[default]
    Os,
    /// A deterministic stream derived from this seed (tests and replay).
    Seeded(u64),
}

/// Blocks of 32 bytes in one cycle of a seeded stream.
const BLOCKS: u64 = 128;

/// A seeded random stream: SHA-256 over (seed, block index) for blocks
/// `0..128`, the 4 KiB cycled. Blocks are hashed as they are read, so a
/// call that reads no randomness (most do not) costs nothing; the stream a
/// recorded session replays is the same byte for byte.
pub(crate) struct SeededStream {
    seed: u64,
    /// Bytes read so far, modulo the cycle's length.
    at: u64,
    block: [u8; 32],
}

impl SeededStream {
    /// The stream of `seed`.
    pub(crate) fn new(seed: u64) -> SeededStream {
        SeededStream {
            seed,
            at: 0,
            block: [0; 32],
        }
    }

    fn next_byte(&mut self) -> u8 {
        let i = (self.at % 32) as usize;
        if i == 0 {
            let mut h = Sha256::new();
            h.update(self.seed.to_le_bytes());
            h.update((self.at / 32).to_le_bytes());
            self.block = h.finalize().into();
        }
        self.at = (self.at + 1) % (BLOCKS * 32);
        self.block[i]
    }
}

/// Reads as wasmtime-wasi's `Deterministic` reads its bytes: a `u32` is
/// four bytes, most significant first; a `u64` two `u32`s, high first.
impl TryRng for SeededStream {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let b = [
            self.next_byte(),
            self.next_byte(),
            self.next_byte(),
            self.next_byte(),
        ];
        Ok(u32::from_be_bytes(b))
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let hi = self.try_next_u32()?;
        let lo = self.try_next_u32()?;
        Ok((u64::from(hi) << 32) | u64::from(lo))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for b in dst {
            *b = self.next_byte();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng as _;

    fn block(seed: u64, i: u64) -> [u8; 32] {
        let mut input = seed.to_le_bytes().to_vec();
        input.extend_from_slice(&i.to_le_bytes());
        Sha256::digest(&input).into()
    }

    #[test]
    fn the_stream_is_the_hashed_blocks_cycled_every_4_kib() {
        let mut s = SeededStream::new(42);
        let mut bytes = vec![0; 2 * 4096 + 7];
        s.fill_bytes(&mut bytes);
        for i in 0..BLOCKS as usize {
            assert_eq!(
                &bytes[i * 32..i * 32 + 32],
                block(42, i as u64),
                "block {i}"
            );
        }
        assert_eq!(bytes[..4096], bytes[4096..8192]);
        assert_eq!(bytes[..7], bytes[8192..]);
        assert_ne!(block(42, 0), block(43, 0));
    }

    #[test]
    fn words_are_read_most_significant_byte_first() {
        let b = block(7, 0);
        let mut s = SeededStream::new(7);
        assert_eq!(s.next_u32(), u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let hi = u64::from(u32::from_be_bytes([b[4], b[5], b[6], b[7]]));
        let lo = u64::from(u32::from_be_bytes([b[8], b[9], b[10], b[11]]));
        assert_eq!(s.next_u64(), (hi << 32) | lo);
    }

    #[test]
    fn reads_of_any_size_continue_one_stream() {
        let mut whole = vec![0; 100];
        SeededStream::new(9).fill_bytes(&mut whole);
        let mut s = SeededStream::new(9);
        let mut parts = vec![0; 100];
        let (a, rest) = parts.split_at_mut(3);
        s.fill_bytes(a);
        let (b, c) = rest.split_at_mut(40);
        s.fill_bytes(b);
        s.fill_bytes(c);
        assert_eq!(whole, parts);
    }
}
