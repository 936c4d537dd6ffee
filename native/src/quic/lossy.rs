//! Real packet loss for fault injection: a wrapper around quinn's UDP socket that drops a
//! configurable fraction of datagrams, inbound and outbound, below QUIC. QUIC's own loss
//! detection and retransmission then have to recover, exactly as on a lossy network path.

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Loss probabilities are kept in parts per million so the hot path compares integers.
const PPM: u32 = 1_000_000;

/// The loss setting and counters one socket shares with its owner; changeable at any time.
#[derive(Default)]
pub(crate) struct Loss {
    ppm: AtomicU32,
    dropped: AtomicU64,
    /// splitmix64 state: each draw advances it by the golden gamma with one atomic add, so
    /// concurrent senders and receivers never take a lock.
    rng: AtomicU64,
}

impl Loss {
    pub(crate) fn set_pct(&self, pct: f64) {
        self.ppm.store(
            (pct.clamp(0.0, 100.0) * 1e4).round() as u32,
            Ordering::Relaxed,
        );
    }

    pub(crate) fn pct(&self) -> f64 {
        f64::from(self.ppm.load(Ordering::Relaxed)) / 1e4
    }

    /// Datagrams dropped so far, both directions.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Decide the fate of one datagram; counts it when dropped.
    fn drop_one(&self) -> bool {
        let ppm = self.ppm.load(Ordering::Relaxed);
        if ppm == 0 {
            return false;
        }
        let mut z = self
            .rng
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let lost = (z % u64::from(PPM)) < u64::from(ppm);
        if lost {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        lost
    }
}

/// quinn's socket with [`Loss`] applied to every datagram.
pub(crate) struct LossySocket {
    inner: Arc<dyn AsyncUdpSocket>,
    loss: Arc<Loss>,
}

impl LossySocket {
    pub(crate) fn new(inner: Arc<dyn AsyncUdpSocket>, loss: Arc<Loss>) -> Self {
        LossySocket { inner, loss }
    }
}

impl fmt::Debug for LossySocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LossySocket")
            .field("loss_pct", &self.loss.pct())
            .finish_non_exhaustive()
    }
}

impl AsyncUdpSocket for LossySocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        // One datagram per transmit (see `max_transmit_segments`), so this is per-datagram loss.
        // A lost datagram is reported as sent: the sender cannot tell, as on a real path.
        if self.loss.drop_one() {
            return Ok(());
        }
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
        for (buf, m) in bufs.iter_mut().zip(meta.iter_mut()).take(n) {
            m.len = self.drop_segments(buf, m.len, m.stride);
        }
        // Entries left with `len == 0` carry no datagram; quinn skips them.
        Poll::Ready(Ok(n))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// No GSO batches: every transmit is one datagram, so each one is lost or kept on its own
    /// (Agave's server disables segmentation offload too).
    fn max_transmit_segments(&self) -> usize {
        1
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

impl LossySocket {
    /// Drop datagrams from one receive buffer holding `len` bytes of datagrams `stride` apart
    /// (several when the OS coalesced them, GRO); the kept ones are moved together in order.
    /// Returns the new length. Only the last datagram may be shorter than `stride`, and it stays
    /// last, so the buffer keeps quinn's layout.
    fn drop_segments(&self, buf: &mut [u8], len: usize, stride: usize) -> usize {
        let stride = stride.max(1);
        let mut kept = 0;
        let mut start = 0;
        while start < len {
            let end = (start + stride).min(len);
            if !self.loss.drop_one() {
                buf.copy_within(start..end, kept);
                kept += end - start;
            }
            start = end;
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rate_is_close_to_the_setting() {
        let loss = Loss::default();
        loss.set_pct(30.0);
        let dropped = (0..100_000).filter(|_| loss.drop_one()).count();
        assert!((27_000..33_000).contains(&dropped), "{dropped}");
        assert_eq!(loss.dropped(), dropped as u64);
        loss.set_pct(0.0);
        assert!(!(0..1000).any(|_| loss.drop_one()));
    }

    #[test]
    fn coalesced_datagrams_are_compacted_in_order() {
        let loss = Arc::new(Loss::default());
        let socket = LossySocket {
            inner: dummy_socket(),
            loss: loss.clone(),
        };
        let mut buf: Vec<u8> = (0..10u8).collect();
        // No loss: untouched.
        assert_eq!(socket.drop_segments(&mut buf, 10, 4), 10);
        assert_eq!(buf, (0..10u8).collect::<Vec<_>>());
        // Partial loss: whole datagrams go, the rest keep their order and the short one stays
        // last. Inputs are increasing, so an order-preserving subset stays increasing.
        loss.set_pct(50.0);
        for _ in 0..64 {
            let mut buf: Vec<u8> = (0..10u8).collect();
            let kept = socket.drop_segments(&mut buf, 10, 4);
            assert!([0, 2, 4, 6, 8, 10].contains(&kept), "{kept}");
            assert!(
                buf[..kept].windows(2).all(|w| w[0] < w[1]),
                "{:?}",
                &buf[..kept]
            );
            assert!(
                buf[..kept].chunks(4).all(|d| d[0] % 4 == 0),
                "{:?}",
                &buf[..kept]
            );
        }
        // Total loss: nothing left.
        loss.set_pct(100.0);
        assert_eq!(socket.drop_segments(&mut buf, 10, 4), 0);
    }

    fn dummy_socket() -> Arc<dyn AsyncUdpSocket> {
        let _guard = crate::quic::runtime::runtime().enter();
        let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        quinn::Runtime::wrap_udp_socket(&quinn::TokioRuntime, std).unwrap()
    }
}
