/**
 * The JSON-RPC methods of the local cluster, answering with the shapes, defaults and errors of
 * Agave's RPC (`rpc/src/rpc.rs`): default commitment `finalized`, `context: {slot, apiVersion}`
 * where Agave has it, base58 the default transaction encoding of `sendTransaction` and
 * `simulateTransaction`, `getTransaction` refusing `processed`, and so on.
 *
 * Account reads answer from the bank of the requested commitment (the ledger keeps each
 * account's earlier states for the last 33 slots); `simulateTransaction` and preflight execute
 * against the newest state, with the blockhash judged at the requested commitment's bank.
 */
import { FEATURE_SET, MAX_MULTIPLE_ACCOUNTS, MAX_SIGNATURE_STATUSES, MAX_SLOT_LEADERS, SHRED_VERSION, SOLANA_CORE_VERSION } from './constants.js';
import type { Cluster } from './cluster.js';
import {
  context,
  encodeAccount,
  encodeMeta,
  encodeStatus,
  encodeTransaction,
  MAX_BASE58_BYTES,
  type AccountEncoding,
  type TransactionEncoding,
} from './encode.js';
import type { Ledger } from './ledger.js';
import {
  bool,
  checkMinContextSlot,
  commitment,
  config,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  invalidParams,
  oneOf,
  positional,
  pubkey,
  RpcError,
  SEND_TRANSACTION_PREFLIGHT_FAILURE,
  signature,
  TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
  u64,
  UNSUPPORTED_TRANSACTION_VERSION,
} from './rpc-params.js';
import type { SendService } from './send-service.js';
import { decodeTransaction, DecodeError, isBase58Of, withBlockhash, type DecodedTransaction } from './transaction.js';
import { base58Decode } from '../native.js';

export interface RpcEnv {
  cluster: Cluster;
  sender: SendService;
  /** `host:port` of the JSON-RPC and PubSub servers, as `getClusterNodes` reports the RPC node. */
  rpcAddress: string;
  pubsubAddress: string;
}

export type Method = (params: unknown, env: RpcEnv) => unknown;

/** The bank slot a request with config `c` reads from, after its `minContextSlot` check. */
function bankSlot(ledger: Ledger, c: Record<string, unknown>): number {
  const slot = ledger.commitmentSlot(commitment(c));
  checkMinContextSlot(c, slot);
  return slot;
}

/** Methods taking only `[config?]` with commitment + minContextSlot and answering about the bank's slot. */
function slotMethod(answer: (slot: number, env: RpcEnv) => unknown): Method {
  return (params, env) => answer(bankSlot(env.cluster.ledger, config(positional(params, 1), 0)), env);
}

const TX_BINARY_ENCODINGS = ['base58', 'base64'] as const;

/** Decode a transaction parameter (`encoding` default base58, as Agave). */
function transactionParam(v: unknown, encoding: 'base58' | 'base64'): DecodedTransaction {
  if (typeof v !== 'string') throw invalidParams('Invalid params: the transaction must be an encoded string');
  let wire: Uint8Array;
  if (encoding === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) throw invalidParams('invalid base64 encoding: Invalid input');
    wire = Buffer.from(v, 'base64');
  } else {
    try {
      wire = base58Decode(v);
    } catch {
      throw invalidParams('invalid base58 encoding: Invalid input');
    }
  }
  try {
    return decodeTransaction(wire);
  } catch (e) {
    throw invalidParams(`invalid transaction: ${e instanceof DecodeError ? e.message : String(e)}`);
  }
}

function simulationValue(
  r: ReturnType<Ledger['simulate']>,
  replacementBlockhash: { blockhash: string; lastValidBlockHeight: number } | null,
): Record<string, unknown> {
  return {
    err: r.err?.json ?? null,
    logs: r.logs,
    accounts: null,
    unitsConsumed: r.unitsConsumed,
    loadedAccountsDataSize: null,
    returnData: r.returnData,
    innerInstructions: null,
    replacementBlockhash,
    fee: null,
    preBalances: null,
    postBalances: null,
    preTokenBalances: null,
    postTokenBalances: null,
    loadedAddresses: null,
  };
}

function nodeEntry(pubkey: string, tpuQuic: string | null, rpc: string | null, pubsub: string | null): Record<string, unknown> {
  return {
    pubkey,
    gossip: null,
    tvu: null,
    tpu: null,
    tpuQuic,
    tpuForwards: null,
    tpuForwardsQuic: null,
    tpuVote: null,
    serveRepair: null,
    rpc,
    pubsub,
    version: SOLANA_CORE_VERSION,
    clientId: 'Agave',
    featureSet: FEATURE_SET,
    shredVersion: SHRED_VERSION,
  };
}

export const METHODS: Record<string, Method> = {
  getHealth: (params) => (positional(params, 0), 'ok'),

  getVersion: (params) => (positional(params, 0), { 'solana-core': SOLANA_CORE_VERSION, 'feature-set': FEATURE_SET }),

  getSlot: slotMethod((slot) => slot),

  /** Every slot has a block here (no skipped slots), so block height equals slot. */
  getBlockHeight: slotMethod((slot) => slot),

  getEpochInfo: slotMethod((slot, { cluster }) => {
    const { schedule, ledger } = cluster;
    const epoch = schedule.epochOf(slot);
    let newer = 0;
    for (let s = slot + 1; s <= ledger.slot; s++) newer += ledger.block(s)?.transactions.length ?? 0;
    return {
      absoluteSlot: slot,
      blockHeight: slot,
      epoch,
      slotIndex: slot - schedule.firstSlotOf(epoch),
      slotsInEpoch: schedule.slotsPerEpoch,
      transactionCount: ledger.transactionCount - newer,
    };
  }),

  getEpochSchedule: (params, { cluster }) => (positional(params, 0), cluster.schedule.epochSchedule()),

  getLeaderSchedule: (params, { cluster }) => {
    const p = positional(params, 2);
    // The first parameter is a slot, or (the newer form) the configuration itself.
    const first = p[0];
    const firstIsConfig = typeof first === 'object' && first !== null;
    const c = config(p, firstIsConfig ? 0 : 1);
    const bank = bankSlot(cluster.ledger, c);
    const slot = first === undefined || first === null || firstIsConfig ? bank : u64(first, 'slot');
    const epoch = cluster.schedule.epochOf(slot);
    if (epoch > cluster.schedule.knownEpochAt(bank)) return null;
    const schedule = cluster.schedule.scheduleOf(epoch);
    if (c.identity === undefined || c.identity === null) return schedule;
    const identity = pubkey(c.identity);
    return schedule[identity] ? { [identity]: schedule[identity] } : {};
  },

  getSlotLeaders: (params, { cluster }) => {
    const p = positional(params, 2);
    const start = u64(p[0], 'start slot');
    const limit = u64(p[1], 'limit');
    if (limit < 1 || limit > MAX_SLOT_LEADERS) throw invalidParams(`Invalid limit; max ${MAX_SLOT_LEADERS}`);
    const lastEpoch = cluster.schedule.knownEpochAt(cluster.slot);
    const end = start + limit - 1;
    if (cluster.schedule.epochOf(end) > lastEpoch) {
      throw invalidParams(`Invalid slot range: leader schedule for epoch ${cluster.schedule.epochOf(end)} is unavailable`);
    }
    return Array.from({ length: limit }, (_, i) => cluster.schedule.leaderAt(start + i));
  },

  getClusterNodes: (params, { cluster, rpcAddress, pubsubAddress }) => {
    positional(params, 0);
    return [
      ...cluster.validators.map((v) => nodeEntry(v.identity, v.tpuQuic, null, null)),
      nodeEntry(cluster.rpcIdentity.address, null, rpcAddress, pubsubAddress),
    ];
  },

  getLatestBlockhash: (params, { cluster }) => {
    const slot = bankSlot(cluster.ledger, config(positional(params, 1), 0));
    return { context: context(slot), value: cluster.ledger.latestBlockhash(slot) };
  },

  isBlockhashValid: (params, { cluster }) => {
    const p = positional(params, 2);
    if (typeof p[0] !== 'string' || !isBase58Of(p[0], 32)) throw invalidParams('Invalid param: Invalid');
    const slot = bankSlot(cluster.ledger, config(p, 1));
    return { context: context(slot), value: cluster.ledger.isBlockhashValid(p[0], slot) };
  },

  getSignatureStatuses: (params, { cluster }) => {
    const p = positional(params, 2);
    if (!Array.isArray(p[0])) throw invalidParams('Invalid params: expected an array of signatures');
    if (p[0].length > MAX_SIGNATURE_STATUSES) throw invalidParams(`Too many inputs provided; max ${MAX_SIGNATURE_STATUSES}`);
    const sigs = p[0].map(signature);
    const search = bool(config(p, 1), 'searchTransactionHistory', false);
    const { ledger } = cluster;
    return {
      context: context(ledger.slot),
      value: sigs.map((s) => {
        const r = ledger.statusRecord(s, search);
        return r ? encodeStatus(r, ledger) : null;
      }),
    };
  },

  getTransaction: (params, { cluster }) => {
    const p = positional(params, 2);
    const sig = signature(p[0]);
    // The second parameter is an encoding name (old form) or a configuration.
    const c = typeof p[1] === 'string' ? { encoding: p[1] } : config(p, 1);
    const level = commitment(c);
    if (level === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
    const encoding = oneOf<TransactionEncoding>(c, 'encoding', ['json', 'base64', 'base58'], 'json');
    const maxVersion = c.maxSupportedTransactionVersion === undefined || c.maxSupportedTransactionVersion === null ? null : u64(c.maxSupportedTransactionVersion, 'maxSupportedTransactionVersion');
    const { ledger } = cluster;
    const r = ledger.record(sig);
    if (!r || r.slot > ledger.commitmentSlot(level)) return null;
    const version = r.decoded.version;
    if (version === 0 && (maxVersion === null || maxVersion < 0)) {
      throw new RpcError(
        UNSUPPORTED_TRANSACTION_VERSION,
        'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
      );
    }
    return {
      slot: r.slot,
      transaction: encodeTransaction(r, encoding),
      meta: encodeMeta(r),
      blockTime: ledger.block(r.slot)?.blockTime ?? null,
      ...(maxVersion !== null && { version }),
    };
  },

  simulateTransaction: (params, { cluster }) => {
    const p = positional(params, 2);
    const c = config(p, 1);
    let tx = transactionParam(p[0], oneOf(c, 'encoding', TX_BINARY_ENCODINGS, 'base58'));
    const sigVerify = bool(c, 'sigVerify', false);
    const replace = bool(c, 'replaceRecentBlockhash', false);
    if (sigVerify && replace) throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
    const { ledger } = cluster;
    const slot = bankSlot(ledger, c);
    let replacement: ReturnType<Ledger['latestBlockhash']> | null = null;
    if (replace) {
      replacement = ledger.latestBlockhash(slot);
      tx = withBlockhash(tx, base58Decode(replacement.blockhash));
    }
    const result = ledger.simulate(tx, sigVerify, slot);
    if (sigVerify && result.err?.json === 'SignatureFailure') {
      throw new RpcError(TRANSACTION_SIGNATURE_VERIFICATION_FAILURE, 'Transaction signature verification failure');
    }
    return { context: context(slot), value: simulationValue(result, replacement) };
  },

  sendTransaction: (params, { cluster, sender }) => {
    const p = positional(params, 2);
    const c = config(p, 1);
    const tx = transactionParam(p[0], oneOf(c, 'encoding', TX_BINARY_ENCODINGS, 'base58'));
    const skipPreflight = bool(c, 'skipPreflight', false);
    const maxRetries = c.maxRetries === undefined || c.maxRetries === null ? undefined : u64(c.maxRetries, 'maxRetries');
    const { ledger } = cluster;
    const slot = ledger.commitmentSlot(skipPreflight ? 'processed' : oneOf(c, 'preflightCommitment', ['processed', 'confirmed', 'finalized'], 'finalized'));
    checkMinContextSlot(c, slot);
    if (!skipPreflight) {
      const result = ledger.simulate(tx, true, slot);
      if (result.err?.json === 'SignatureFailure') {
        throw new RpcError(TRANSACTION_SIGNATURE_VERIFICATION_FAILURE, 'Transaction signature verification failure');
      }
      if (result.err) {
        throw new RpcError(SEND_TRANSACTION_PREFLIGHT_FAILURE, `Transaction simulation failed: ${result.err.message}`, simulationValue(result, null));
      }
    }
    sender.submit(tx, maxRetries);
    return tx.signature;
  },

  requestAirdrop: (params, { cluster }) => {
    const p = positional(params, 3);
    const to = pubkey(p[0]);
    const lamports = u64(p[1], 'lamports');
    checkMinContextSlot(config(p, 2), cluster.slot);
    try {
      return cluster.airdrop(to, lamports);
    } catch (e) {
      throw new RpcError(INTERNAL_ERROR, `airdrop request failed: ${(e as Error).message}`);
    }
  },

  getBalance: (params, { cluster }) => {
    const p = positional(params, 2);
    const address = pubkey(p[0]);
    const slot = bankSlot(cluster.ledger, config(p, 1));
    return { context: context(slot), value: Number(cluster.ledger.account(address, slot)?.lamports ?? 0n) };
  },

  getAccountInfo: (params, { cluster }) => {
    const p = positional(params, 2);
    const address = pubkey(p[0]);
    const c = config(p, 1);
    const encoding = oneOf<AccountEncoding>(c, 'encoding', ['base58', 'base64', 'jsonParsed', 'binary'], 'binary');
    const slice = dataSlice(c.dataSlice);
    const slot = bankSlot(cluster.ledger, c);
    return { context: context(slot), value: encodedAccount(cluster.ledger, address, slot, encoding, slice) };
  },

  /** As Agave: at most 100 addresses, `base64` by default, one bank for all, `null` for a missing account. */
  getMultipleAccounts: (params, { cluster }) => {
    const p = positional(params, 2);
    if (!Array.isArray(p[0])) throw invalidParams('Invalid params: expected an array of base58 public key strings');
    if (p[0].length > MAX_MULTIPLE_ACCOUNTS) throw invalidParams(`Too many inputs provided; max ${MAX_MULTIPLE_ACCOUNTS}`);
    const addresses = p[0].map(pubkey);
    const c = config(p, 1);
    const encoding = oneOf<AccountEncoding>(c, 'encoding', ['base58', 'base64', 'jsonParsed', 'binary'], 'base64');
    const slice = dataSlice(c.dataSlice);
    const slot = bankSlot(cluster.ledger, c);
    return { context: context(slot), value: addresses.map((a) => encodedAccount(cluster.ledger, a, slot, encoding, slice)) };
  },

  /**
   * Not an Agave method: what each validator received over QUIC (see `Cluster.arrivals`), so a
   * benchmark in another process can read a sink cluster's counts. Counts only grow; diff two reads.
   */
  getArrivalCounts: (params, { cluster }) => {
    positional(params, 0);
    return {
      sink: cluster.opts.sink,
      slot: cluster.slot,
      total: cluster.arrivals(),
      validators: cluster.validators.map((v) => ({ name: v.name, identity: v.identity, ...cluster.arrivals(v.name) })),
    };
  },

  getMinimumBalanceForRentExemption: (params, { cluster }) => {
    const p = positional(params, 2);
    const len = u64(p[0], 'data length');
    bankSlot(cluster.ledger, config(p, 1));
    return Number(cluster.ledger.minimumBalanceForRentExemption(len));
  },
};

/** One account as `getAccountInfo` and `getMultipleAccounts` answer it (Agave's `get_encoded_account`). */
function encodedAccount(
  ledger: Ledger,
  address: string,
  slot: number,
  encoding: AccountEncoding,
  slice: { offset: number; length: number } | undefined,
): Record<string, unknown> | null {
  const account = ledger.account(address, slot);
  if (account && (encoding === 'base58' || encoding === 'binary') && (slice?.length ?? account.data.length) > MAX_BASE58_BYTES) {
    throw new RpcError(INVALID_REQUEST, `Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, please use Base64 encoding.`);
  }
  return account ? encodeAccount(account, encoding, slice) : null;
}

function dataSlice(v: unknown): { offset: number; length: number } | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object') throw invalidParams('Invalid params: dataSlice must be {offset, length}');
  const o = v as Record<string, unknown>;
  return { offset: u64(o.offset, 'dataSlice.offset'), length: u64(o.length, 'dataSlice.length') };
}
