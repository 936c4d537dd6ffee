//! When each peer was last heard from: a wrapper around the client endpoint's UDP socket that
//! stamps, per source address, the moment the last datagram from it arrived.
//!
//! The client uses it to tell a live connection from one whose peer vanished without closing
//! it (a killed process, a pulled cable, a firewall dropping everything). Both look the same to
//! a writer: an open connection whose send buffer takes the stream. Only the peer's packets tell
//! them apart. A live peer answers every ack-eliciting packet, and with the keep-alive PING
//! every second there is at least one such packet per second even on an idle connection, so a
//! peer not heard from for a little longer than the keep-alive interval is gone (or its path
//! is), however open its connection looks. quinn keeps no "last received" time per connection,
//! and sampling its datagram counters would put a timer on every connection; stamping here is
//! exact, costs one map lookup per received datagram batch entry, and needs no timer.
//!
//! One client connection per peer address, so the source address names the connection.

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// When one peer was last heard from: microseconds since the clock's origin, plus one (0 = never).
#[derive(Default)]
pub(crate) struct LastHeard(AtomicU64);

/// The registry the socket stamps into: the peers the client knows, by address.
pub(crate) struct Heard {
    origin: Instant,
    peers: RwLock<HashMap<SocketAddr, Arc<LastHeard>>>,
}

impl Heard {
    pub(crate) fn new() -> Self {
        Heard {
            origin: Instant::now(),
            peers: RwLock::new(HashMap::new()),
        }
    }

    /// The stamp of `addr`, registered on first use (datagrams from unregistered addresses are
    /// not stamped).
    pub(crate) fn register(&self, addr: SocketAddr) -> Arc<LastHeard> {
        let mut peers = self
            .peers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        peers.entry(addr).or_default().clone()
    }

    fn stamp_of(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_micros()).unwrap_or(u64::MAX - 1)
            + 1
    }

    /// Record that `who` was heard from at `at` (a completed handshake is a round trip too).
    pub(crate) fn touch(&self, who: &LastHeard, at: Instant) {
        who.0.fetch_max(self.stamp_of(at), Ordering::Relaxed);
    }

    /// How long ago `who` was last heard from; None if never.
    pub(crate) fn quiet_for(&self, who: &LastHeard, now: Instant) -> Option<Duration> {
        let stamp = who.0.load(Ordering::Relaxed);
        if stamp == 0 {
            return None;
        }
        let at = self.origin.checked_add(Duration::from_micros(stamp - 1))?;
        Some(now.saturating_duration_since(at))
    }

    fn heard(&self, metas: &[RecvMeta]) {
        let stamp = self.stamp_of(Instant::now());
        let peers = self
            .peers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for m in metas {
            if let Some(who) = peers.get(&m.addr) {
                who.0.fetch_max(stamp, Ordering::Relaxed);
            }
        }
    }
}

/// quinn's socket, stamping [`Heard`] with every datagram received.
pub(crate) struct HeardSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    heard: Arc<Heard>,
}

impl HeardSocket {
    pub(crate) fn new(inner: Arc<dyn AsyncUdpSocket>, heard: Arc<Heard>) -> Self {
        HeardSocket { inner, heard }
    }
}

impl fmt::Debug for HeardSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeardSocket").finish_non_exhaustive()
    }
}

impl AsyncUdpSocket for HeardSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.inner.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let n = match self.inner.poll_recv(cx, bufs, meta) {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        self.heard.heard(&meta[..n]);
        Poll::Ready(Ok(n))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_heard_is_none_and_a_touch_is_quiet_since_then() {
        let heard = Heard::new();
        let who = heard.register("127.0.0.1:9".parse().unwrap());
        let now = Instant::now();
        assert_eq!(heard.quiet_for(&who, now), None);
        heard.touch(&who, now);
        // Stamps are whole microseconds.
        let quiet = heard
            .quiet_for(&who, now + Duration::from_millis(700))
            .unwrap();
        assert!(
            quiet >= Duration::from_millis(700) && quiet < Duration::from_micros(700_001),
            "{quiet:?}"
        );
        // An older stamp never moves it back.
        heard.touch(&who, now - Duration::from_millis(5));
        assert!(heard.quiet_for(&who, now).unwrap() < Duration::from_micros(1));
        // The same address shares one stamp.
        let again = heard.register("127.0.0.1:9".parse().unwrap());
        assert!(Arc::ptr_eq(&who, &again));
    }
}
