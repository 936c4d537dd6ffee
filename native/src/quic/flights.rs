//! The rebroadcast scheduler's flight table: every accepted transaction with rounds left (or
//! held for anti-MEV), its schedule, the leaders it was written to, and its delivery trace's
//! rounds, kept here on the QUIC runtime's side rather than in JavaScript.
//!
//! Once per slot the main thread makes ONE call (`round`): the table decides who is due with the
//! rules below, hands the writes to the peers' queues at once (one batch per target set, as
//! `sendMany` did), and a runtime task applies each batch's outcomes to the table (the queued
//! flag, the leaders a failed write does not cover, the trace's attempts) without a hop back into
//! JavaScript. JavaScript hears only of the flights that ended (in bulk, in `round`'s answer) and
//! reads a trace's attempts on demand (a live `/v1/trace`, and once when the flight ends).
//!
//! Why: the main thread paid ~39 µs a send at the maximum for the round in JavaScript — a loop
//! over every flight each slot, a promise per target group, its outcome words walked into trace
//! objects. A flight table alone in native code, the round and the traces left in JavaScript,
//! saved nothing (tried on a branch): every decision still read flights across the boundary.
//!
//! The rules (`due`), each measured; the numbers are the JavaScript scheduler's, which this
//! replaces rule for rule:
//! - rounds: `max_retries` of them at most, spread over the blockhash's life (`round_offset`),
//!   never twice in one slot;
//! - a round is counted when it is handed to the client, not when its write resolves, and a
//!   flight whose last round is still queued gets no new one: against a leader that throttles
//!   (an unstaked sender's normal case) the queues back up and writes resolve late, and counting
//!   at resolution resent every transaction in flight every slot until its blockhash died
//!   (measured: 127 writes a transaction dropped `queue_full`, up to 374 attempts where 4 were
//!   due). So a transaction is written at most `max_retries` + 1 times;
//! - landed: once the push says a transaction was processed or confirmed its rounds stop, unless
//!   [`LANDED_PAUSE_SLOTS`] pass without the tracker settling it (a push about an abandoned fork),
//!   when its remaining rounds resume;
//! - a leader that throttles us is not written a copy it already has in its window (`covers`);
//! - a round waits while the current leader's connection is backing off after a failure;
//! - with `rebroadcast_until_expiry`, a round every slot for a leader window, then one a window.

use super::client::QuicClient;
use super::outcome::SendOutcome;
use super::runtime::{lock, runtime};
use bytes::Bytes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

/// Slots a transaction's rounds stay stopped after the push said it landed, waiting for the
/// tracker to settle it: confirmation normally follows processing within 1–2 slots, and the
/// tracker's targeted status read a few hundred ms after that. Past this, the landing is doubted
/// (an abandoned fork) and the rounds left resume.
pub const LANDED_PAUSE_SLOTS: i64 = 8;

/// Slots from a round's slot to its blockhash's expiry kept clear: a round that late may not be
/// processed in time.
pub const EXPIRY_MARGIN_SLOTS: i64 = 2;

/// A blockhash's life in blocks (`getLatestBlockhash`'s lastValidBlockHeight − blockHeight + 1).
pub const BLOCKHASH_LIFE_BLOCKS: i64 = 150;

/// With `rebroadcast_until_expiry`: a round every slot for the first this many, then one every
/// this many slots (a leader window).
pub const UNTIL_EXPIRY_GAP: i64 = 4;

/// Consecutive slots a leader holds (Agave's `NUM_CONSECUTIVE_LEADER_SLOTS`): one leader window.
pub const LEADER_WINDOW_SLOTS: i64 = 4;

/// A leader seen throttling us (it reads our streams slower than we write them: its writer waits
/// for stream credit, Agave's stream limit) counts as throttling for this many slots after — a
/// blockhash's life, so every round of a transaction in flight then sees it: a round then writes
/// it no copy it already has (`covers`). Remembered for 8 slots only, the marks lapsed whenever
/// the queues had just drained, the second copies came back and the queues with them (at 200
/// sends/s: 1,808 duplicate streams read by leaders, arrivals p50 1.7 s after acceptance,
/// 0–0.22 % expired; against 79–201, 41–494 ms and 0 % when every covered leader was skipped).
pub const THROTTLE_MEMORY_SLOTS: i64 = 150;

/// The last round of a transaction goes out somewhere in the last `1 / LAST_ROUND_SPREAD` of its
/// schedule, the place drawn from its signature. Without it, every transaction signed on one
/// blockhash — a bot's whole second of sends — had its last round in the same slot, a few slots
/// before the blockhash died: against a leader that takes 200 streams a second (an unstaked
/// sender's limit) a burst of 781 such writes took 4 s to be read, and every one of them arrived
/// after the blockhash had expired (measured: 781 of 781 last rounds, 8.7 % of a saturating run).
pub const LAST_ROUND_SPREAD: i64 = 4;

/// A trace attempt's outcome word for a released hold (a real outcome word's low byte is ≥ 1).
pub const WORD_RELEASED: u16 = 0;

/// The slot offset (from the first send) of round `k` (1-based) of `n`, spread over `span` slots
/// (the slots the blockhash has left, minus [`EXPIRY_MARGIN_SLOTS`]): a geometric series from 1
/// to `span`, so each round waits a constant ratio of the transaction's age. Round 1 is in the
/// next slot (most misses are one lost write or one leader not taking it: the next slot's leader
/// does), the last near the end of the blockhash's life (a leader that drops everything for
/// seconds — a validator before its first root, a burst of loss, a run of skipped slots — gets
/// the transaction again once it is back). For 3 rounds over 148 slots: slots 1, 12, 148; for
/// 10: 1, 2, 3, 5, 9, 16, 28, 49, 85, 148. Always at least one slot after the round before. The
/// last round is moved earlier by `draw` modulo a quarter of the span ([`LAST_ROUND_SPREAD`]):
/// for 3 rounds over 148 slots, somewhere in slots 111–148.
pub fn round_offset(k: i64, n: i64, span: i64, draw: i64) -> i64 {
    if k <= 1 || n <= 1 {
        return k;
    }
    let s = span.max(n);
    // JavaScript's `Math.round` (half up) on a positive number is Rust's `round`.
    let at = k.max((s as f64).powf((k - 1) as f64 / (n - 1) as f64).round() as i64);
    if k < n {
        return at;
    }
    // The last round: drawn in the last quarter of the span, still after the round before.
    let quarter = (s + LAST_ROUND_SPREAD - 1) / LAST_ROUND_SPREAD;
    (round_offset(k - 1, n, span, 0) + 1).max(at - draw.rem_euclid(quarter))
}

/// Slots a transaction's rounds are spread over, from `base_slot`: what its blockhash has left
/// at block height `height` (in slot `slot`), less [`EXPIRY_MARGIN_SLOTS`]; a blockhash's whole
/// life when its last valid height is unknown (a durable nonce, an unknown blockhash). Block
/// height advances one per produced block, never faster than the slot: a schedule in slots that
/// fits the blocks left ends before the blockhash dies, even with skipped slots.
pub fn span_of(last_valid: Option<i64>, height: i64, base_slot: i64, slot: i64) -> i64 {
    let left = last_valid.map_or(BLOCKHASH_LIFE_BLOCKS, |lv| lv - height);
    (left - EXPIRY_MARGIN_SLOTS + (slot - base_slot)).max(1)
}

/// Why a flight from the store is sent again (`resume`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resumed {
    /// Not resumed: an accepted transaction (its hold, if any, is anti-MEV's).
    No,
    Restart,
    Rollback,
}

/// What a flight starts with (`Flights::add`).
pub struct FlightSpec {
    /// The transaction as sent: the table's own copy, shared by every round's writes.
    pub wire: Bytes,
    pub anti_mev: bool,
    /// `max_retries`: the rounds it may have (its schedule's length).
    pub max_retries: i64,
    /// `rebroadcast_until_expiry`: a round per leader window until the blockhash dies.
    pub until_expiry: bool,
    /// The slot its schedule counts from (its first send's); -1 when unknown (set at the first slot seen).
    pub base_slot: i64,
    pub held: bool,
    pub resumed: Resumed,
    /// Last valid block height; None for durable nonces and unknown blockhashes.
    pub last_valid: Option<i64>,
    /// `deadline_slot`: no round in a later slot (+∞ without one).
    pub deadline: f64,
    /// After a chain rollback: sent every slot up to this one without spending its rounds.
    pub replay_until: i64,
    /// Where in the last quarter of its schedule its last round goes (drawn from its signature).
    pub draw: i64,
    /// When the request was received, µs on the monotonic clock (`process.hrtime`'s); None when
    /// no trace is kept.
    pub accepted_us: Option<f64>,
    /// The first send's leader of its slot, if the send reached it (see `covers`): its TPU
    /// address and the slot the write was aimed at.
    pub covered: Option<(Arc<str>, i64)>,
}

/// One of a slot's targets.
#[derive(Clone)]
pub struct Leader {
    /// The first slot from now it leads.
    pub slot: i64,
    pub identity: Option<Arc<str>>,
    /// Its TPU QUIC address, as text (the trace's and `covers`' key) and parsed.
    pub tpu: Option<(Arc<str>, SocketAddr)>,
}

/// A slot's targets for one routing policy.
pub struct Route {
    pub first: Vec<Leader>,
    /// Held transactions of this policy wait (anti-MEV: the current leader is blocked).
    pub hold: bool,
}

/// One attempt of a rebroadcast round (or a released hold), as the trace keeps it.
#[derive(Clone)]
pub struct Attempt {
    /// µs since the request was received.
    pub at_us: f64,
    pub slot: i64,
    pub round: u32,
    /// The leader's identity and the TPU address, as indexes into the table's names (`names`),
    /// -1 for none: a trace read by JavaScript then carries numbers only, and the few names
    /// (a slot's leaders) cross once.
    pub leader: i32,
    pub tpu: i32,
    /// The client's outcome word ([`SendOutcome::word`]), or [`WORD_RELEASED`].
    pub word: u16,
}

/// The rounds' attempts of one flight.
#[derive(Default, Clone)]
pub struct TraceRounds {
    pub attempts: Vec<Attempt>,
    /// Attempts past the cap, counted only.
    pub omitted: u32,
    /// Rounds handed to the client whose outcomes are not in yet.
    pub outstanding: u32,
}

struct Flight {
    wire: Bytes,
    anti_mev: bool,
    max_retries: i64,
    /// Rounds written so far (rollback replays and anti-MEV releases are not counted).
    retries: i64,
    until_expiry: bool,
    base_slot: i64,
    /// Slots its rounds are spread over; -1 until the first slot seen.
    span: i64,
    /// A round of it is queued in the QUIC client: no new round until it resolves.
    queued: bool,
    /// The slot in which the push said it landed; -1 when not.
    landed_slot: i64,
    last_sent_slot: i64,
    held: bool,
    resumed: Resumed,
    last_valid: Option<i64>,
    /// Rounds sent by this table (the trace's round number).
    rounds: u32,
    deadline: f64,
    replay_until: i64,
    draw: i64,
    /// The leaders it is written to (or queued for) in their current window: TPU address and
    /// the slot the write was aimed at (see `covers`). A round skips them.
    written: Vec<(Arc<str>, i64)>,
    accepted_us: Option<f64>,
    trace: TraceRounds,
    /// Out of the rounds (settled, expired, …): kept only until its last round's outcomes are in.
    ended: bool,
    /// `due_slot` as of (retries, max_retries, base_slot, span): the round loop asks every slot,
    /// and the schedule (a `powf`) changes only when one of them does.
    due_cache: Option<([i64; 4], Option<i64>)>,
}

impl Flight {
    /// The slot its next round is due in (None: none left).
    fn due_slot(&self) -> Option<i64> {
        if self.until_expiry {
            let k = self.retries + 1;
            let offset = if k <= UNTIL_EXPIRY_GAP {
                k
            } else {
                UNTIL_EXPIRY_GAP * (k - UNTIL_EXPIRY_GAP + 1)
            };
            // A durable nonce (no expiry known) goes on until the tracker settles or expires it.
            return (self.last_valid.is_none() || offset <= self.span)
                .then_some(self.base_slot + offset);
        }
        if self.retries >= self.max_retries {
            return None;
        }
        Some(
            self.base_slot + round_offset(self.retries + 1, self.max_retries, self.span, self.draw),
        )
    }

    /// [`due_slot`](Flight::due_slot), computed again only when what it depends on changed.
    fn due(&mut self) -> Option<i64> {
        let key = [self.retries, self.max_retries, self.base_slot, self.span];
        match self.due_cache {
            Some((k, due)) if k == key => due,
            _ => {
                let due = self.due_slot();
                self.due_cache = Some((key, due));
                due
            }
        }
    }

    fn push(&mut self, a: Attempt, cap: usize) {
        if self.trace.attempts.len() < cap {
            self.trace.attempts.push(a);
        } else {
            self.trace.omitted += 1;
        }
    }
}

/// Does a write to `tpu` made in slot `aimed`, while it led, still cover `leader` (one of this
/// slot's targets, whose `slot` is the first slot from now it leads)? Yes within the same leader
/// window: a leader reads what it was sent while leading, and a second copy of a transaction it
/// already has only takes a stream from its budget — against a leader that throttles (20 streams
/// per 100 ms for an unstaked sender), a stream another transaction needed. Measured at 200
/// sends/s against those limits: round 1, written to the same two leaders as the first send one
/// slot earlier, was 1,642 of the 9,000 streams the leaders read during their windows as
/// duplicates.
///
/// Only against a leader that throttles us ([`THROTTLE_MEMORY_SLOTS`]): from one that reads our
/// streams as fast as we write them, a second copy costs nothing, and under loss it is an
/// independent chance — measured with a 5 s burst of 10 % loss at 150 ms and 200 ms slots,
/// skipping every covered leader left one transaction of 40 to its round at +12 slots (p99 12
/// slots, was 3).
fn covers(written: &[(Arc<str>, i64)], leader: &Leader) -> bool {
    let Some((tpu, _)) = &leader.tpu else {
        return false;
    };
    written
        .iter()
        .find(|(t, _)| t == tpu)
        .is_some_and(|(_, aimed)| leader.slot - aimed <= LEADER_WINDOW_SLOTS)
}

fn cover(written: &mut Vec<(Arc<str>, i64)>, tpu: &Arc<str>, aimed: i64) {
    match written.iter_mut().find(|(t, _)| t == tpu) {
        Some(w) => w.1 = aimed,
        None => written.push((tpu.clone(), aimed)),
    }
}

/// The write to `tpu` aimed at `aimed` failed: not covered after all (unless a later write covers it).
fn uncover(written: &mut Vec<(Arc<str>, i64)>, tpu: &Arc<str>, aimed: i64) {
    if let Some(i) = written.iter().position(|(t, a)| t == tpu && *a == aimed) {
        written.remove(i);
    }
}

/// The rounds' counters (the service's metrics), since the table was made.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    pub rebroadcasts: u64,
    pub released: u64,
    pub held: u64,
    pub held_expired: u64,
    /// Flights whose rounds stopped because their `deadline_slot` passed.
    pub deadline_passed: u64,
    /// Rounds the client could not take at all (none today: its refusals are outcomes).
    pub round_errors: u64,
    /// Pending transactions sent again after a restart.
    pub resent: u64,
}

/// Leader identities and TPU addresses, each numbered once (see [`Attempt`]).
#[derive(Default)]
struct Names {
    list: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, i32>,
}

impl Names {
    fn id(&mut self, name: Option<&Arc<str>>) -> i32 {
        let Some(name) = name else { return -1 };
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.list.len() as i32;
        self.list.push(name.clone());
        self.ids.insert(name.clone(), id);
        id
    }
}

#[derive(Default)]
struct Table {
    names: Names,
    flights: HashMap<u32, Flight>,
    next_id: u32,
    /// Flights in the rounds (not ended).
    active: usize,
    /// TPU address → the last slot it counts as throttling us.
    throttling: HashMap<SocketAddr, i64>,
    counters: Counters,
    /// Ended flights whose last round's outcomes are in: their traces are complete.
    finished: Vec<u32>,
    /// Most attempts a trace keeps (the store's `MAX_ATTEMPTS`, passed by JavaScript).
    cap: usize,
}

impl Table {
    /// Take `id` out of the rounds; its record stays until its trace is complete and taken.
    /// True when the trace is complete now (or none is kept: the record is gone then).
    fn end(&mut self, id: u32) -> bool {
        let Some(f) = self.flights.get_mut(&id) else {
            return false;
        };
        if !f.ended {
            f.ended = true;
            self.active -= 1;
        }
        if f.accepted_us.is_none() {
            self.flights.remove(&id);
            return true;
        }
        f.trace.outstanding == 0
    }
}

/// What one slot's round did (besides queueing writes).
#[derive(Default, Debug, PartialEq, Eq)]
pub struct RoundReport {
    /// Flights the round dropped (expired, deadline passed, rounds over).
    pub dropped: Vec<u32>,
    /// Ended flights whose traces are complete (since the last report): read them with `take`.
    pub finished: Vec<u32>,
}

/// Due flights with the same targets: anti-MEV or not, the route's leaders they get (a mask),
/// and the flights (id, and whether the round is a retry).
type Group = (bool, u64, Vec<(u32, bool)>);

/// The flight table of one client (see the module doc).
pub struct Flights {
    /// Weak: the table does not keep the client open once JavaScript's last handle is closed
    /// (the client lingers only for what is written); its rounds then write nothing.
    client: Weak<QuicClient>,
    table: Arc<Mutex<Table>>,
}

/// `process.hrtime`'s clock (CLOCK_MONOTONIC) in µs: the traces count from a JavaScript time.
pub fn monotonic_us() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3
}

impl Flights {
    /// A table sending with `client`; a trace keeps at most `cap` attempts.
    pub fn new(client: &Arc<QuicClient>, cap: usize) -> Flights {
        Flights {
            client: Arc::downgrade(client),
            table: Arc::new(Mutex::new(Table {
                cap,
                ..Table::default()
            })),
        }
    }

    /// Flights in the rounds.
    pub fn size(&self) -> usize {
        lock(&self.table).active
    }

    pub fn counters(&self) -> Counters {
        lock(&self.table).counters
    }

    /// Start rounds for a flight; returns its id.
    pub fn add(&self, s: FlightSpec) -> u32 {
        let mut t = lock(&self.table);
        if s.held && s.resumed == Resumed::No {
            t.counters.held += 1;
        }
        let id = t.next_id;
        t.next_id = t.next_id.wrapping_add(1);
        t.active += 1;
        t.flights.insert(
            id,
            Flight {
                wire: s.wire,
                anti_mev: s.anti_mev,
                max_retries: s.max_retries,
                retries: 0,
                until_expiry: s.until_expiry,
                base_slot: s.base_slot,
                span: -1,
                queued: false,
                landed_slot: -1,
                last_sent_slot: s.base_slot,
                held: s.held,
                resumed: s.resumed,
                last_valid: s.last_valid,
                rounds: 0,
                deadline: s.deadline,
                replay_until: s.replay_until,
                draw: s.draw,
                written: s.covered.into_iter().collect(),
                accepted_us: s.accepted_us,
                trace: TraceRounds::default(),
                ended: false,
                due_cache: None,
            },
        );
        id
    }

    /// Out of the rounds (settled, replaced, closing). True when its trace is complete now.
    pub fn end(&self, id: u32) -> bool {
        lock(&self.table).end(id)
    }

    /// The trace's rounds so far, and the record taken if the flight ended with its trace complete.
    pub fn take(&self, id: u32) -> Option<TraceRounds> {
        let mut t = lock(&self.table);
        let f = t.flights.get(&id)?;
        if f.ended && f.trace.outstanding == 0 {
            return t.flights.remove(&id).map(|f| f.trace);
        }
        Some(f.trace.clone())
    }

    /// The names the attempts number, from the `from`th on.
    pub fn names(&self, from: usize) -> Vec<Arc<str>> {
        let t = lock(&self.table);
        t.names.list.get(from..).unwrap_or_default().to_vec()
    }

    /// The trace's rounds so far (a live view), or None if not kept.
    pub fn trace(&self, id: u32) -> Option<TraceRounds> {
        lock(&self.table).flights.get(&id).map(|f| f.trace.clone())
    }

    /// Every flight goes again from the next slot on, and every slot up to `replay_until`
    /// without spending its rounds (a chain rollback: what landed in the lost slots is gone,
    /// and a restarted validator may not take transactions at once).
    pub fn rewind(&self, replay_until: i64) {
        for f in lock(&self.table).flights.values_mut() {
            f.last_sent_slot = -1;
            f.replay_until = replay_until;
            f.written.clear(); // what the lost chain's leaders had is gone
        }
    }

    /// Its rounds afresh (`max_retries`, and the free ones): after a rollback, rounds spent on
    /// slots that are gone bought nothing. False if not in the rounds.
    pub fn refill(&self, id: u32, max_retries: i64) -> bool {
        let mut t = lock(&self.table);
        let Some(f) = t.flights.get_mut(&id).filter(|f| !f.ended) else {
            return false;
        };
        f.max_retries = f.max_retries.max(max_retries);
        f.retries = 0;
        f.base_slot = -1;
        f.span = -1;
        f.landed_slot = -1;
        true
    }

    /// The push says it landed in slot `slot`: no round while the tracker settles it.
    pub fn landed(&self, id: u32, slot: i64) -> bool {
        let mut t = lock(&self.table);
        let Some(f) = t.flights.get_mut(&id).filter(|f| !f.ended) else {
            return false;
        };
        if f.landed_slot < 0 {
            f.landed_slot = slot;
        }
        true
    }

    /// The slot of its next round (None: not in the rounds, or none left).
    pub fn next_round_slot(&self, id: u32) -> Option<i64> {
        let t = lock(&self.table);
        let f = t.flights.get(&id).filter(|f| !f.ended)?;
        if f.base_slot < 0 {
            return None;
        }
        if f.span < 0 {
            return Some(f.base_slot + 1); // the first round is always in the next slot
        }
        f.due_slot()
    }

    /// Which leaders throttle us now: those whose connection waits for stream credit (the
    /// leader reads our streams slower than we write them). Not writes merely queued: a
    /// handshake under way, or a congestion window shrunk by loss, queues writes too, and under
    /// loss the second copy is what lands. Also which are known unreachable: backing off after
    /// a failure, or connected on neither lane since their last attempt failed (a new attempt
    /// under way: to a dead leader the prewarm dials again each time its back-off ends, and the
    /// handshake then waits out its whole timeout, for the first failures longer than the
    /// back-off before it; a round sent then wrote its only live copy to the next leader, before
    /// that leader's window).
    fn see_peers(&self, t: &mut Table, slot: i64) -> Vec<SocketAddr> {
        let mut unreachable = Vec::new();
        let Some(client) = self.client.upgrade() else {
            return unreachable;
        };
        for p in client.peer_stats() {
            if p.credit_wait_ms.is_some() {
                t.throttling.insert(p.addr, slot + THROTTLE_MEMORY_SLOTS);
            }
            if p.backoff_remaining_ms > 0 || (!p.connected && p.consecutive_failures > 0) {
                unreachable.push(p.addr);
            }
        }
        t.throttling.retain(|_, until| *until >= slot);
        unreachable
    }

    /// This slot's round: decide who is due in one pass, then one batch per target set.
    pub fn round(&self, slot: i64, height: i64, plain: &Route, anti_mev: &Route) -> RoundReport {
        let mut guard = lock(&self.table);
        let t = &mut *guard;
        let mut report = RoundReport::default();
        let unreachable = if t.active > 0 {
            self.see_peers(t, slot)
        } else {
            Vec::new()
        };
        let throttles = |throttling: &HashMap<SocketAddr, i64>, l: &Leader| {
            l.tpu
                .as_ref()
                .is_some_and(|(_, a)| throttling.get(a).is_some_and(|until| *until >= slot))
        };
        // Due flights grouped by the targets they get (a policy's leaders, less those a
        // flight's earlier write still covers, as a mask over the route): one batch per group.
        let mut groups: Vec<Group> = Vec::new();
        let cap = t.cap;
        let mut ended = Vec::new();
        for (&id, f) in t.flights.iter_mut() {
            if f.ended {
                continue;
            }
            if f.last_valid.is_some_and(|lv| height > lv) {
                ended.push(id);
                if f.held && f.resumed == Resumed::No {
                    t.counters.held_expired += 1;
                }
                continue;
            }
            if slot as f64 > f.deadline {
                // Its deadline passed: a landing now is one the bot no longer wants (nor pays for).
                ended.push(id);
                t.counters.deadline_passed += 1;
                continue;
            }
            if f.last_sent_slot >= slot {
                continue;
            }
            // Its last round is still queued: a new one would only queue behind it.
            if f.queued {
                continue;
            }
            if f.base_slot < 0 {
                f.base_slot = if f.held || f.resumed != Resumed::No {
                    slot
                } else {
                    slot - 1
                };
            }
            if f.span < 0 {
                f.span = span_of(f.last_valid, height, f.base_slot, slot);
            }
            if f.landed_slot >= 0 {
                // Landed, as far as the push knows: nothing more while the tracker settles it.
                if slot <= f.landed_slot + LANDED_PAUSE_SLOTS {
                    continue;
                }
                f.landed_slot = -1; // not settled in time: doubted, the rounds left resume
            }
            let route = if f.anti_mev { anti_mev } else { plain };
            let all = (1u64 << route.first.len().min(63)) - 1;
            let mut mask = all;
            let retry;
            if f.held {
                if route.hold {
                    continue;
                }
                f.held = false;
                match f.resumed {
                    Resumed::Restart => t.counters.resent += 1,
                    Resumed::No => t.counters.released += 1,
                    Resumed::Rollback => {}
                }
                retry = false; // a held transaction's first send is not a retry
                if let Some(acc) = f.accepted_us {
                    let a = Attempt {
                        at_us: (monotonic_us() - acc).round().max(0.0),
                        slot,
                        round: f.rounds + 1,
                        leader: t
                            .names
                            .id(route.first.first().and_then(|l| l.identity.as_ref())),
                        tpu: -1,
                        word: WORD_RELEASED,
                    };
                    f.push(a, cap);
                }
            } else if slot <= f.replay_until {
                t.counters.rebroadcasts += 1;
                retry = false; // a slot of the lost chain made again: not a retry
            } else {
                let Some(due) = f.due() else {
                    ended.push(id);
                    continue;
                };
                if slot < due {
                    continue;
                }
                // Only leaders that do not have it yet in their window (`covers`); when every
                // target does, the round waits for the next leader — unless the blockhash is
                // about to die (every copy then counts) or the bot asked for a round every slot
                // until it dies.
                if !f.until_expiry
                    && f.last_valid
                        .is_none_or(|lv| lv - height > LEADER_WINDOW_SLOTS)
                {
                    // The current leader is known unreachable (backing off after a failure, or
                    // not connected again since: `see_peers`): the round waits for the first slot
                    // of a leader that can take it. Written now, its only live copy would reach
                    // the next leader before its window (Agave holds such packets; the local
                    // cluster drops them, and a round timed into a dead leader's window then
                    // lands nowhere), so waiting costs nothing on mainnet either.
                    if let Some(current) = route.first.first() {
                        if current.slot <= slot
                            && current
                                .tpu
                                .as_ref()
                                .is_some_and(|(_, a)| unreachable.contains(a))
                        {
                            continue;
                        }
                    }
                    for (i, l) in route.first.iter().enumerate().take(63) {
                        if throttles(&t.throttling, l) && covers(&f.written, l) {
                            mask &= !(1 << i);
                        }
                    }
                    if mask == 0 {
                        continue;
                    }
                }
                t.counters.rebroadcasts += 1;
                retry = true;
            }
            f.last_sent_slot = slot;
            match groups
                .iter_mut()
                .find(|(m, k, _)| *m == f.anti_mev && *k == mask)
            {
                Some(g) => g.2.push((id, retry)),
                None => groups.push((f.anti_mev, mask, vec![(id, retry)])),
            }
        }
        for id in ended {
            if t.end(id) && t.flights.contains_key(&id) {
                t.finished.push(id);
            }
            report.dropped.push(id);
        }
        for (anti, mask, due) in groups {
            let route = if anti { anti_mev } else { plain };
            let leaders: Vec<Leader> = route
                .first
                .iter()
                .enumerate()
                .filter(|(i, l)| *i < 63 && mask & (1 << i) != 0 && l.tpu.is_some())
                .map(|(_, l)| l.clone())
                .collect();
            self.send(t, slot, leaders, due);
        }
        report.finished = std::mem::take(&mut t.finished);
        report
    }

    /// One group's writes, queued now; their outcomes applied by a runtime task.
    fn send(&self, t: &mut Table, slot: i64, leaders: Vec<Leader>, due: Vec<(u32, bool)>) {
        // No target with an address (or the client closed): nothing is written, so nothing is
        // counted (the next slot tries).
        let client = self.client.upgrade();
        if leaders.is_empty() || client.is_none() {
            for (id, _) in &due {
                if let Some(f) = t.flights.get_mut(id) {
                    f.last_sent_slot = -1;
                }
            }
            return;
        }
        let addrs: Vec<SocketAddr> = leaders
            .iter()
            .filter_map(|l| l.tpu.as_ref().map(|x| x.1))
            .collect();
        let mut txs = Vec::with_capacity(due.len());
        let mut numbers = Vec::with_capacity(due.len());
        for &(id, retry) in &due {
            let f = t
                .flights
                .get_mut(&id)
                .expect("a due flight is in the table");
            // Counted now, as it is handed to the client: its number is its own, whenever it resolves.
            if retry {
                f.retries += 1;
            }
            f.queued = true;
            for l in &leaders {
                if l.slot <= slot {
                    if let Some((tpu, _)) = &l.tpu {
                        cover(&mut f.written, tpu, l.slot);
                    }
                }
            }
            f.rounds += 1;
            numbers.push((id, f.rounds));
            if f.accepted_us.is_some() {
                f.trace.outstanding += 1;
            }
            txs.push(f.wire.clone());
        }
        let sent_us = monotonic_us();
        let names: Vec<(i32, i32)> = leaders
            .iter()
            .map(|l| {
                (
                    t.names.id(l.identity.as_ref()),
                    t.names.id(l.tpu.as_ref().map(|x| &x.0)),
                )
            })
            .collect();
        // Queued by the runtime, not here: the main thread's part of a round is the decision
        // only (queueing a write is a channel send and a reply channel per transaction and
        // target, the bulk of what the round cost this thread when `sendMany` queued them). A
        // round is not in a hurry the way a first send is.
        let table = self.table.clone();
        runtime().spawn(async move {
            let dispatched = client.map(|c| c.dispatch_batch(&addrs, &txs));
            let Some(dispatched) = dispatched else { return };
            let outcomes = dispatched.outcomes().await;
            apply(&table, slot, sent_us, &leaders, &names, &numbers, &outcomes);
        });
    }
}

/// A group's outcomes, into its flights: the queued flag, what a failed write does not cover,
/// the trace's attempts.
fn apply(
    table: &Mutex<Table>,
    slot: i64,
    sent_us: f64,
    leaders: &[Leader],
    names: &[(i32, i32)],
    numbers: &[(u32, u32)],
    outcomes: &[SendOutcome],
) {
    let n = leaders.len();
    // A few flights per hold of the lock: the main thread's `add` and `round` wait for it, and a
    // round's outcomes can be a thousand flights.
    for (c, chunk) in numbers.chunks(APPLY_CHUNK).enumerate() {
        let mut guard = lock(table);
        let t = &mut *guard;
        let cap = t.cap;
        for (j, &(id, round)) in chunk.iter().enumerate() {
            let i = c * APPLY_CHUNK + j;
            let Some(f) = t.flights.get_mut(&id) else {
                continue;
            };
            f.queued = false;
            let words = &outcomes[i * n..(i + 1) * n];
            for (l, o) in leaders.iter().zip(words) {
                // A write that failed covers nothing: the next round may try that leader again.
                if !o.ok() {
                    if let Some((tpu, _)) = &l.tpu {
                        uncover(&mut f.written, tpu, l.slot);
                    }
                }
            }
            let Some(acc) = f.accepted_us else {
                continue;
            };
            let at_us = (sent_us - acc).round().max(0.0);
            for (&(leader, tpu), o) in names.iter().zip(words) {
                f.push(
                    Attempt {
                        at_us,
                        slot,
                        round,
                        leader,
                        tpu,
                        word: o.word(),
                    },
                    cap,
                );
            }
            f.trace.outstanding -= 1;
            if f.ended && f.trace.outstanding == 0 {
                t.finished.push(id);
            }
        }
    }
}

/// Flights whose outcomes one hold of the table's lock applies (`apply`).
const APPLY_CHUNK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_offsets_are_the_documented_tables() {
        let of = |n: i64, span: i64| {
            (1..=n)
                .map(|k| round_offset(k, n, span, 0))
                .collect::<Vec<_>>()
        };
        assert_eq!(of(3, 148), [1, 12, 148]);
        assert_eq!(of(10, 148), [1, 2, 3, 5, 9, 16, 28, 49, 85, 148]);
        assert_eq!(round_offset(1, 1, 148, 0), 1);
        // The last round, drawn in the last quarter of the span (37 slots), still after the one before.
        let last: Vec<i64> = [0, 1, 36, 37]
            .iter()
            .map(|&d| round_offset(3, 3, 148, d))
            .collect();
        assert_eq!(last, [148, 147, 112, 148]);
        assert_eq!(round_offset(3, 3, 5, 3), 4);
        assert_eq!(round_offset(3, 3, 3, 7), 3);
        // A blockhash with almost no life left: still one slot apart.
        assert_eq!(of(3, 1), [1, 2, 3]);
        // Every schedule rises by at least one slot a round and ends at the span.
        for n in 2..=20 {
            for span in [1, 5, 30, 148, 150] {
                let o = of(n, span);
                assert!(o.windows(2).all(|w| w[1] > w[0]), "{n} over {span}: {o:?}");
                assert_eq!(*o.last().unwrap(), span.max(n));
            }
        }
    }

    #[test]
    fn span_is_the_blocks_left_less_the_margin() {
        assert_eq!(span_of(Some(250), 100, 10, 11), 149);
        assert_eq!(
            span_of(None, 100, 10, 10),
            BLOCKHASH_LIFE_BLOCKS - EXPIRY_MARGIN_SLOTS
        );
        assert_eq!(span_of(Some(100), 100, 10, 10), 1);
    }

    #[test]
    fn until_expiry_rounds_every_slot_then_every_window() {
        let mut f = Flight {
            wire: Bytes::from_static(b"x"),
            anti_mev: false,
            max_retries: 0,
            retries: 0,
            until_expiry: true,
            base_slot: 10,
            span: 38,
            queued: false,
            landed_slot: -1,
            last_sent_slot: 10,
            held: false,
            resumed: Resumed::No,
            last_valid: Some(140),
            rounds: 0,
            deadline: f64::INFINITY,
            replay_until: -1,
            draw: 0,
            written: Vec::new(),
            accepted_us: None,
            trace: TraceRounds::default(),
            ended: false,
            due_cache: None,
        };
        let mut dues = Vec::new();
        while let Some(d) = f.due_slot() {
            dues.push(d);
            f.retries += 1;
        }
        assert_eq!(dues, [11, 12, 13, 14, 18, 22, 26, 30, 34, 38, 42, 46]);
    }

    #[test]
    fn covers_within_a_throttling_leaders_window_only() {
        let tpu: Arc<str> = "127.0.0.1:8000".into();
        let leader = |slot| Leader {
            slot,
            identity: None,
            tpu: Some((tpu.clone(), "127.0.0.1:8000".parse().unwrap())),
        };
        let mut w = Vec::new();
        cover(&mut w, &tpu, 10);
        assert!(covers(&w, &leader(12)));
        assert!(covers(&w, &leader(14)));
        assert!(!covers(&w, &leader(15)));
        uncover(&mut w, &tpu, 9);
        assert!(covers(&w, &leader(12)));
        uncover(&mut w, &tpu, 10);
        assert!(!covers(&w, &leader(12)));
    }
}
