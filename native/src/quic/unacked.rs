//! The streams a peer's task has written and the peer may not have acknowledged yet: what a
//! graceful close waits for (see `client.rs`, "Closing the client keeps that promise").
//!
//! Fast path: quinn tells a stream's acknowledgement only through `SendStream::stopped()`, a
//! future, and each poll of it takes the connection's lock (the same lock the connection's
//! driver takes for every packet). So the window is checked in age order and the check stops at
//! the first stream still in flight: streams are acknowledged roughly in the order they were
//! written, so each write pops what has settled since the last one and polls one stream that
//! has not, O(1) amortised (each stream leaves the window once). Checking every tracked stream
//! on every write, as an earlier version did once 64 were tracked, was a third of the QUIC
//! threads' CPU under load.
//!
//! Slow path: a stream at the front that stays unacknowledged (its packets lost and resent)
//! would hold back the ones behind it; a full sweep runs when the window reaches twice the size
//! the last sweep left (at least `SWEEP_FLOOR`), so the window stays bounded by the streams
//! really in flight and the sweeps cost O(1) per write amortised too.

use quinn::SendStream;
use std::collections::VecDeque;
use std::future::Future;
use std::task::{Context, Waker};

/// The smallest window that triggers a full sweep.
const SWEEP_FLOOR: usize = 64;

pub(super) struct Unacked {
    /// Oldest first.
    streams: VecDeque<SendStream>,
    /// The window size that triggers the next full sweep.
    sweep_at: usize,
}

impl Default for Unacked {
    fn default() -> Self {
        Unacked {
            streams: VecDeque::new(),
            sweep_at: SWEEP_FLOOR,
        }
    }
}

impl Unacked {
    /// Track a stream just finished, forgetting the oldest ones the peer has acknowledged.
    pub(super) fn push(&mut self, stream: SendStream) {
        while self.streams.front().is_some_and(settled) {
            self.streams.pop_front();
        }
        self.streams.push_back(stream);
        if self.streams.len() >= self.sweep_at {
            self.streams.retain(|s| !settled(s));
            self.sweep_at = (2 * self.streams.len()).max(SWEEP_FLOOR);
        }
    }

    /// Every tracked stream, oldest first, leaving the window empty.
    pub(super) fn take(&mut self) -> impl Iterator<Item = SendStream> + '_ {
        self.sweep_at = SWEEP_FLOOR;
        self.streams.drain(..)
    }
}

/// Whether a written stream needs no more watching: acknowledged, stopped, or its connection
/// gone. One poll, never waits.
fn settled(stream: &SendStream) -> bool {
    let stopped = std::pin::pin!(stream.stopped());
    stopped
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}
