//! The serving side of the worker channel, read against a worker that
//! writes anything: frames into the ring, markers, raw bytes on the
//! socket, and any word of the shared region. The reader never panics,
//! never returns a frame past its bound, and, while the worker keeps to
//! the protocol, returns exactly what was written, in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use toolhost_channel::ring::{Lanes, Region};
use toolhost_channel::{Channel, WireError};

/// Takes `n` bytes from the front of `data`.
fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (a, b) = data.split_at(n.min(data.len()));
    *data = b;
    a
}

fn byte(data: &mut &[u8]) -> u8 {
    take(data, 1).first().copied().unwrap_or(0)
}

fn word(data: &mut &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let b = take(data, 8);
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        let max_frame = 1 + usize::from(u16::from_le_bytes([byte(&mut data), byte(&mut data)]));
        let Ok((a, b)) = std::os::unix::net::UnixStream::pair() else {
            return;
        };
        let (Ok(mut serving), Ok(mut worker)) =
            (Channel::new(a, max_frame), Channel::new(b, max_frame))
        else {
            return;
        };
        let Ok(region) = Region::create() else { return };
        let Ok(theirs) = region.fd().and_then(Region::map) else {
            return;
        };
        serving.attach(Lanes::serving(region));
        worker.attach(Lanes::worker(theirs));
        let Some(lanes) = worker.lanes() else { return };
        let mut honest = true;
        let (mut sent, mut got) = (Vec::new(), Vec::new());
        while !data.is_empty() {
            match byte(&mut data) % 5 {
                // A frame, as an honest worker writes it.
                0 | 1 => {
                    let n = usize::from(byte(&mut data)) * 97;
                    let frame = take(&mut data, n).to_vec();
                    if !lanes.push(&frame).unwrap_or(false) {
                        if !lanes.push_marker().unwrap_or(false) {
                            honest = false;
                            continue;
                        }
                        let mut framed = (frame.len() as u32).to_le_bytes().to_vec();
                        framed.extend_from_slice(&frame);
                        let write = worker.write_all(&framed);
                        if tokio::time::timeout(Duration::from_millis(5), write)
                            .await
                            .is_err()
                        {
                            honest = false;
                        }
                    }
                    honest &= frame.len() <= max_frame;
                    sent.push(frame);
                }
                // A marker alone, or raw bytes on the socket.
                2 => {
                    let _ = lanes.push_marker();
                    honest = false;
                }
                3 => {
                    let n = usize::from(byte(&mut data));
                    let raw = take(&mut data, n).to_vec();
                    let write = worker.write_all(&raw);
                    let _ = tokio::time::timeout(Duration::from_millis(5), write).await;
                    // Empty frames are wake-ups, which an honest worker sends.
                    honest &= raw.len() % 4 == 0 && raw.iter().all(|&b| b == 0);
                }
                // Any word of the shared region.
                _ => {
                    let at = usize::from(byte(&mut data)) * 64 + usize::from(byte(&mut data));
                    lanes.poke(at, word(&mut data));
                    honest = false;
                }
            }
            // The serving side reads all there is.
            loop {
                match serving.try_frame() {
                    Ok(Some(f)) => {
                        assert!(
                            f.len() <= max_frame,
                            "a frame of {} past {max_frame}",
                            f.len()
                        );
                        got.push(f);
                    }
                    Ok(None) => break,
                    // Refused: the serving process replaces such a worker.
                    Err(WireError::Corrupt(_) | WireError::TooLarge(_)) => return,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        if honest {
            assert_eq!(got, sent, "an honest worker's frames changed on the way");
        }
    });
});
