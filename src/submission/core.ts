/**
 * The one send pipeline. `POST /v1/send`, `POST /v1/send/batch` and JSON-RPC `sendTransaction`
 * (on every path it is served) all call it; none of them knows what happens inside.
 *
 * One transaction, in order (fast path first, everything on the calling thread):
 *   1. the native verdict (framing, sanitize, ed25519, tips) — computed by the caller, which
 *      knows the encoding (base64 text, base58 text, a batch verified in one ed25519 batch);
 *   2. admission, on the chain facts of this transaction (`Delivery.chainFacts`, read once):
 *      blockhash not known-expired, a tip to a tip address, the plan minimum;
 *   3. one token of the account's send budget (native, lock-free, process-wide);
 *   4. preflight simulation, only if asked (slow path: a round trip to the chain node);
 *   5. the first send, written from this thread through the native QUIC client;
 *   6. the record: one status put (first submission only: a resubmission is delivered again,
 *      never recorded or counted twice), the usage count, and the hand-over to rebroadcast and
 *      tracking (`Delivery.accepted`), which also feeds the status stream.
 * Of delivery the core sees three calls a send — `chainFacts`, `firstSend`, `accepted` — and a
 * simulation when preflight is asked (`SendPath` in `delivery.ts`). On an ingress thread,
 * `POST /v1/send` of a cached key folds steps 1–3 and 5 into one native call
 * (`sendBase64Keyed`): the core offers it the route (`firstReady`) when nothing but the call's own
 * checks stands before the send, and settles the send it made (`firstSent`) instead of calling
 * `firstSend`.
 * Every refusal is a `Refusal` with a code from `refusals.ts`, and says when to come back and
 * which budget refused it as numbers (`retryAfterS`, `rate`); the front ends render it (HTTP
 * headers: `src/http/rate-headers.ts`). Nothing here knows HTTP.
 */
import type { Accounts } from '../accounts/accounts.js';
import type { EarlySendArgs, KeyCache, PlanFacts } from '../accounts/key-cache.js';
import type { BatchItem, SendResult } from '../client/wire.js';
import type { InFlight } from '../accounts/in-flight.js';
import { minTipLamports, pointsForTip, type Plan, type PlanName, type PlanTable } from '../accounts/plans.js';
import type { RateDecision, RateLimiter, Slots } from '../accounts/rate-limiter.js';
import { DeliveryError, type Accepted, type ChainFacts, type EarlySend, type ReadyRoute, type SendOptions, type SendPath } from '../delivery/delivery.js';
import { FIRST_ROUND_MS, FIRST_SEND_BUDGET_MS, StaleViewError } from '../delivery/first-send.js';
import { Admit, ADMIT_KEY_OUT_LEN, inspectAdmit, inspectTransaction, type InspectResult, type TipSet, type VerifiedTransaction } from '../native.js';
import { sentRecord, type StatusRecord } from '../store/records.js';
import { acceptedNames, recordBytesIn, resendOptionsByte } from '../store/status-codec.js';
import { StoreUnavailableError, type AccountRecord, type KeyRecord, type Store } from '../store/store.js';
import { invalidTransaction, Refusal } from './refusals.js';
import { unreplicated } from './replicated.js';

/** Who a request comes from, once its API key is resolved. */
export interface Caller {
  key: KeyRecord;
  account: AccountRecord;
}

/**
 * A caller known so far only by the API key it presented (`sendBase64Keyed`): resolved in the
 * send's one native call when the thread's key table can, else by `authenticate`.
 */
export interface KeyedCaller {
  keys: KeyCache;
  apiKey: string;
  /** Resolve the key the ordinary way (`KeyCache.authenticate`), or throw its 401. */
  authenticate(): Caller;
  /** Told the caller the one call resolved (before anything else about the send is decided). */
  resolved(who: Caller): void;
}

export type Budget = 'send' | 'query';

export interface SubmissionDeps {
  plans: PlanTable;
  lamportsPerPoint: number;
  accounts: Accounts;
  store: Store;
  limiter: RateLimiter;
  delivery: SendPath;
  /** Transactions in flight per account, process-wide, under the plan's cap; none: no cap. */
  inFlight?: InFlight;
  /** A 429 was answered from `budget`, or from the cap on transactions in flight, to an account on `plan` (metrics). */
  onRateLimited?: (budget: Budget | 'in_flight', plan: PlanName) => void;
  /** A transaction of an account on `plan` was accepted (recorded for the first time; metrics). */
  onAccepted?: (plan: PlanName) => void;
}

/** The outcome of one accepted transaction: the body of `POST /v1/send` (less `success`), as the client reads it. */
export type Sent = SendResult;

/**
 * The 429 of a refused take from `budget`: when to come back (whole seconds, at least 1; a
 * minute for a request the budget can never grant at once) and the decision itself.
 */
export function rateRefusal(d: RateDecision, budget: Budget): Refusal {
  const retry = Number.isFinite(d.retryAfterMs) ? Math.max(1, Math.ceil(d.retryAfterMs / 1000)) : 60;
  const reason = Number.isFinite(d.retryAfterMs)
    ? `${budget} budget of ${d.limit}/s exhausted; retry in ${Math.ceil(d.retryAfterMs)} ms`
    : `${budget} request larger than the ${d.limit}/s budget can ever grant at once`;
  return new Refusal(budget === 'send' ? 'SEND_RATE_LIMITED' : 'QUERY_RATE_LIMITED', reason, { retryAfterS: retry, rate: d });
}

export class SubmissionCore {
  constructor(private readonly d: SubmissionDeps) {}

  /** Take from an account's budget or throw its 429. */
  take(account: AccountRecord, budget: Budget, n = 1): RateDecision {
    return this.granted(budget === 'send' ? this.d.limiter.takeSend(account, n) : this.d.limiter.takeQuery(account), account, budget);
  }

  /** A take's decision if granted; else counted as rate-limited and thrown as its 429. */
  private granted(dec: RateDecision, account: AccountRecord, budget: Budget): RateDecision {
    if (!dec.granted) {
      this.d.onRateLimited?.(budget, account.plan);
      throw rateRefusal(dec, budget);
    }
    return dec;
  }

  /**
   * One transaction: admission, one send token, preflight if asked, first send, record.
   * @param receivedAt process.hrtime.bigint() when the request arrived
   */
  async send(who: Caller, r: InspectResult, options: SendOptions, receivedAt: bigint): Promise<Sent & { rate: RateDecision }> {
    if (!r.ok) throw invalidTransaction(r.error.code, r.error.message);
    const facts = this.admit(r.tx, who.account);
    fresh(facts);
    const rate = this.take(who.account, 'send');
    const slot = await this.deliver(who, r.tx, facts, options, receivedAt);
    return { signature: r.tx.signature, slot, rate };
  }

  /**
   * `POST /v1/send`'s transaction as the client sent it (base64 text). On a thread whose chain
   * view keeps its facts in native memory (an ingress thread: `SendPath.admission`), inspection,
   * admission and the send token are one call into the addon (`inspectAdmit`), which answers
   * the verified transaction, a verdict and the numbers below; elsewhere (the main thread, over
   * the leader tracker) the same steps as `send`. The same refusals in the same order either way
   * (an invalid transaction; blockhash expired; no tip; tip below the plan's minimum; stale view;
   * the send budget), their messages made here from the same numbers, and a refusal before the
   * budget takes no token.
   * @param verified told the signature once the transaction verified (before any refusal of its admission)
   */
  async sendBase64(
    who: Caller,
    base64: string,
    tips: TipSet,
    options: SendOptions,
    receivedAt: bigint,
    verified?: (signature: string) => void,
  ): Promise<Sent & { rate: RateDecision }> {
    const view = this.d.delivery.admission;
    if (view === undefined || view === null) {
      const r = inspectTransaction(base64, tips);
      if (r.ok) verified?.(r.tx.signature);
      return this.send(who, r, options, receivedAt);
    }
    const { account } = who;
    // The JavaScript keeps choosing the bucket (a plan change reconfigures it first; clustered,
    // its share follows the demand counted below).
    const bucket = this.d.limiter.sendBucket(account);
    const out = ADMIT_OUT;
    const r = inspectAdmit(base64, tips, view, this.minTipOf(account), bucket.send, out);
    return this.admitted(who, r, bucket, out, options, receivedAt, verified);
  }

  /**
   * `sendBase64` for a caller known only by the key it presented: on a thread whose chain view
   * keeps its facts natively, the key's resolution is folded into the same one call
   * (`KeyCache.admitSend`: the key table's entry holds the plan facts admission needs, written by
   * `planFacts` whenever the entry's account is read); on anything but a current hit, and on
   * other threads, `keyed.authenticate()` and then `sendBase64` — the same answers, in the same
   * order (a wrong key is refused before the transaction is looked at), either way. When
   * `earlySend` offers the route, the same call also writes the first send of a transaction it
   * admitted as certainly new (`inspectAdmitKeySend`), and `deliver` settles that send instead
   * of making its own.
   */
  async sendBase64Keyed(
    keyed: KeyedCaller,
    base64: string,
    tips: TipSet,
    options: SendOptions,
    receivedAt: bigint,
    verified?: (signature: string) => void,
  ): Promise<Sent & { rate: RateDecision }> {
    const view = this.d.delivery.admission;
    if (view !== undefined && view !== null) {
      const out = ADMIT_OUT;
      const early = this.earlySend(options, receivedAt);
      const hit = keyed.keys.admitSend(keyed.apiKey, base64, tips, view, out, early);
      if (hit !== null) {
        keyed.resolved(hit.who);
        const sent = hit.sent === undefined ? undefined : { ready: early!.ready, sent: hit.sent };
        return this.admitted(hit.who, hit.r, hit.bucket, out, options, receivedAt, verified, sent);
      }
    }
    return this.sendBase64(keyed.authenticate(), base64, tips, options, receivedAt, verified);
  }

  /**
   * What lets the send's one call write the first send too (`inspectAdmitKeySend`), or undefined
   * when something only JavaScript decides stands between admission and the send: a preflight
   * asked, a store that cannot record (nothing is sent that cannot be recorded), no route ready
   * (a stale view, a route held for anti-MEV: `SendPath.firstReady`). The call itself checks the
   * rest — admitted, certainly new, the deadline, a place in flight — and sends nothing
   * otherwise, and `deliver` then refuses it as ever.
   */
  private earlySend(options: SendOptions, receivedAt: bigint): (EarlySendArgs & { ready: EarlySend }) | undefined {
    const { delivery, store } = this.d;
    if (!options.skipPreflight || store.health.unavailable() !== null) return undefined;
    const ready = delivery.firstReady?.(options) ?? null;
    if (ready === null) return undefined;
    // One object per core, filled for this call (read synchronously by it, never kept).
    const e = (this.early ??= { ready, inFlight: this.d.inFlight?.counters.counts ?? NO_COUNTERS, round1Ms: FIRST_ROUND_MS, budgetMs: FIRST_SEND_BUDGET_MS, deadlineSlot: -1, sinceUs: 0 });
    e.ready = ready;
    e.deadlineSlot = options.deadlineSlot ?? -1;
    e.sinceUs = Number(process.hrtime.bigint() - receivedAt) / 1000;
    return e;
  }

  /** `earlySend`'s answer, refilled for each call. */
  private early: (EarlySendArgs & { ready: EarlySend }) | undefined;

  /**
   * What admission needs of `account`, for the key table's entry (`KeyCache.admitWith`): the
   * plan's minimum tip, the account's send bucket configured for its plan, and (when the
   * service counts them) its counter of transactions in flight with the plan's cap.
   */
  planFacts(account: AccountRecord): PlanFacts {
    const { inFlight } = this.d;
    return {
      minTipLamports: this.minTipOf(account),
      bucket: this.d.limiter.sendBucket(account),
      ...(inFlight !== undefined && { inFlight: { slot: inFlight.counters.slotOf(account.id), cap: inFlight.cap(account.plan) } }),
    };
  }

  /** The minimum tip of `account`'s plan in lamports, as `inspectAdmit` takes it. */
  private minTipOf(account: AccountRecord): number {
    return this.d.plans[account.plan].minTipBp * this.d.lamportsPerPoint;
  }

  /** After `inspectAdmit` (or `inspectAdmitKey`) wrote `out`: the refusals, or the send on. */
  private async admitted(
    who: Caller,
    r: InspectResult,
    bucket: Readonly<Slots>,
    out: Float64Array,
    options: SendOptions,
    receivedAt: bigint,
    verified: ((signature: string) => void) | undefined,
    sent?: EarlySent,
  ): Promise<Sent & { rate: RateDecision }> {
    // With `sent`, the one call admitted the transaction (nothing below refuses it) and sent it.
    const { account } = who;
    const plan = this.d.plans[account.plan];
    if (!r.ok) throw invalidTransaction(r.error.code, r.error.message);
    const { tx } = r;
    verified?.(tx.signature);
    const verdict = out[0]!;
    if (verdict === Admit.BLOCKHASH_EXPIRED) throw blockhashExpired(tx);
    if (verdict === Admit.TIP_REQUIRED) throw tipRequired(tx);
    if (verdict === Admit.TIP_INSUFFICIENT) throw tipInsufficient(tx, account, plan, this.d.lamportsPerPoint);
    if (verdict === Admit.STALE) throw deliveryRefusal(new StaleViewError(out[1]!, out[2]!));
    this.d.limiter.sendDemand(bucket, 1);
    const rate = this.granted(
      { granted: verdict === Admit.ADMITTED, limit: plan.maxTps, remaining: out[4]!, retryAfterMs: out[5]!, resetMs: out[6]! },
      account,
      'send',
    );
    const lastValid = out[3]!;
    const facts: ChainFacts = {
      health: { synced: true, slot: out[1]!, slotAgeMs: out[2]! },
      blockhashExpired: false,
      lastValidBlockHeight: lastValid < 0 ? null : lastValid,
    };
    // `out[7]`: the process's filter of known signatures never had this one, so no record of it
    // can exist and the duplicate check is answered (`native/src/known.rs`).
    const slot = await this.deliver(who, tx, facts, options, receivedAt, out[7] === 1, sent);
    return { signature: tx.signature, slot, rate };
  }

  /**
   * A batch: N send tokens at once (all or nothing, spec §8) before anything is verified, then
   * each verified transaction through the single path; a refused item fails alone (spec §4.2
   * rule 2).
   * @param verify verdicts, one per input, from one ed25519 batch verification; null for an item
   *   that is not a string
   */
  async sendBatch(
    who: Caller,
    count: number,
    verify: () => Promise<(InspectResult | null)[]>,
    options: SendOptions,
    receivedAt: bigint,
  ): Promise<{ results: BatchItem[]; rate: RateDecision }> {
    const rate = this.take(who.account, 'send', count);
    const verdicts = await verify();
    const results = await Promise.all(
      verdicts.map(async (v, index): Promise<BatchItem> => {
        try {
          if (v === null) throw new Refusal('TX_INVALID', 'transaction must be a base64 string');
          if (!v.ok) throw invalidTransaction(v.error.code, v.error.message);
          const facts = this.admit(v.tx, who.account);
          await this.deliver(who, v.tx, facts, options, receivedAt);
          return { index, signature: v.tx.signature, status: 'sent' };
        } catch (e) {
          if (!(e instanceof Refusal)) throw e;
          // Only a delivery failure has a signature worth reporting: the transaction was valid.
          const signature = e.code === 'DELIVERY_FAILED' && v?.ok ? v.tx.signature : null;
          return { index, signature, status: 'failed', error: `${e.message}: ${e.reason}` };
        }
      }),
    );
    return { results, rate };
  }

  /**
   * Blockhash, tip, plan minimum: what a verified transaction must still pass. Returns the chain
   * facts it was admitted on (read once: the rest of its path decides on the same ones).
   */
  private admit(tx: VerifiedTransaction, account: AccountRecord): ChainFacts {
    const facts = this.d.delivery.chainFacts(tx.durableNonce ? null : tx.recentBlockhash);
    if (facts.blockhashExpired) throw blockhashExpired(tx);
    if (tx.tipLamports === 0n) throw tipRequired(tx);
    const plan = this.d.plans[account.plan];
    if (tx.tipLamports < minTipLamports(plan, this.d.lamportsPerPoint)) throw tipInsufficient(tx, account, plan, this.d.lamportsPerPoint);
    return facts;
  }

  /** Count a new transaction in flight for `account`, or throw the 429 of its cap. */
  private holdInFlight(account: AccountRecord): void {
    const cap = this.d.inFlight?.tryAdd(account) ?? null;
    if (cap === null) return;
    this.d.onRateLimited?.('in_flight', account.plan);
    const n = Math.max(cap, this.d.inFlight!.count(account.id));
    throw new Refusal('SEND_RATE_LIMITED', `${n} transactions of this account are in flight (cap ${cap}); wait for some to settle`, {
      retryAfterS: IN_FLIGHT_RETRY_S,
      rate: { limit: cap, remaining: 0, resetMs: IN_FLIGHT_RETRY_S * 1000 },
    });
  }

  /**
   * Preflight if asked, first send, then record (first submission only) and hand over.
   * @param certainlyNew no record of the signature can exist (`inspectAdmit`'s filter answer):
   *   the store is not asked
   * @param sent the first send, already made by the send's one call (`earlySend`): it checked
   *   what comes before the send here and took the place in flight
   * @returns the slot of the first send
   */
  private async deliver(
    who: Caller,
    tx: VerifiedTransaction,
    facts: ChainFacts,
    options: SendOptions,
    receivedAt: bigint,
    certainlyNew = false,
    sent?: EarlySent,
  ): Promise<number> {
    const { delivery, store } = this.d;
    const slot = facts.health.slot;
    const wire = tx.wire!;
    // The record's key and blockhash, read in place from the wire (not decoded from base58 again).
    const bytes = recordBytesIn(wire, tx.signatureOffset, tx.blockhashOffset);
    let known = false;
    // Up to the first send; with `sent`, the one call checked all of it before it sent.
    if (sent === undefined) {
      // Nothing is sent that cannot be recorded (docs/decisions.md, "Faults"): one atomic load, shared
      // by every thread, set by whichever thread's store first could not write.
      const storeDown = store.health.unavailable();
      if (storeDown !== null) throw storeRefusal(storeDown);
      // Idempotence needs only whether a record exists, not the record — and it is asked before
      // anything that could refuse a resend: a client that resends after a timeout must hear that
      // its transaction is known (and, say, confirmed), never "deadline passed" or a preflight
      // failure (a confirmed transaction simulates as already processed). A bot that believed such
      // a refusal would sign again and pay twice.
      // "Certainly new" from the filter is the common case on an ingress thread (no store read);
      // "maybe known" (a record, a false positive, or the filter not loaded yet) asks the store.
      known = !certainlyNew && store.hasStatus(bytes.signature);
      if (known) {
        const answered = knownAnswer(store.getStatus(tx.signature), who.account.id, options.deadlineSlot, slot);
        if (answered !== null) return answered;
      }
      // A deadline already behind the chain: nothing to deliver, and nothing is sent.
      if (options.deadlineSlot !== null && options.deadlineSlot < slot) {
        throw new Refusal('TX_OPTIONS', `options.deadline_slot ${options.deadlineSlot} has passed: the cluster is at slot ${slot}`);
      }
      if (!known && !options.skipPreflight) {
        const failure = await delivery.simulate(wire);
        if (failure !== null) {
          throw new Refusal('TX_PREFLIGHT', `preflight simulation failed: ${JSON.stringify(failure.err)}${preflightDetail(failure.logs)}`, {
            simulation: failure,
          });
        }
      }
      // A new signature takes a place among the account's transactions in flight (given back by
      // the tracker when it settles or expires, or below if it is not accepted after all).
      if (!known) this.holdInFlight(who.account);
    }
    let first;
    try {
      first = sent === undefined ? await delivery.firstSend(tx.signature, wire, options, receivedAt) : await delivery.firstSent!(tx.signature, sent.ready, sent.sent);
    } catch (e) {
      if (!known) this.d.inFlight?.release(who.account.id);
      if (e instanceof DeliveryError) throw deliveryRefusal(e);
      throw e;
    }
    // Idempotent: a known signature is delivered again but never recorded or counted twice.
    if (!known) {
      const record: StatusRecord = sentRecord({
        signature: tx.signature,
        accountId: who.account.id,
        keyName: who.key.name,
        tipLamports: tx.tipLamports,
        recentBlockhash: tx.recentBlockhash,
        durableNonce: tx.durableNonce,
        submittedAt: Date.now(),
        submitSlot: first.slot,
        lastValidBlockHeight: facts.lastValidBlockHeight,
        deadlineSlot: options.deadlineSlot ?? undefined,
      });
      const accepted: Accepted = {
        record,
        wire,
        options,
        receivedAt,
        sentSlot: first.held ? -1 : first.slot,
        held: first.held,
        firstAttempts: first.attempts,
        nonceAccount: tx.nonceAccount,
        computeUnitPrice: microLamports(tx.computeUnitPrice),
        signatureOffset: tx.signatureOffset,
        blockhashOffset: tx.blockhashOffset,
        handoffSeq: 0,
      };
      // The wire bytes ride in the record while it is pending: a restart sends it again. Logged
      // before the answer (a process crash cannot lose it), or refused (`unrecorded`). One
      // native call encodes, logs, shows (the overlay) and counts it (the account's usage), and
      // on an ingress thread puts it on the thread's hand-off queue to the main thread.
      const { accounts } = this.d;
      const queue = delivery.handoffQueue ?? null;
      try {
        accepted.handoffSeq = store.insertAccepted(
          record,
          bytes.signature,
          wire,
          tx.blockhashOffset,
          namesOf(who),
          resendOptionsByte(options.antiMev, options.maxRetries, options.rebroadcastUntilExpiry),
          accounts.usageIndex(who.account.id),
          accounts.today(),
          queue,
          queue?.tail(accepted),
        );
      } catch (e) {
        this.d.inFlight?.release(who.account.id);
        if (e instanceof StoreUnavailableError) throw unrecorded(e);
        throw e;
      }
      this.d.onAccepted?.(who.account.plan);
      const stored = delivery.accepted(accepted);
      // `ackReplication: quorum`: answered only once the cluster stored the record (the first
      // send is out already); under `local` the hand-over returns null and nothing is awaited.
      if (stored !== null) {
        try {
          await stored;
        } catch (e) {
          throw unreplicated(e instanceof Error ? e : new Error(String(e)));
        }
      }
    }
    return first.slot;
  }
}

/** Where this thread's `inspectAdmit` / `inspectAdmitKey` writes its verdict and numbers (read at once, before any await). */
const ADMIT_OUT = new Float64Array(ADMIT_KEY_OUT_LEN);

/** In-flight counters for a service that counts none (the one call then takes no place). */
const NO_COUNTERS = new Int32Array(0);

/** A first send the send's one call made (`inspectAdmitKeySend`): its route and `sendFirstRoute`'s promise. */
interface EarlySent {
  ready: ReadyRoute;
  sent: Promise<Float64Array | string>;
}

/** The admission refusals, one message each whichever path decided them (`admit`, `inspectAdmit`). */
function blockhashExpired(tx: VerifiedTransaction): Refusal {
  return new Refusal('TX_BLOCKHASH_EXPIRED', `blockhash ${tx.recentBlockhash} has expired; sign with a recent blockhash`);
}

function tipRequired(tx: VerifiedTransaction): Refusal {
  return new Refusal(
    'TIP_REQUIRED',
    tx.transfersViaLookup > 0
      ? 'a transfer destination is loaded from an address lookup table; tip addresses must be static account keys'
      : 'no System transfer to a tip address (GET /v1/tip-addresses)',
  );
}

function tipInsufficient(tx: VerifiedTransaction, account: AccountRecord, plan: Plan, lamportsPerPoint: number): Refusal {
  return new Refusal(
    'TIP_INSUFFICIENT',
    `tip of ${tx.tipLamports} lamports (${pointsForTip(tx.tipLamports, lamportsPerPoint)} BP) is below the ${account.plan} minimum of ${plan.minTipBp} BP (${minTipLamports(plan, lamportsPerPoint)} lamports)`,
  );
}

/**
 * A caller's two strings as its records store them (`acceptedNames`), made once per key record:
 * the key cache hands out the same `KeyRecord` for every request with that key, so this is one
 * WeakMap lookup a send (a caller built afresh, the CLI's, just makes them again).
 */
const namesByKey = new WeakMap<KeyRecord, { accountId: string; names: Buffer }>();
function namesOf(who: Caller): Buffer {
  const held = namesByKey.get(who.key);
  if (held !== undefined && held.accountId === who.account.id) return held.names;
  const names = acceptedNames(who.account.id, who.key.name);
  namesByKey.set(who.key, { accountId: who.account.id, names });
  return names;
}

/**
 * The answer to a resend of a known signature without a new delivery, or null when it is to be
 * delivered again (its own account's, still pending, deadline not passed: what resending is for).
 * - Settled (confirmed, failed, expired): nothing to deliver; the first submission's slot.
 * - Another account's: the signature is public once sent, so anyone may resend the bytes; they
 *   get the same answer as a resend (it is known) but no new delivery (which would spend the owner's
 *   leaders' attention on a stranger's say-so), and no place in anyone's records.
 * - Its deadline slot passed: the tracker expires it; sending it again would be for nothing.
 */
function knownAnswer(record: StatusRecord | undefined, accountId: string, deadlineSlot: number | null, currentSlot: number): number | null {
  if (record === undefined) return null; // vanished between the two reads (retention): deliver as known
  const settled = record.status !== 'sent' || record.expired;
  const deadline = record.deadlineSlot ?? deadlineSlot;
  const pastDeadline = deadline !== null && deadline !== undefined && deadline < currentSlot;
  if (settled || record.accountId !== accountId || pastDeadline) return record.submitSlot;
  return null;
}

/** A compute-unit price as a number (0 when the transaction sets none; capped at 2^53 − 1). */
function microLamports(price: bigint | undefined): number {
  if (price === undefined) return 0;
  return price > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(price);
}

/**
 * Refuse at once, before a send token is taken, while the chain view is stale: its leaders and
 * addresses may belong to a chain that is gone, so nothing sent now could be vouched for.
 */
function fresh(facts: ChainFacts): void {
  const h = facts.health;
  if (!h.synced) throw deliveryRefusal(new StaleViewError(h.slot, h.slotAgeMs));
}

/** Seconds a client is told to wait when its account has its cap of transactions in flight. */
const IN_FLIGHT_RETRY_S = 1;

/**
 * `500 Delivery failed` for a transaction that was neither delivered nor recorded (stale chain
 * view, no leader accepted it in time): the client may retry it in a second (docs/decisions.md,
 * "Faults").
 */
function deliveryRefusal(e: DeliveryError): Refusal {
  return new Refusal('DELIVERY_FAILED', e.message, { retryAfterS: 1 });
}

/** Seconds a client is told to wait while the store cannot write (its probe looks every second). */
const STORE_RETRY_S = 5;

/** `500 Delivery failed` while the store cannot commit: refused before anything is sent. */
function storeRefusal(down: { reason: string; since: number }): Refusal {
  return new Refusal('DELIVERY_FAILED', `store unavailable since ${new Date(down.since).toISOString()}: ${down.reason}; nothing was sent`, {
    retryAfterS: STORE_RETRY_S,
  });
}

/**
 * `500 Delivery failed` for a transaction sent once whose record could not be kept (the
 * acknowledgement log could not be written): it is not acknowledged, since nothing would track it.
 */
function unrecorded(e: StoreUnavailableError): Refusal {
  return new Refusal('DELIVERY_FAILED', `${e.message}; the transaction was sent once to the current leader but is not tracked or rebroadcast`, {
    retryAfterS: STORE_RETRY_S,
  });
}

/** The last log line that says what went wrong, if any, in parentheses. */
function preflightDetail(logs: string[] | null): string {
  const line = (logs ?? []).filter((l) => /failed|error|insufficient/i.test(l)).slice(-1)[0];
  return line ? ` (${line})` : '';
}
