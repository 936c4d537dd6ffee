//! The TPU QUIC client: one endpoint per identity for the whole process, two connections per
//! validator TPU address (one per lane, below), reused for every transaction.
//!
//! Each peer (TPU socket address) has per lane a bounded queue and one task that owns the lane's
//! connection and writes the queued transactions one stream at a time. One writer per
//! connection is what Agave's `tpu-client-next` does and measured best: streams written
//! concurrently on one connection interleave their frames, and a validator then waits longer
//! for any one transaction to be complete. A full queue refuses at once (`queue_full`) instead
//! of growing.
//!
//! A peer that closes the connection (any of Agave's close codes: 1 dropped, 2 disallowed,
//! 4 too many, 5 invalid stream, or a refusal) or cannot be reached is put in back-off (the
//! peer's states and their transitions: `peer.rs`): sends
//! fail fast with `backoff` until it expires, then one connection attempt is made. Back-off
//! doubles per consecutive failure (from `backoff_base` up to `backoff_max`); a connection that
//! had been up for `HEALTHY_LIFETIME` before it closed starts the count again. That way a
//! validator that refuses or evicts us sees a handful of attempts, not one per transaction.
//!
//! "Written" means `finish()` was called on the stream after the whole transaction was accepted
//! by the connection's send buffer (within flow control), on a connection known to be alive:
//! the peer was heard from (any datagram: an ACK, the answer to a keep-alive PING) within
//! `alive_window` (1.5 s, a little over the 1 s keep-alive interval; a connection the handshake
//! just established counts, the handshake being a round trip). An open connection whose peer
//! has gone quiet for longer — a validator killed or cut off without closing anything — would
//! take the stream into its buffer all the same and never deliver it; the send fails with
//! `connection_stale` instead, the connection is dropped and the peer goes into back-off (see
//! `heard.rs` for how "heard from" is measured). QUIC delivers a written stream reliably from
//! there unless the connection dies; the client does not wait for the peer's acknowledgement,
//! and a validator can still drop it after reading (it never says). Closing the client keeps
//! that promise where it can: each connection stays up until the peer has acknowledged every
//! written stream (at most `CLOSE_LINGER`), and only then closes (`unacked.rs` tracks them).
//!
//! One way "written" is still lost, measured on the local cluster's lossy links: quinn 0.11
//! reports the connection established when the client's side of the handshake is complete,
//! one round trip before the server's is (the handshake is *confirmed* only when the server's
//! HANDSHAKE_DONE arrives). If the client's last handshake flight is lost until the server's
//! handshake timeout (2 s on Agave) runs out, the server closes a connection the client has
//! already written on, and those streams are gone (the client sees "closed during the
//! handshake"). On a lossy path with a 15 % loss each way it happened to 1 fresh connection in 40.
//! The hot path mostly writes on connections prewarmed long before (`lanes.rs`), and a first
//! send lost this way is sent again by the rebroadcast rounds. Waiting for confirmation before
//! writing would close the gap at one round trip per fresh connection; quinn 0.11.12 does not
//! expose the confirmed state (quinn-rs/quinn pull request 2441 adds a wait for it).
//!
//! Connections are dialled by a task of their own, never by a send (`lanes.rs`).
//!
//! Lanes: each peer has two, each a queue, a task and a connection of its own. Sends with a
//! deadline (`dispatch_by`, the hot path's first sends) take the first lane; everything else
//! (rebroadcast rounds, plain sends) the other. A connection has a limited number of streams in
//! flight (the peer's stream credit, 128 or fewer on Agave), and a round to a leader of more
//! transactions than that outruns the credit for a round trip each time: its writes wait for
//! the peer to read. On one connection, a first send arriving then waited too, behind credit the
//! round held (about 1 % of first sends under load, up to ~5 ms: the service-added p99). With a
//! connection of its own it finds the credit its lane did not spend. Waiting for credit is
//! otherwise right: a write that did not wait would be lost for nothing. A validator that
//! throttles a sender throttles both its connections (Agave counts an unstaked sender's streams
//! per IP address); each lane then waits for its own credit, and the first sends, few, are
//! not queued behind thousands of round writes. The price is a second handshake, keep-alive
//! and prewarm per leader, and a lane's failures put only that lane in back-off.
//!
//! Deadlines ([`QuicClient::dispatch_by`], the hot path's first send): the transaction is
//! written by the deadline or never. Its sends to the different peers share a [`Gate`]; a
//! write claims the gate just before `finish()`, and a waiter that gives up at the deadline
//! closes it, so past that point nothing can be finished (an unfinished stream is reset: the
//! peer discards what it got). A caller answered "not written" can rely on it: the transaction
//! was not delivered, and will not be.
//!
//! Three ways to await what was queued ([`Dispatched`]): every outcome in order
//! ([`Dispatched::outcomes`], `send`), the first written one ([`Dispatched::first_written`],
//! the hot path's reply needs only one leader to have the transaction), and many transactions
//! to many peers in one call ([`QuicClient::dispatch_batch`], a rebroadcast round). Whichever
//! way, and whether or not anyone still awaits it, every outcome is counted per peer and reason
//! where it is decided (the peer's task, or the refusal in `submit`), and
//! [`QuicClient::drain_outcomes`] hands those counts over for metrics: a caller that stopped
//! waiting after the first write loses none of the later outcomes.

use super::config::{tpu_client_config, ClientConfig};
use super::dialer::Dialer;
use super::dispatched::{outcome, Dispatched, Pending};
use super::error::QuicError;
use super::gate::Gate;
use super::heard::{Heard, HeardSocket};
use super::lanes::{Lane, PeerState};
use super::outcome::{failed, FailReason, FirstSend, OutcomeCount, PeerStats, SendOutcome, Tally};
use super::protocol::MAX_TX_SIZE;
use super::runtime::{lock, runtime};
use super::tls;
use super::worker::{run_lane, Job};
use bytes::Bytes;
use quinn::{Endpoint, EndpointConfig, TokioRuntime};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Process-wide clients by identity public key. Weak: the registry never keeps a client alive;
/// the last `Arc` dropped closes it (its `Drop` prunes the entry).
static REGISTRY: Mutex<Vec<([u8; 32], Weak<QuicClient>)>> = Mutex::new(Vec::new());

/// A TPU client. Cheap to share (`Arc`); constructing one with the identity of a live client
/// returns that client, so every thread of the process shares one endpoint and one connection
/// per peer.
pub struct QuicClient {
    identity: [u8; 32],
    dialer: Arc<Dialer>,
    peers: Mutex<HashMap<SocketAddr, PeerHandle>>,
    /// Outcomes decided before a peer existed (an empty or oversize transaction is refused
    /// without starting the peer's task).
    unpeered: Mutex<HashMap<SocketAddr, Tally>>,
}

#[derive(Clone)]
struct PeerHandle {
    /// First sends (with a deadline): a lane and a connection of their own (see "Lanes").
    urgent: mpsc::Sender<Job>,
    /// Everything else.
    queue: mpsc::Sender<Job>,
    state: Arc<PeerState>,
}

impl QuicClient {
    /// The client of identity `seed`: the live one if there is one (its configuration stays;
    /// `cfg` is then ignored), else a new one bound to an ephemeral IPv4 UDP port.
    pub fn new(seed: &[u8; 32], cfg: ClientConfig) -> Result<Arc<QuicClient>, QuicError> {
        cfg.validate()?;
        let identity = tls::identity_pubkey(seed);
        let mut registry = lock(&REGISTRY);
        if let Some(live) = registry
            .iter()
            .filter(|(k, _)| *k == identity)
            .find_map(|(_, w)| w.upgrade())
        {
            return Ok(live);
        }
        let quinn = tpu_client_config(seed, &cfg)?;
        let heard = Arc::new(Heard::new());
        let endpoint = {
            let _enter = runtime().enter();
            let socket =
                std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(QuicError::Bind)?;
            let socket =
                quinn::Runtime::wrap_udp_socket(&TokioRuntime, socket).map_err(QuicError::Bind)?;
            let socket = Arc::new(HeardSocket::new(socket, heard.clone()));
            Endpoint::new_with_abstract_socket(
                EndpointConfig::default(),
                None,
                socket,
                Arc::new(TokioRuntime),
            )
            .map_err(QuicError::Bind)?
        };
        let client = Arc::new(QuicClient {
            identity,
            dialer: Arc::new(Dialer {
                cfg,
                endpoint,
                quinn,
                heard,
            }),
            peers: Mutex::new(HashMap::new()),
            unpeered: Mutex::new(HashMap::new()),
        });
        registry.push((identity, Arc::downgrade(&client)));
        Ok(client)
    }

    /// The identity public key this client presents.
    pub fn identity(&self) -> [u8; 32] {
        self.identity
    }

    /// The local UDP address of the shared endpoint.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.dialer.endpoint.local_addr().ok()
    }

    /// Send one transaction to one peer.
    pub async fn send(&self, addr: SocketAddr, tx: Bytes) -> SendOutcome {
        let started = Instant::now();
        outcome(addr, started, self.submit(addr, tx, started, None)).await
    }

    /// Send one transaction to several peers at once; outcomes in the order of `addrs`.
    pub async fn send_many(&self, addrs: &[SocketAddr], tx: Bytes) -> Vec<SendOutcome> {
        self.dispatch(addrs, tx).outcomes().await
    }

    /// Queue one transaction on every peer of `addrs` now, before returning (the peers' tasks
    /// start writing at once, in parallel); await the outcomes with [`Dispatched::outcomes`].
    /// For callers on another thread than the runtime's (napi), this saves a hop before the
    /// writes start.
    pub fn dispatch(&self, addrs: &[SocketAddr], tx: Bytes) -> Dispatched {
        let started = Instant::now();
        let pending = addrs
            .iter()
            .map(|&addr| (addr, self.submit(addr, tx.clone(), started, None)))
            .collect();
        Dispatched {
            started,
            pending,
            gate: None,
        }
    }

    /// [`dispatch`](QuicClient::dispatch) with a deadline `budget` from now: the transaction is
    /// written to a peer by then or never (a send still queued, connecting or writing then
    /// fails with `deadline`). [`Dispatched::first_written`] settles by the deadline at the
    /// latest; once it has settled with nothing written, nothing will be.
    pub fn dispatch_by(&self, addrs: &[SocketAddr], tx: Bytes, budget: Duration) -> Dispatched {
        let started = Instant::now();
        let gate = Arc::new(Gate::new(budget));
        let pending = addrs
            .iter()
            .map(|&addr| {
                (
                    addr,
                    self.submit(addr, tx.clone(), started, Some(gate.clone())),
                )
            })
            .collect();
        Dispatched {
            started,
            pending,
            gate: Some(gate),
        }
    }

    /// Send one transaction to several peers at once; settles as soon as one peer has it
    /// written (without waiting for slower or dead peers), or once every peer has failed.
    pub async fn send_first(&self, addrs: &[SocketAddr], tx: Bytes) -> FirstSend {
        self.dispatch(addrs, tx).first_written().await
    }

    /// Queue every transaction of `txs` on every peer of `addrs` now, transaction by
    /// transaction (so each peer gets them in the order given); [`Dispatched::outcomes`] then
    /// yields the outcome of `txs[i]` to `addrs[t]` at `i * addrs.len() + t`.
    pub fn dispatch_batch(&self, addrs: &[SocketAddr], txs: &[Bytes]) -> Dispatched {
        let started = Instant::now();
        let pending = txs
            .iter()
            .flat_map(|tx| addrs.iter().map(move |&addr| (addr, tx)))
            .map(|(addr, tx)| (addr, self.submit(addr, tx.clone(), started, None)))
            .collect();
        Dispatched {
            started,
            pending,
            gate: None,
        }
    }

    /// Every transaction of `txs` to every peer of `addrs`; outcomes as [`dispatch_batch`]
    /// orders them.
    ///
    /// [`dispatch_batch`]: QuicClient::dispatch_batch
    pub async fn send_batch(&self, addrs: &[SocketAddr], txs: &[Bytes]) -> Vec<SendOutcome> {
        self.dispatch_batch(addrs, txs).outcomes().await
    }

    /// The outcome counts per peer and reason since the last call (of every send path,
    /// including outcomes nobody awaited any more), resetting them. Ordered by peer, then
    /// written first and the reasons in [`FailReason::ALL`] order; counts of 0 are left out.
    pub fn drain_outcomes(&self) -> Vec<OutcomeCount> {
        let mut out = Vec::new();
        for (&addr, peer) in lock(&self.peers).iter() {
            peer.state.tally.drain(addr, &mut out);
        }
        for (&addr, tally) in lock(&self.unpeered).iter() {
            tally.drain(addr, &mut out);
        }
        // A peer can appear twice (refused before and after its task started): merge.
        out.sort_by_key(|c| (c.addr, c.reason.map_or(0, |r| 1 + r as usize)));
        out.dedup_by(|later, first| {
            let same = later.addr == first.addr && later.reason == first.reason;
            if same {
                first.count += later.count;
            }
            same
        });
        out
    }

    /// Open connections to `addrs` ahead of the first send, both lanes' (lanes in back-off
    /// are skipped until it expires). Returns at once; connections come up in the background.
    pub fn prewarm(&self, addrs: &[SocketAddr]) {
        for &addr in addrs {
            let peer = self.peer(addr);
            // A full queue means sends are pending, which connect anyway.
            let _ = peer.urgent.try_send(Job::Prewarm);
            let _ = peer.queue.try_send(Job::Prewarm);
        }
    }

    /// Counters and connection state of every peer this client has been asked to reach.
    pub fn peer_stats(&self) -> Vec<PeerStats> {
        let peers = lock(&self.peers);
        let queued = |q: &mpsc::Sender<Job>| q.max_capacity() - q.capacity();
        peers
            .values()
            .map(|p| {
                p.state
                    .stats(queued(&p.urgent) + queued(&p.queue), &self.dialer.heard)
            })
            .collect()
    }

    /// Queue a transaction for `addr`, or refuse it at once.
    fn submit(
        &self,
        addr: SocketAddr,
        tx: Bytes,
        started: Instant,
        gate: Option<Arc<Gate>>,
    ) -> Pending {
        let invalid = if tx.is_empty() {
            Some(FailReason::Empty)
        } else if tx.len() > MAX_TX_SIZE {
            Some(FailReason::TooLarge)
        } else {
            None
        };
        if let Some(reason) = invalid {
            lock(&self.unpeered)
                .entry(addr)
                .or_default()
                .count(Some(reason));
            return Err(failed(addr, started, reason));
        }
        let peer = self.peer(addr);
        // A send with a deadline is a first send: its own lane (see "Lanes").
        let lane = if gate.is_some() {
            &peer.urgent
        } else {
            &peer.queue
        };
        let state = &peer.state;
        let (reply, pending) = oneshot::channel();
        let refused = match lane.try_send(Job::Send {
            tx,
            queued_at: started,
            reply,
            gate,
        }) {
            Ok(()) => return Ok(pending),
            Err(mpsc::error::TrySendError::Full(_)) => {
                state.counters.dropped.fetch_add(1, Ordering::Relaxed);
                FailReason::QueueFull
            }
            Err(mpsc::error::TrySendError::Closed(_)) => FailReason::ClientClosed,
        };
        state.tally.count(Some(refused));
        Err(failed(addr, started, refused))
    }

    /// The queues and state of `addr`, starting its lanes' tasks on first use.
    fn peer(&self, addr: SocketAddr) -> PeerHandle {
        let mut peers = lock(&self.peers);
        let handle = peers.entry(addr).or_insert_with(|| {
            let (urgent, urgent_jobs) = mpsc::channel(self.dialer.cfg.max_queue_per_peer);
            let (queue, jobs) = mpsc::channel(self.dialer.cfg.max_queue_per_peer);
            let state = Arc::new(PeerState::new(addr, self.dialer.heard.register(addr)));
            Lane::First.runtime().spawn(run_lane(
                state.clone(),
                Lane::First,
                urgent_jobs,
                self.dialer.clone(),
            ));
            Lane::Rest.runtime().spawn(run_lane(
                state.clone(),
                Lane::Rest,
                jobs,
                self.dialer.clone(),
            ));
            PeerHandle {
                urgent,
                queue,
                state,
            }
        });
        handle.clone()
    }
}

impl Drop for QuicClient {
    fn drop(&mut self) {
        // The peers' tasks end when their queues' senders (in `self.peers`, dropped right after
        // this) are gone: each finishes what is queued, lets its written streams be
        // acknowledged, and closes its connection. The endpoint goes with the last of them.
        lock(&REGISTRY).retain(|(_, w)| w.strong_count() > 0);
    }
}
