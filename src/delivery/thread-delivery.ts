/**
 * The one `Delivery`, one per thread that serves sends. It is built from the thread's parts, so
 * the same code runs wherever a request is answered:
 * - the chain: the engine's leader tracker on the main thread (`Engine.chain`), a
 *   `ChainViewReplica` refreshed once per slot on an ingress thread;
 * - the first sender (`first-send.ts`) over the process-wide native QUIC client;
 * - the chain node's RPC, for a preflight simulation when one is asked;
 * - the hand-off sink: where an accepted transaction goes (the engine's own hand-over on the main
 *   thread, the batched hand-off to the main thread on an ingress thread), and what the answer
 *   waits for under `ackReplication: quorum`;
 * - on an ingress thread, its native hand-off queue (`handoff-queue.ts`), which the record call
 *   feeds: the sink then hands over only the entry's number.
 *
 * The submission core calls it three times a send (`chainFacts`, `firstSend`, `accepted`), or,
 * when the send's one native call writes the first send (`POST /v1/send` on an ingress thread),
 * `firstReady` before that call and `firstSent` after it instead of `firstSend`; the front ends
 * read the chain through it (`latestBlockhash`, `watchSlots`, `health`).
 */
import type { Rpc, SimulationResult } from '../chain/rpc.js';
import type { AdmissionView } from '../native.js';
import type { LatestBlockhash } from './chain-view.js';
import type { Accepted, ChainFacts, ChainHealth, ChainSource, Delivery, EarlySend, FirstSend, HandoffQueue, HandoffSink, ReadyRoute, SendOptions } from './delivery.js';
import type { FirstSender } from './first-send.js';

export class ThreadDelivery implements Delivery {
  /** The chain's facts in native memory, where it keeps them (`SendPath.admission`). */
  readonly admission: AdmissionView | null;

  constructor(
    private readonly chain: ChainSource,
    private readonly first: Pick<FirstSender, 'send'> & Partial<Pick<FirstSender, 'ready' | 'sent'>>,
    private readonly rpc: Pick<Rpc, 'simulationFailure'>,
    private readonly sink: HandoffSink,
    readonly handoffQueue: HandoffQueue | null = null,
  ) {
    this.admission = chain.admission ?? null;
  }

  chainFacts(blockhash: string | null): ChainFacts {
    const { chain } = this;
    return {
      health: chain.health(),
      blockhashExpired: blockhash !== null && chain.isBlockhashExpired(blockhash),
      lastValidBlockHeight: blockhash === null ? null : chain.lastValidBlockHeight(blockhash),
    };
  }

  simulate(wire: Buffer): Promise<SimulationResult | null> {
    return this.rpc.simulationFailure(wire);
  }

  firstSend(signature: string, wire: Buffer, options: SendOptions, receivedAt: bigint): Promise<FirstSend> {
    return this.first.send(signature, wire, options, receivedAt);
  }

  firstReady(options: SendOptions): EarlySend | null {
    return this.first.ready?.(options) ?? null;
  }

  firstSent(signature: string, ready: ReadyRoute, sent: Promise<Float64Array | string>): Promise<FirstSend> {
    return this.first.sent!(signature, ready, sent);
  }

  accepted(a: Accepted): Promise<void> | null {
    return this.sink(a) ?? null;
  }

  latestBlockhash(): LatestBlockhash | null {
    return this.chain.latestBlockhash();
  }

  watchSlots(listener: (slot: number) => void): () => void {
    return this.chain.onSlot(listener);
  }

  health(): ChainHealth {
    return this.chain.health();
  }
}
