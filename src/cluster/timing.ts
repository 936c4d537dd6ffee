/**
 * The cluster's clocks, derived from each other in one place (issue 32). Every judgement a node
 * makes about another from silence — "its lease stopped", "its live copies stopped", "its share
 * is free again" — must outlast the time a *live* node can be silent through no fault of its own:
 * stuck on a server that stalled (SIGSTOP, a frozen VM, a hung disk) until its client notices and
 * moves to another server. That time is set by the client's stall detection, so it comes first
 * and the rest is computed from it:
 *
 *   a stalled server is noticed   ≤ PING_INTERVAL × (MAX_PING_OUT + 1)            = STALL_NOTICED_MS
 *   and left for another one      ≤ STALL_NOTICED_MS + RECONNECT_WAIT_MAX + CONNECT = SWITCH_MS
 *   a lease is dead only after    SWITCH_MS + 2 heartbeats (the next put, its echo) + 1 heartbeat of margin
 *
 * The nats.js client pings every PING_INTERVAL and gives the connection up as stale when a ping
 * is due while MAX_PING_OUT are unanswered: at the latest (MAX_PING_OUT + 1) intervals after the
 * last answer. A ping waits behind the data queued before it, but a node's event loop that is
 * merely busy cannot fake a stall: its timer then fires late too, and the answer is read before
 * the next one.
 *
 * A stall of the observer itself (this process frozen) is handled in `leases.ts`: a round counts
 * as evidence only when this node's own write went through within the last FRESH_ROUND_MS.
 */

/** How often the client pings its server, ms. */
export const PING_INTERVAL_MS = 500;
/** Unanswered pings the client tolerates; one more due and the connection is stale. */
export const MAX_PING_OUT = 2;
/** The latest a stalled server is noticed by a node connected to it, ms. */
export const STALL_NOTICED_MS = PING_INTERVAL_MS * (MAX_PING_OUT + 1);
/** The longest wait before a reconnect attempt to a server that is only unreachable (`Link.retryDelay`), ms. */
export const RECONNECT_WAIT_MAX_MS = 500;
/** A connect to a server that answers, handshake included, with room for a busy machine, ms. */
export const CONNECT_MS = 500;
/**
 * How long a connect attempt waits for the server's greeting before trying the next server: a
 * stalled server accepts TCP connections (the kernel does) but never answers, ms.
 */
export const CONNECT_TIMEOUT_MS = 4 * CONNECT_MS;
/** The longest a live node stays stuck on a stalled server before it is on another one, ms. */
export const SWITCH_MS = STALL_NOTICED_MS + RECONNECT_WAIT_MAX_MS + CONNECT_MS;

/** How often a node writes its lease and reads the others', ms. */
export const HEARTBEAT_MS = 1_000;
/**
 * A lease unchanged for this long (and through as many known rounds of the observer) is a dead
 * node, ms: a node that switched servers has written its next lease, and the observer read it
 * back, well before.
 */
export const DEAD_AFTER_MS = SWITCH_MS + 3 * HEARTBEAT_MS;
/**
 * A round of the observer is evidence only if its own lease write started at most this long ago
 * and came back: a round judged after the observer itself was frozen proves nothing, ms.
 */
export const FRESH_ROUND_MS = 2 * HEARTBEAT_MS;

/**
 * Live copies a node sends again when a node reconnects, ms back: what a node sent while stuck
 * on a stalled server (up to SWITCH_MS) and what the others sent to it meanwhile, with a
 * heartbeat of margin.
 */
export const REPLAY_MS = SWITCH_MS + HEARTBEAT_MS;

/**
 * Budget shares are leases too (`shares.ts`). A peer whose demand reports stop for SHARE_STALE_MS
 * is no longer weighed by demand: the live nodes keep 1 / known nodes of every budget reserved
 * for it until SHARE_LEASE_MS after they last heard it (+ SHARE_MARGIN_MS), and a node that stops
 * hearing its own reports uses no more than that same slice, and nothing once SHARE_LEASE_MS
 * (− SHARE_MARGIN_MS) have passed since it last heard them: whichever side of a partition a node
 * is on, the sum of the shares in use never exceeds the plan's. A node stuck on a stalled server
 * is silent up to SWITCH_MS, so the stale time outlasts it (a stall flips no share).
 */
export const SHARE_STALE_MS = SWITCH_MS;
/** The slack on each side of a share's hand-over: more than a report period (200 ms) and its delivery, ms. */
export const SHARE_MARGIN_MS = 500;
/** How long a silent node's slice is reserved for it, and how long a cut-off node may use it, ms. */
export const SHARE_LEASE_MS = 60_000;
