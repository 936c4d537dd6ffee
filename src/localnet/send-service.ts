/**
 * What an RPC node does with `sendTransaction` (Agave's send-transaction service): forward the
 * wire bytes over QUIC to the current leader and the next distinct one, then re-send at a fixed
 * interval until the transaction lands, its blockhash expires, or its `maxRetries` run out.
 * It uses the same QUIC path and the same validator servers as any external sender, so faults
 * (a leader down, refusing, lossy) affect RPC-submitted transactions exactly as they would.
 */
import { MAX_PROCESSING_AGE, LEADER_SLOTS } from './constants.js';
import type { Cluster } from './cluster.js';
import { QuicClient } from './quic.js';
import type { DecodedTransaction } from './transaction.js';

/** Distinct upcoming leaders a transaction is forwarded to (`leader_forward_count`). */
const LEADER_FORWARD_COUNT = 2;

/** Transactions waiting for retries at most (`MAX_TRANSACTION_QUEUE_SIZE`); more are sent once, not retried. */
const MAX_PENDING = 10_000;

interface Pending {
  wire: Buffer;
  /** Last block height worth a retry: the blockhash's last valid height, or 150 blocks after submission for a durable-nonce transaction. */
  lastValidHeight: number;
  retriesLeft: number;
}

export class SendService {
  private readonly client: QuicClient;
  private readonly pending = new Map<string, Pending>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly cluster: Cluster,
    retryMs: number,
  ) {
    this.client = new QuicClient({ identity: cluster.rpcIdentity.seed });
    this.timer = setInterval(() => this.retry(), retryMs);
    this.timer.unref();
  }

  /** Forward now and keep retrying (`maxRetries` undefined = until landed or expired). */
  submit(decoded: DecodedTransaction, maxRetries: number | undefined): void {
    const { ledger } = this.cluster;
    const wire = Buffer.from(decoded.wire);
    this.forward(wire);
    if (this.pending.size >= MAX_PENDING || this.pending.has(decoded.signature) || maxRetries === 0) return;
    const blockhashSlot = ledger.slotOfBlockhash(decoded.recentBlockhash);
    this.pending.set(decoded.signature, {
      wire,
      lastValidHeight: ledger.blockHeight(blockhashSlot ?? ledger.slot) + MAX_PROCESSING_AGE,
      retriesLeft: maxRetries ?? Number.POSITIVE_INFINITY,
    });
  }

  /** The TPU addresses of the current leader and the next distinct ones. */
  private targets(): string[] {
    const out: string[] = [];
    const slot = this.cluster.slot;
    for (let s = slot; out.length < LEADER_FORWARD_COUNT && s < slot + LEADER_SLOTS * (LEADER_FORWARD_COUNT + 1); s++) {
      const tpu = this.cluster.leaderAt(s).tpuQuic;
      if (!out.includes(tpu)) out.push(tpu);
    }
    return out;
  }

  private forward(wire: Buffer): void {
    // Delivery failures are the validators' faults at work; like Agave's service, say nothing and retry.
    this.client.send(this.targets(), wire).catch(() => undefined);
  }

  private retry(): void {
    const { ledger } = this.cluster;
    for (const [signature, p] of this.pending) {
      if (ledger.record(signature) || ledger.blockHeight(ledger.slot) > p.lastValidHeight || p.retriesLeft <= 0) {
        this.pending.delete(signature);
        continue;
      }
      p.retriesLeft--;
      this.forward(p.wire);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.pending.clear();
    await this.client.close();
  }
}
