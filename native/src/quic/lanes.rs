//! A peer's shared state: its counters, when it was last heard from, and per [`Lane`] a [`Link`]
//! state machine behind a mutex, with the connection each lane's sends use. Connections are
//! dialled by a task of their own ([`dial`]), never by a send: a send (or a prewarm) that finds no
//! connection starts the handshake or joins the one under way, so a caller that stops waiting
//! never cuts a handshake short, and the next send finds the connection it paid for. The
//! handshake itself is the dialer's (`dialer.rs`, below this module).

use super::config::ClientConfig;
use super::dialer::{Dialed, Dialer};
use super::gate::Gate;
use super::heard::{Heard, LastHeard};
use super::outcome::{micros, Close, FailReason, Failure, PeerStats, SendOutcome, Tally};
use super::peer::{Link, Next};
use super::runtime::{first_runtime, lock, runtime};
use super::unacked::Unacked;
use quinn::{Connection, ConnectionError, VarInt};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Why a lane's connection is dropped when the other lane's was reset by the peer.
const PEER_RESET: &str = "the peer reset a connection: it lost its state (restarted)";

/// On close, how long a connection waits for the peer to acknowledge the streams written on it.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

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

    /// Since when `lane`'s writer has been waiting for the peer's stream credit (see [`LaneState`]).
    pub(super) fn credit_wait(&self, lane: Lane) -> &Mutex<Option<Instant>> {
        &self.lane(lane).credit_wait
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

    /// The live connection of the peer's `lane` (`reused` = true), or the one the handshake this
    /// send started or joined established, or why there is none. With a gate, waits for a
    /// handshake no longer than its deadline; the handshake itself goes on, for the next send.
    pub(super) async fn connection(
        self: &Arc<Self>,
        dialer: &Arc<Dialer>,
        lane: Lane,
        gate: Option<&Gate>,
    ) -> Result<(Connection, bool), Failure> {
        let mut dialing = match self.acquire(dialer, lane) {
            Acquired::Live(conn) => return Ok((conn, true)),
            Acquired::Failed(f) => return Err(f),
            Acquired::Dialing(dialing) => dialing,
        };
        let done = async move {
            dialing
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|d| d.clone())
        };
        let dialed = match gate {
            None => done.await,
            Some(g) => tokio::time::timeout_at(tokio::time::Instant::from_std(g.at), done)
                .await
                .map_err(|_| g.missed())?,
        };
        // The dial task only ends without a result if the runtime is shutting down.
        dialed
            .unwrap_or_else(|| Err(Failure::new(FailReason::ClientClosed, "client closed")))
            .map(|conn| (conn, false))
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
    pub(super) async fn close_live(
        &self,
        lane: Lane,
        unacked: &mut Unacked,
        reason: &[u8],
        shut: bool,
    ) {
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
    pub(super) fn outcome(
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

/// A handshake for the peer's `lane`, in a task of its own (see the module doc): its end is
/// recorded in the lane's state and handed to every send waiting for it.
pub(super) async fn dial(
    dialer: Arc<Dialer>,
    state: Arc<PeerState>,
    lane: Lane,
    done: watch::Sender<Option<Dialed>>,
) {
    let result = dialer.handshake(state.addr).await;
    let dialed = state.dialed(lane, result, &dialer);
    if let Ok(conn) = &dialed {
        lane.runtime().spawn(watch_close(
            conn.clone(),
            state.clone(),
            lane,
            dialer.cfg.clone(),
        ));
    }
    done.send_replace(Some(dialed));
}

/// Notices a peer closing the connection while nothing is being sent, so the back-off starts
/// then and not at the next send.
async fn watch_close(conn: Connection, state: Arc<PeerState>, lane: Lane, cfg: ClientConfig) {
    let err = conn.closed().await;
    state.note_closed(lane, conn.stable_id(), &err, &cfg);
}
