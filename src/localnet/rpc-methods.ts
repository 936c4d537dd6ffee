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
  blockhash,
  bool,
  checkMinContextSlot,
  commitment,
  commitmentLevel,
  config,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  invalidParams,
  invalidType,
  oneOf,
  positional,
  pubkey,
  RpcError,
  SEND_TRANSACTION_PREFLIGHT_FAILURE,
  signature,
  u64,
  UNSUPPORTED_TRANSACTION_VERSION,
} from './rpc-params.js';
import type { SendService } from './send-service.js';
import { checkLink, describeLink, resolveLink, type LinkSettings, type ResolvedLink } from './link.js';
import { faultLink } from './faults.js';
import { decodeTransaction, DecodeError, withBlockhash, type DecodedTransaction } from './transaction.js';
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

/** Agave's `UiTransactionEncoding` variants; `binary` is its old name for base58. */
const TX_ENCODINGS = ['binary', 'base64', 'base58', 'json', 'jsonParsed'] as const;

/** The `encoding` of a transaction parameter (`sendTransaction`, `simulateTransaction`; default base58). */
function txEncoding(c: Record<string, unknown>): 'base58' | 'base64' {
  const e = oneOf(c, 'encoding', ['binary', 'base58', 'base64'], 'base58', TX_ENCODINGS, (v) => `unsupported encoding: ${v}. Supported encodings: base58, base64`);
  return e === 'base64' ? 'base64' : 'base58';
}

/** Agave's `UiAccountEncoding` variants; the local cluster serves all but `base64+zstd`. */
const ACCOUNT_ENCODINGS = ['binary', 'base58', 'base64', 'jsonParsed', 'base64+zstd'] as const;

function accountEncoding(c: Record<string, unknown>, fallback: AccountEncoding): AccountEncoding {
  return oneOf<AccountEncoding>(c, 'encoding', ['binary', 'base58', 'base64', 'jsonParsed'], fallback, ACCOUNT_ENCODINGS, () => 'Invalid params: the local cluster does not serve base64+zstd');
}

const B58_ALPHABET = /[^1-9A-HJ-NP-Za-km-z]/;
const B64_SYMBOL = /[A-Za-z0-9+/]/;

/** Why `v` is not standard padded base64, in the Rust base64 crate's words (`DecodeError`'s Debug), or null. */
function base64Problem(v: string): string | null {
  const body = v.replace(/={1,2}$/, '');
  for (let i = 0; i < body.length; i++) if (!B64_SYMBOL.test(body[i]!)) return `InvalidByte(${i}, ${body.charCodeAt(i)})`;
  if (body.length % 4 === 1) return `InvalidLength(${body.length})`;
  if (v.length % 4 !== 0) return 'InvalidPadding';
  return null;
}

/** Decode a transaction parameter, refusing bad input with Agave's messages. */
function transactionParam(v: unknown, encoding: 'base58' | 'base64'): DecodedTransaction {
  if (typeof v !== 'string') throw invalidType(v, 'a string');
  let wire: Uint8Array;
  if (encoding === 'base64') {
    const problem = base64Problem(v);
    if (problem) throw invalidParams(`invalid base64 encoding: ${problem}`);
    wire = Buffer.from(v, 'base64');
  } else {
    const bad = B58_ALPHABET.exec(v);
    if (bad) throw invalidParams(`invalid base58 encoding: InvalidCharacter { character: '${bad[0]}', index: ${bad.index} }`);
    wire = base58Decode(v);
  }
  try {
    return decodeTransaction(wire);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    throw invalidParams(e.agaveMessage ?? `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${e.message}`);
  }
}

/**
 * The simulation as `simulateTransaction` answers it, or (`preflight`) as the `data` of a failed
 * preflight, where Agave leaves the balances, token balances and loaded addresses out (null);
 * so it does for the balances of a transaction it refused before loading it.
 */
function simulationValue(
  r: ReturnType<Ledger['simulate']>,
  replacementBlockhash: { blockhash: string; lastValidBlockHeight: number } | null,
  preflight = false,
): Record<string, unknown> {
  // A transaction refused before its accounts are read (bad signature, malformed) has no balances either.
  const balances = !preflight && r.err?.json !== 'SignatureFailure' && r.err?.json !== 'SanitizeFailure';
  return {
    err: r.err?.json ?? null,
    logs: r.logs,
    accounts: null,
    unitsConsumed: r.unitsConsumed,
    loadedAccountsDataSize: r.loadedAccountsDataSize,
    returnData: r.returnData,
    innerInstructions: null,
    replacementBlockhash,
    fee: r.fee,
    preBalances: balances ? r.preBalances : null,
    postBalances: balances ? r.postBalances : null,
    preTokenBalances: balances ? [] : null,
    postTokenBalances: balances ? [] : null,
    loadedAddresses: preflight ? null : r.loaded,
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

  /** Blocks since genesis: the slot less the slots skipped so far (equal to it until a leader skips). */
  getBlockHeight: slotMethod((slot, { cluster }) => cluster.ledger.blockHeight(slot)),

  /**
   * `[start_slot, end_slot?, config?]` (or `[start_slot, config]`): the slots from `start_slot`
   * to `end_slot` (at most the commitment's slot; `finalized` by default) that have a block, as
   * Agave answers: a slot its leader skipped is not listed. At most 500,000 slots apart, as
   * Agave's `MAX_GET_CONFIRMED_BLOCKS_RANGE`; `processed` is refused as Agave refuses it. Kept
   * blocks only: the ledger's history (`historySlots`) bounds how far back it can tell.
   */
  getBlocks: (params, { cluster }) => {
    const p = positional(params, 3, 1);
    const start = u64(p[0]);
    const endGiven = p[1] !== undefined && p[1] !== null && (typeof p[1] !== 'object' || Array.isArray(p[1]));
    const end = endGiven ? u64(p[1]) : null;
    const c = config(p, endGiven ? 2 : 1);
    const level = commitment(c);
    if (level === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
    const { ledger } = cluster;
    const top = Math.min(end ?? Infinity, ledger.commitmentSlot(level));
    if (top - start > 500_000) throw invalidParams('Slot range too large; max 500000');
    const out: number[] = [];
    for (let slot = start; slot <= top; slot++) if (ledger.hasBlock(slot)) out.push(slot);
    return out;
  },

  getEpochInfo: slotMethod((slot, { cluster }) => {
    const { schedule, ledger } = cluster;
    const epoch = schedule.epochOf(slot);
    let newer = 0;
    for (let s = slot + 1; s <= ledger.slot; s++) newer += ledger.block(s)?.transactions.length ?? 0;
    return {
      absoluteSlot: slot,
      blockHeight: ledger.blockHeight(slot),
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
    const slot = first === undefined || first === null || firstIsConfig ? bank : u64(first);
    const epoch = cluster.schedule.epochOf(slot);
    if (epoch > cluster.schedule.knownEpochAt(bank)) return null;
    const schedule = cluster.schedule.scheduleOf(epoch);
    if (c.identity === undefined || c.identity === null) return schedule;
    const identity = pubkey(c.identity);
    return schedule[identity] ? { [identity]: schedule[identity] } : {};
  },

  getSlotLeaders: (params, { cluster }) => {
    const p = positional(params, 2, 2);
    const start = u64(p[0]);
    const limit = u64(p[1]);
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
    const p = positional(params, 2, 1);
    const hash = blockhash(p[0]);
    const slot = bankSlot(cluster.ledger, config(p, 1));
    return { context: context(slot), value: cluster.ledger.isBlockhashValid(hash, slot) };
  },

  getSignatureStatuses: (params, { cluster }) => {
    const p = positional(params, 2, 1);
    if (!Array.isArray(p[0])) throw invalidType(p[0], 'a sequence');
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
    const p = positional(params, 2, 1);
    const sig = signature(p[0]);
    // The second parameter is an encoding name (old form) or a configuration.
    const c = typeof p[1] === 'string' ? { encoding: p[1] } : config(p, 1);
    const level = commitment(c);
    if (level === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
    const encoding = oneOf<TransactionEncoding>(c, 'encoding', ['json', 'base64', 'base58'], 'json');
    const maxVersion = c.maxSupportedTransactionVersion === undefined || c.maxSupportedTransactionVersion === null ? null : u64(c.maxSupportedTransactionVersion, 'u8');
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
    const block = ledger.block(r.slot);
    return {
      slot: r.slot,
      transaction: encodeTransaction(r, encoding),
      meta: encodeMeta(r),
      blockTime: block?.blockTime ?? null,
      transactionIndex: block?.transactions.indexOf(r) ?? 0,
      ...(maxVersion !== null && { version }),
    };
  },

  simulateTransaction: (params, { cluster }) => {
    const p = positional(params, 2, 1);
    const c = config(p, 1);
    let tx = transactionParam(p[0], txEncoding(c));
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
    // A bad signature under sigVerify is a simulation result (err SignatureFailure), as in Agave 4.2.
    return { context: context(slot), value: simulationValue(ledger.simulate(tx, sigVerify, slot), replacement) };
  },

  sendTransaction: (params, { cluster, sender }) => {
    const p = positional(params, 2, 1);
    const c = config(p, 1);
    const tx = transactionParam(p[0], txEncoding(c));
    const skipPreflight = bool(c, 'skipPreflight', false);
    const maxRetries = c.maxRetries === undefined || c.maxRetries === null ? undefined : u64(c.maxRetries, 'usize');
    const { ledger } = cluster;
    const slot = ledger.commitmentSlot(skipPreflight ? 'processed' : commitmentLevel(c, 'preflightCommitment', 'finalized'));
    checkMinContextSlot(c, slot);
    if (!skipPreflight) {
      // A bad signature is a failed simulation too (Agave 4.2: -32002, "Transaction did not pass
      // signature verification", with the simulation as data), not -32003.
      const result = ledger.simulate(tx, true, slot);
      if (result.err) {
        throw new RpcError(SEND_TRANSACTION_PREFLIGHT_FAILURE, `Transaction simulation failed: ${result.err.message}`, simulationValue(result, null, true));
      }
    }
    sender.submit(tx, maxRetries);
    return tx.signature;
  },

  requestAirdrop: (params, { cluster }) => {
    const p = positional(params, 3, 2);
    const to = pubkey(p[0]);
    const lamports = u64(p[1]);
    checkMinContextSlot(config(p, 2), cluster.slot);
    try {
      return cluster.airdrop(to, lamports);
    } catch (e) {
      throw new RpcError(INTERNAL_ERROR, `airdrop request failed: ${(e as Error).message}`);
    }
  },

  getBalance: (params, { cluster }) => {
    const p = positional(params, 2, 1);
    const address = pubkey(p[0]);
    const slot = bankSlot(cluster.ledger, config(p, 1));
    return { context: context(slot), value: Number(cluster.ledger.account(address, slot)?.lamports ?? 0n) };
  },

  getAccountInfo: (params, { cluster }) => {
    const p = positional(params, 2, 1);
    const address = pubkey(p[0]);
    const c = config(p, 1);
    const encoding = accountEncoding(c, 'binary');
    const slice = dataSlice(c.dataSlice);
    const slot = bankSlot(cluster.ledger, c);
    return { context: context(slot), value: encodedAccount(cluster.ledger, address, slot, encoding, slice) };
  },

  /** As Agave: at most 100 addresses, `base64` by default, one bank for all, `null` for a missing account. */
  getMultipleAccounts: (params, { cluster }) => {
    const p = positional(params, 2, 1);
    if (!Array.isArray(p[0])) throw invalidType(p[0], 'a sequence');
    if (p[0].length > MAX_MULTIPLE_ACCOUNTS) throw invalidParams(`Too many inputs provided; max ${MAX_MULTIPLE_ACCOUNTS}`);
    const addresses = p[0].map(pubkey);
    const c = config(p, 1);
    const encoding = accountEncoding(c, 'base64');
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

  /**
   * Not an Agave method: change a link while the cluster runs (`Cluster.setLink`), so a test or a
   * benchmark in another process (or `landfall localnet-link`) can make a loss burst. Params:
   * `[validator name or null (every validator), settings (object or "rtt=80ms,loss=10%"), {forMs}?]`.
   * Answers with the links now in force.
   */
  setLink: (params, { cluster }) => {
    const p = positional(params, 3, 2);
    const name = p[0];
    if (name !== null && typeof name !== 'string') throw invalidParams('setLink: the first parameter is a validator name (v1, v2, …) or null for every validator');
    const c = config(p, 2);
    const forMs = c.forMs;
    if (forMs !== undefined && typeof forMs !== 'number') throw invalidParams('setLink: forMs must be a number of ms');
    if (cluster.opts.sink) throw invalidParams('setLink: a sink cluster has no links (its QUIC servers are reached directly)');
    try {
      if (name !== null) cluster.validator(name);
      checkLink('setLink', p[1]);
    } catch (e) {
      throw invalidParams((e as Error).message);
    }
    // Checked above: what is left to fail is a later setting racing this one, which then stands.
    cluster.setLink(name ?? undefined, p[1] as LinkSettings | string, forMs).catch((e: Error) => process.stderr.write(`localnet: setLink failed: ${e.message}\n`));
    return { validators: cluster.validators.map((v) => ({ name: v.name, link: describeLink(resolveLinkOf(cluster, v.name, name, p[1] as LinkSettings | string)) })) };
  },

  getMinimumBalanceForRentExemption: (params, { cluster }) => {
    const p = positional(params, 2, 1);
    const len = u64(p[0], 'usize');
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
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidType(v, 'struct UiDataSliceConfig');
  const o = v as Record<string, unknown>;
  return { offset: u64(o.offset, 'usize'), length: u64(o.length, 'usize') };
}

/** The link validator `v` will have once a `setLink(name, settings)` just made has applied. */
function resolveLinkOf(cluster: Cluster, v: string, name: string | null, settings: LinkSettings | string): ResolvedLink {
  const validator = cluster.validator(v);
  const set = checkLink('setLink', settings);
  if (name === null) return resolveLink({ ...set, ...faultLink(validator.faults) });
  return v === name ? resolveLink({ ...cluster.link, ...faultLink({ ...validator.faults, link: set }) }) : validator.link;
}
