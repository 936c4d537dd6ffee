//! A peer's workers: its shared state (counters, when it was last heard from, and per lane a
//! [`Link`] state machine behind a mutex) and the two tasks, one per [`Lane`], that each take
//! their queue in order, one transaction at a time, over the lane's own connection (see
//! `client.rs` for why one writer per connection, and why first sends have a lane of their own).

use super::config::ClientConfig;
use super::dialer::{dial, Dialed, Dialer};
use super::gate::Gate;
use super::heard::{Heard, LastHeard};
use super::lock;
use super::outcome::{micros, Close, FailReason, Failure, PeerStats, SendOutcome, Tally};
use super::peer::{Link, Next};
use super::unacked::Unacked;
use super::{first_runtime, runtime};
use bytes::Bytes;
use quinn::{Connection, ConnectionError, SendStream, VarInt, WriteError};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

/// Why a lane's connection is dropped when the other lane's was reset by the peer.
const PEER_RESET: &str = "the peer reset a connection: it lost its state (restarted)";

/// On close, how long a connection waits for the peer to acknowledge the streams written on it.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// What a peer's queue carries.
pub(super) enum Job {
    Send {
        tx: Bytes,
        queued_at: Instant,
        reply: oneshot::Sender<SendOutcome>,
        gate: Option<Arc<Gate>>,
    },
    Prewarm,
}

/// The handle of a handshake under way: every send waiting for it gets its end.
pub(super) type DialWait = watch::Receiver<Option<Dialed>>;

#[derive(Default)]
pub(super) struct PeerCounters {
    sent: AtomicU64,
    failed: AtomicU64,
    pub(super) dropped: AtomicU64,
    connects: AtomicU64,
}

/// What a send (or prewarm) to a peer can use right now.
pub(super) enum Acquired {
    /// The open connection, and the peer was heard from within `alive_window`.
    Live(Connection),
    /// None, and why: back-off, the client closed, or the connection just found stale.
    Failed(Failure),
    /// The handshake under way (joined, or started by this call).
    Dialing(DialWait),
}

/// A peer's two lanes, each a queue, a task and a connection of its own (see `client.rs`, "Lanes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lane {
    /// Sends with a deadline: the hot path's first sends.
    First,
    /// Everything else: rebroadcast rounds, plain sends.
    Rest,
}

impl Lane {
    fn other(self) -> Lane {
        match self {
            Lane::First => Lane::Rest,
            Lane::Rest => Lane::First,
        }
    }

    /// Where the lane's task, handshakes and connection drivers run: first sends on a thread of
    /// their own ([`first_runtime`]), the rest on the shared runtime.
    pub(super) fn runtime(self) -> &'static tokio::runtime::Runtime {
        match self {
            Lane::First => first_runtime(),
            Lane::Rest => runtime(),
        }
    }
}

/// One lane's connection state.
#[derive(Default)]
struct LaneState {
    link: Mutex<Link<Connection, DialWait>>,
    /// Since when the lane's writer has been waiting for the peer's stream credit (None: not
    /// waiting). Set only when a stream cannot be opened at once, so the fast path reads no clock.
    credit_wait: Mutex<Option<Instant>>,
}

pub(super) struct PeerState {
    pub(super) addr: SocketAddr,
    pub(super) counters: PeerCounters,
    /// Outcome counts for `drain_outcomes` (apart from `counters`, which `peer_stats` reports
    /// and never resets).
    pub(super) tally: Tally,
    /// When the peer was last heard from (stamped by the endpoint's socket).
    heard: Arc<LastHeard>,
    first: LaneState,
    rest: LaneState,
}

impl PeerState {
    pub(super) fn new(addr: SocketAddr, heard: Arc<LastHeard>) -> Self {
        PeerState {
            addr,
            counters: PeerCounters::default(),
            tally: Tally::default(),
            heard,
            first: LaneState::default(),
            rest: LaneState::default(),
        }
    }

    fn lane(&self, lane: Lane) -> &LaneState {
        match lane {
            Lane::First => &self.first,
            Lane::Rest => &self.rest,
        }
    }

    fn lanes(&self) -> [&LaneState; 2] {
        [&self.first, &self.rest]
    }

    /// The connection a send can use (see [`Acquired`]), deciding on the way:
    /// - a connection found closed is recorded here (the watcher task may not have run yet), so
    ///   the caller sees the back-off at once;
    /// - an open connection whose peer has not been heard from within `alive_window` is stale:
    ///   closed, recorded as a failure (back-off), and the caller gets `connection_stale`;
    /// - with no connection and no back-off, a handshake is started (in a task of its own) if
    ///   none is under way.
    pub(super) fn acquire(self: &Arc<Self>, dialer: &Arc<Dialer>, lane: Lane) -> Acquired {
        let cfg = &dialer.cfg;
        let now = Instant::now();
        let mut link = lock(&self.lane(lane).link);
        if let Some(conn) = link.live().cloned() {
            match conn.close_reason() {
                Some(err) => {
                    if Self::closed(&mut link, &err, now, cfg) {
                        drop(link);
                        self.lose_other(lane, PEER_RESET, now, cfg);
                        link = lock(&self.lane(lane).link);
                    }
                }
                None => {
                    // Fast path: one atomic load and a clock read per send.
                    let quiet = dialer.heard.quiet_for(&self.heard, now);
                    if quiet.is_some_and(|q| q <= cfg.alive_window) {
                        return Acquired::Live(conn);
                    }
                    let detail = format!(
                        "nothing heard from the peer for {} ms (alive window {} ms): connection dropped",
                        quiet.map_or_else(|| "ever".to_owned(), |q| q.as_millis().to_string()),
                        cfg.alive_window.as_millis()
                    );
                    link.lost(
                        Close {
                            code: None,
                            reason: detail.clone(),
                        },
                        now,
                        cfg,
                    );
                    drop(link);
                    conn.close(VarInt::from_u32(0), b"stale");
                    self.lose_other(lane, &detail, now, cfg);
                    return Acquired::Failed(Failure::new(FailReason::ConnectionStale, detail));
                }
            }
        }
        match link.next(now) {
            // Not reached: a live connection was used or recorded as lost above.
            Next::Use(conn) => Acquired::Live(conn.clone()),
            Next::Join(dialing) => Acquired::Dialing(dialing.clone()),
            Next::Refuse(failure) => Acquired::Failed(failure),
            Next::Dial => {
                let (done, dialing) = watch::channel(None);
                link.start_dial(dialing.clone());
                drop(link);
                lane.runtime()
                    .spawn(dial(dialer.clone(), self.clone(), lane, done));
                Acquired::Dialing(dialing)
            }
        }
    }

    /// A handshake's end, recorded under the lock together with the end of `Dialing`, so a
    /// send sees either the handshake under way or its result, never neither.
    pub(super) fn dialed(
        &self,
        lane: Lane,
        result: Result<Connection, (Failure, Option<Close>)>,
        dialer: &Dialer,
    ) -> Dialed {
        let now = Instant::now();
        let mut link = lock(&self.lane(lane).link);
        match result {
            Ok(conn) => match link.connected(conn.clone(), now) {
                Ok(()) => {
                    // The handshake is a round trip: the peer is alive as of now.
                    dialer.heard.touch(&self.heard, now);
                    self.counters.connects.fetch_add(1, Ordering::Relaxed);
                    Ok(conn)
                }
                Err(conn) => {
                    drop(link);
                    conn.close(VarInt::from_u32(0), b"client closed");
                    Err(Failure::new(FailReason::ClientClosed, "client closed"))
                }
            },
            Err((failure, close)) => {
                link.dial_failed(close, now, &dialer.cfg);
                Err(failure)
            }
        }
    }

    /// The watcher's report that `lane`'s connection `id` closed with `err`.
    pub(super) fn note_closed(
        &self,
        lane: Lane,
        id: usize,
        err: &ConnectionError,
        cfg: &ClientConfig,
    ) {
        let now = Instant::now();
        let mut link = lock(&self.lane(lane).link);
        if link.live().is_some_and(|c| c.stable_id() == id)
            && Self::closed(&mut link, err, now, cfg)
        {
            drop(link);
            self.lose_other(lane, PEER_RESET, now, cfg);
        }
    }

    /// Record a closed connection; true when the close says the peer lost its state (a
    /// stateless reset: it restarted), which the other lane's connection cannot have survived.
    fn closed(
        link: &mut Link<Connection, DialWait>,
        err: &ConnectionError,
        now: Instant,
        cfg: &ClientConfig,
    ) -> bool {
        // Our own close (unused connection, client closing) is not the peer's doing.
        if matches!(err, ConnectionError::LocallyClosed) {
            link.dropped();
            false
        } else {
            link.lost(Close::of(err), now, cfg);
            matches!(err, ConnectionError::Reset)
        }
    }

    /// What proves one lane's connection dead proves the other's dead too: both hear the peer
    /// through the same evidence (`heard` is kept per address, not per connection), and a peer
    /// that was quiet past the alive window, or reset a connection, was so for both. Without
    /// this, the first lane reconnecting to a restarted validator made the other lane's dead
    /// connection look alive again, and sends were "written" into it: never delivered
    /// (`quic_liveness.rs`; most likely what made an acknowledged send of the Agave restart test
    /// expire with all four of its writes reported written).
    fn lose_other(&self, lane: Lane, why: &str, now: Instant, cfg: &ClientConfig) {
        let mut link = lock(&self.lane(lane.other()).link);
        let close = Close {
            code: None,
            reason: format!("{why} (seen on the other lane's connection)"),
        };
        if let Some(conn) = link.lost(close, now, cfg) {
            drop(link);
            conn.close(VarInt::from_u32(0), b"stale");
        }
    }

    /// Close `lane`'s open connection once the peer has acknowledged `unacked` (or
    /// `CLOSE_LINGER` has passed), so transactions reported written are not thrown away by the
    /// close. With `shut`, the lane is shut first (nothing dials on it any more).
    async fn close_live(&self, lane: Lane, unacked: &mut Unacked, reason: &[u8], shut: bool) {
        let link = &self.lane(lane).link;
        let shut_conn = if shut { lock(link).shut() } else { None };
        let deadline = tokio::time::Instant::now() + CLOSE_LINGER;
        for stream in unacked.take() {
            let _ = tokio::time::timeout_at(deadline, stream.stopped()).await;
        }
        let conn = if shut {
            shut_conn
        } else {
            lock(link).dropped()
        };
        if let Some(conn) = conn {
            conn.close(VarInt::from_u32(0), reason);
        }
    }

    /// Count and shape the outcome of one queued send.
    fn outcome(
        &self,
        queued_at: Instant,
        reused: bool,
        result: Result<(), Failure>,
    ) -> SendOutcome {
        let (reason, code, detail) = match result {
            Ok(()) => {
                self.counters.sent.fetch_add(1, Ordering::Relaxed);
                (None, None, None)
            }
            Err(f) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                (Some(f.reason), f.code, Some(f.detail))
            }
        };
        self.tally.count(reason);
        SendOutcome {
            addr: self.addr,
            reason,
            code,
            detail,
            elapsed_us: micros(queued_at),
            reused,
        }
    }

    /// The peer's counters and connection state, both lanes together: connected while either
    /// lane is (the round-trip time is the first lane's where it is up); the last close, failure
    /// count and back-off of the lane that fared worse; the longer wait for credit.
    pub(super) fn stats(&self, queued: usize, heard: &Heard) -> PeerStats {
        let now = Instant::now();
        let [first, rest] = self.lanes().map(|l| lock(&l.link));
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let open = |link: &Link<Connection, DialWait>| {
            link.live().filter(|c| c.close_reason().is_none()).cloned()
        };
        let live = open(&first).or_else(|| open(&rest));
        // The lane in the longer back-off, else the one with more failures since it was healthy.
        let link = if (rest.backoff_left(now), rest.failures())
            > (first.backoff_left(now), first.failures())
        {
            &rest
        } else {
            &first
        };
        let waiting = self
            .lanes()
            .into_iter()
            .filter_map(|l| *lock(&l.credit_wait))
            .min();
        PeerStats {
            addr: self.addr,
            connected: live.is_some(),
            rtt_us: live
                .as_ref()
                .map(|c| u64::try_from(c.rtt().as_micros()).unwrap_or(u64::MAX)),
            sent: get(&self.counters.sent),
            failed: get(&self.counters.failed),
            dropped: get(&self.counters.dropped),
            connects: get(&self.counters.connects),
            queued,
            last_close_code: link.last_close().and_then(|c| c.code),
            last_close_reason: link.last_close().map(|c| c.reason.clone()),
            consecutive_failures: link.failures(),
            // Rounded up: 0 only once the back-off is over (rounded down, a caller waiting for 0
            // could send while up to a millisecond of it was left, and be refused `backoff`).
            backoff_remaining_ms: u64::try_from(link.backoff_left(now).as_micros().div_ceil(1000))
                .unwrap_or(u64::MAX),
            quiet_ms: heard
                .quiet_for(&self.heard, now)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            credit_wait_ms: waiting.map(|since| {
                u64::try_from(now.saturating_duration_since(since).as_millis()).unwrap_or(u64::MAX)
            }),
        }
    }
}

/// One lane's task: takes its queue one transaction at a time, over the lane's own connection.
/// A prewarm opens the lane's connection; a connection the lane has not used for `unused_close`
/// is closed.
pub(super) async fn run_lane(
    state: Arc<PeerState>,
    lane: Lane,
    mut jobs: mpsc::Receiver<Job>,
    dialer: Arc<Dialer>,
) {
    // Streams written but maybe not yet acknowledged by the peer.
    let mut unacked = Unacked::default();
    loop {
        let job = tokio::select! {
            job = jobs.recv() => match job {
                Some(job) => job,
                None => break,
            },
            () = tokio::time::sleep(dialer.cfg.unused_close) => {
                state.close_live(lane, &mut unacked, b"unused", false).await;
                continue;
            }
        };
        match job {
            Job::Prewarm => {
                // Starts the handshake if there is no connection (or drops a stale one: every
                // slot's prewarm sweeps the next leaders' connections); never waits for it.
                let _ = state.acquire(&dialer, lane);
            }
            Job::Send {
                tx,
                queued_at,
                reply,
                gate,
            } => {
                let (reused, written) =
                    send_one(&dialer, &state, lane, tx, gate.as_deref(), &mut unacked).await;
                // The caller may have stopped waiting; nothing to do then.
                let _ = reply.send(state.outcome(queued_at, reused, written));
            }
        }
    }
    state
        .close_live(lane, &mut unacked, b"client closed", true)
        .await;
}

/// One queued transaction to this peer: a live connection of `lane` (or the handshake's), then
/// the write. With a gate, nothing is started past its deadline and no wait outlasts it.
async fn send_one(
    dialer: &Arc<Dialer>,
    state: &Arc<PeerState>,
    lane: Lane,
    tx: Bytes,
    gate: Option<&Gate>,
    unacked: &mut Unacked,
) -> (bool, Result<(), Failure>) {
    if let Some(g) = gate.filter(|g| g.passed()) {
        return (false, Err(g.missed()));
    }
    let (conn, reused) = match dialer.connection(state, lane, gate).await {
        Ok(c) => c,
        Err(f) => return (false, Err(f)),
    };
    let written = write_tx(
        &conn,
        tx,
        dialer.cfg.send_timeout,
        gate,
        &state.lane(lane).credit_wait,
    )
    .await
    .map(|stream| unacked.push(stream));
    (reused, written)
}

/// One transaction on one new unidirectional stream: open, write, finish. Hands back the
/// finished stream, whose acknowledgement a graceful close waits for. A gate's deadline, when
/// it comes before `limit`, cuts the write short the same way, and the gate must be claimed
/// before the stream is finished.
async fn write_tx(
    conn: &Connection,
    tx: Bytes,
    limit: Duration,
    gate: Option<&Gate>,
    credit_wait: &Mutex<Option<Instant>>,
) -> Result<SendStream, Failure> {
    let own = Instant::now() + limit;
    let by_gate = gate.filter(|g| g.at < own);
    let deadline = tokio::time::Instant::from_std(by_gate.map_or(own, |g| g.at));
    let timed_out = || {
        by_gate.map_or_else(
            || {
                Failure::new(
                    FailReason::SendTimeout,
                    format!("not written within {} ms", limit.as_millis()),
                )
            },
            Gate::missed,
        )
    };
    let mut open = std::pin::pin!(conn.open_uni());
    // One poll first: with credit to spare the stream opens at once, and nothing is recorded.
    let opened = match std::future::poll_fn(|cx| Poll::Ready(open.as_mut().poll(cx))).await {
        Poll::Ready(opened) => Ok(opened),
        Poll::Pending => {
            *lock(credit_wait) = Some(Instant::now());
            let waited = tokio::time::timeout_at(deadline, open).await;
            *lock(credit_wait) = None;
            waited
        }
    };
    let mut stream = match opened {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(Failure::from_connection(FailReason::ConnectionLost, &e)),
        Err(_) => return Err(timed_out()),
    };
    match tokio::time::timeout_at(deadline, stream.write_chunk(tx)).await {
        Ok(Ok(())) => {
            // The point of no return: a finished stream is delivered. Past the deadline, or once
            // the waiter has given up, it must not be: reset, so the peer discards what it got.
            if let Some(g) = gate.filter(|g| !g.claim()) {
                let _ = stream.reset(VarInt::from_u32(0));
                return Err(g.missed());
            }
            match stream.finish() {
                Ok(()) => Ok(stream),
                Err(e) => {
                    if let Some(g) = gate {
                        g.release();
                    }
                    Err(Failure::new(
                        FailReason::ConnectionLost,
                        format!("stream closed before finish: {e}"),
                    ))
                }
            }
        }
        Ok(Err(WriteError::Stopped(code))) => Err(Failure {
            reason: FailReason::StreamStopped,
            code: Some(code.into_inner()),
            detail: format!("peer stopped the stream: code {code}"),
        }),
        Ok(Err(WriteError::ConnectionLost(e))) => {
            Err(Failure::from_connection(FailReason::ConnectionLost, &e))
        }
        Ok(Err(e)) => Err(Failure::new(FailReason::ConnectionLost, e.to_string())),
        Err(_) => {
            // Dropping an unfinished stream would finish it and deliver a truncated
            // transaction; reset it instead so the peer discards what it got.
            let _ = stream.reset(VarInt::from_u32(0));
            Err(timed_out())
        }
    }
}
