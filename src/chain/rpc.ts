/**
 * A small Solana JSON-RPC client: one `fetch` (undici, keep-alive) per call, a timeout on every
 * call, and JSON-RPC errors surfaced as `RpcError` with the node's code and message.
 *
 * Only what delivery and the tracker need; the shapes are those of a real Agave RPC node, so the
 * same code talks to mainnet and to the local cluster.
 */
import { redactUrlSecrets } from './redact-url.js';

export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly method: string,
    /** JSON-RPC error code, or null for a transport failure. */
    readonly code: number | null,
    message: string,
    /** The node's `error.data`, when it sent one (e.g. a simulation's logs). */
    readonly data?: unknown,
  ) {
    super(`${method}: ${message}`);
  }
}

export interface Context<T> {
  context: { slot: number };
  value: T;
}

export interface ClusterNode {
  pubkey: string;
  tpuQuic?: string | null;
  tpu?: string | null;
}

export interface EpochInfo {
  epoch: number;
  slotIndex: number;
  slotsInEpoch: number;
  absoluteSlot: number;
  blockHeight: number;
}

export interface SignatureStatus {
  slot: number;
  confirmations: number | null;
  err: unknown;
  confirmationStatus?: 'processed' | 'confirmed' | 'finalized' | null;
}

/** `getMultipleAccounts` limit of an Agave node (`MAX_MULTIPLE_ACCOUNTS`). */
export const MAX_MULTIPLE_ACCOUNTS = 100;

/** An account as `getMultipleAccounts` returns it with `encoding: 'base64'`. */
export interface AccountInfo {
  lamports: number;
  owner: string;
  data: [string, 'base64'];
  executable: boolean;
}

/** `simulateTransaction`'s value: `err` and `logs`, and the node's other fields (`unitsConsumed`, …) as sent. */
export interface SimulationResult {
  err: unknown;
  logs: string[] | null;
  [field: string]: unknown;
}

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export class Rpc {
  private nextId = 1;

  constructor(
    readonly url: string,
    private readonly timeoutMs = 5_000,
  ) {}

  async call<T>(method: string, params: unknown[] = []): Promise<T> {
    const id = this.nextId++;
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new RpcError(method, null, `request to ${redactUrlSecrets(this.url)} failed: ${(e as Error).message}`);
    }
    let body: { result?: T; error?: { code: number; message: string; data?: unknown } };
    try {
      body = (await res.json()) as typeof body;
    } catch {
      throw new RpcError(method, null, `HTTP ${res.status} from ${redactUrlSecrets(this.url)}, not JSON`);
    }
    if (body.error) throw new RpcError(method, body.error.code, body.error.message, body.error.data);
    if (!('result' in body)) throw new RpcError(method, null, `HTTP ${res.status}: no result in response`);
    return body.result as T;
  }

  getSlot(commitment: Commitment = 'processed'): Promise<number> {
    return this.call('getSlot', [{ commitment }]);
  }

  getEpochInfo(commitment: Commitment = 'processed'): Promise<EpochInfo> {
    return this.call('getEpochInfo', [{ commitment }]);
  }

  /** Leaders of `limit` slots from `start` (identity pubkeys, base58). */
  getSlotLeaders(start: number, limit: number): Promise<string[]> {
    return this.call('getSlotLeaders', [start, limit]);
  }

  getClusterNodes(): Promise<ClusterNode[]> {
    return this.call('getClusterNodes');
  }

  getLatestBlockhash(commitment: Commitment = 'confirmed'): Promise<Context<{ blockhash: string; lastValidBlockHeight: number }>> {
    return this.call('getLatestBlockhash', [{ commitment }]);
  }

  getBlockHeight(commitment: Commitment = 'confirmed'): Promise<number> {
    return this.call('getBlockHeight', [{ commitment }]);
  }

  isBlockhashValid(blockhash: string, commitment: Commitment = 'processed'): Promise<Context<boolean>> {
    return this.call('isBlockhashValid', [blockhash, { commitment }]);
  }

  getSignatureStatuses(signatures: string[], searchTransactionHistory = false): Promise<Context<(SignatureStatus | null)[]>> {
    return this.call('getSignatureStatuses', [signatures, { searchTransactionHistory }]);
  }

  /** Lamports an account of `bytes` data needs to be rent-exempt. */
  getMinimumBalanceForRentExemption(bytes: number): Promise<number> {
    return this.call('getMinimumBalanceForRentExemption', [bytes]);
  }

  /** Accounts at `addresses` (at most `MAX_MULTIPLE_ACCOUNTS`), in order, null where none exists; data in base64. */
  getMultipleAccounts(addresses: string[], commitment: Commitment = 'processed'): Promise<Context<(AccountInfo | null)[]>> {
    return this.call('getMultipleAccounts', [addresses, { encoding: 'base64', commitment }]);
  }

  simulateTransaction(wire: Buffer): Promise<Context<SimulationResult>> {
    return this.call('simulateTransaction', [
      wire.toString('base64'),
      { encoding: 'base64', sigVerify: false, replaceRecentBlockhash: false, commitment: 'processed' },
    ]);
  }

  /** Preflight: the node's simulation result, as it sent it, if the transaction fails; null if it would succeed. */
  async simulationFailure(wire: Buffer): Promise<SimulationResult | null> {
    const { value } = await this.simulateTransaction(wire);
    return value.err === null || value.err === undefined ? null : value;
  }
}
