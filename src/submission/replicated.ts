/**
 * `ackReplication: quorum` on the thread that answers a send: the response to an accepted
 * transaction waits for the main thread to say that JetStream stored its status event (the first
 * send to the leader went out before; only the answer waits). Kept out of `src/cluster/`, which a
 * single node never loads, and out of the `local` path entirely: there nothing here is called.
 */
import { Refusal } from './refusals.js';

/**
 * How long a response waits for its record's JetStream acknowledgement, ms. Longer than one
 * publish's own timeout (2 s, `status-events.ts`), so a publish that failed is answered with its
 * own reason; shorter than a stream leader's election (4-9 s in nats-server), which a bot should
 * not sit through on one request: it hears a 500 and may resend the same signature anywhere.
 */
export const ACK_REPLICATION_TIMEOUT_MS = 3_000;

/** Responses waiting for their records to be stored, by signature (each accepted once per process). */
export class ReplicationWaits {
  private readonly waits = new Map<string, Array<{ resolve(): void; reject(e: Error): void; timer: NodeJS.Timeout }>>();

  /** Resolves when `settle(signature, null)` comes, rejects with its error or after the timeout. */
  wait(signature: string, timeoutMs = ACK_REPLICATION_TIMEOUT_MS): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const left = (this.waits.get(signature) ?? []).filter((o) => o !== w);
          if (left.length > 0) this.waits.set(signature, left);
          else this.waits.delete(signature);
          reject(new Error(`no JetStream acknowledgement within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      // An array: two concurrent first submissions of one signature may both be accepted here.
      this.waits.set(signature, [...(this.waits.get(signature) ?? []), w]);
    });
  }

  settle(signature: string, error: string | null): void {
    const ws = this.waits.get(signature);
    if (!ws) return; // timed out already
    this.waits.delete(signature);
    for (const w of ws) {
      clearTimeout(w.timer);
      if (error === null) w.resolve();
      else w.reject(new Error(error));
    }
  }
}

/** Seconds a client is told to wait before resending after an unreplicated acceptance. */
const UNREPLICATED_RETRY_S = 1;

/**
 * `500 Delivery failed` for a transaction sent once and recorded on this node whose record the
 * cluster did not store in time (NATS unreachable, a publish that failed or timed out). It is
 * not acknowledged: this node tracks and rebroadcasts it, but the loss of this node's machine
 * could forget it. A resend of the same signature is never sent as a new transaction or counted
 * twice (to this node it is known; another node records it anew and replicates it).
 */
export function unreplicated(e: Error): Refusal {
  return new Refusal(
    'DELIVERY_FAILED',
    `the transaction was sent to the leader and is recorded and tracked on this node, but the cluster did not store its record (${e.message}): not acknowledged, since the loss of this node's machine could forget it; resending the same signature is safe (it is never recorded or counted twice)`,
    { retryAfterS: UNREPLICATED_RETRY_S },
  );
}
