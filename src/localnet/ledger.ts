/**
 * The cluster's bank: one LiteSVM instance executing transactions as leaders include them, plus
 * everything a real validator keeps around it that LiteSVM does not — blocks per slot, a
 * blockhash per slot with its 150-slot validity window, the status of every landed signature,
 * commitment levels, and enough account history to answer reads at `confirmed` and `finalized`.
 *
 * Inclusion follows the runtime: a transaction that fails during execution but can pay its fee
 * lands with its error and the fee charged; one refused before execution (bad signature, unknown
 * or expired blockhash, fee payer that cannot pay, unloadable accounts) is not included at all.
 * LiteSVM reports both as "failed"; the difference is whether it charged the fee, which is
 * observed directly: the sum of the transaction's balances only drops when the fee was taken.
 *
 * LiteSVM is driven through its napi binding (`litesvm/dist/internal`, the class the package's
 * `LiteSVM` wraps) rather than the wrapper: the wrapper converts every address and transaction
 * through @solana/kit's JavaScript codecs (about 23 µs per address), which made a transfer cost
 * ~390 µs here; the binding takes the wire bytes and key bytes the cluster already holds
 * (~78 µs). Its shape is generated per release, hence `litesvm` pinned to `~1.5.0`.
 */
import {
  Account,
  Clock,
  EpochSchedule,
  FailedTransactionMetadata,
  LiteSvm,
  type SimulatedTransactionInfo,
  type TransactionMetadata,
} from 'litesvm/dist/internal.js';
import { base58Decode, base58Encode } from '../native.js';
import { FINALITY_DEPTH, MAX_PROCESSING_AGE, RENT_EXEMPT_RENT_EPOCH, STATUS_CACHE_SLOTS } from './constants.js';
import { airdropTransaction } from './faucet.js';
import type { Keypair } from './keys.js';
import type { LeaderSchedule } from './schedule.js';
import { decodeTransaction, isStaticWritable, loadKeys, type DecodedTransaction, type Key, type LoadedKeys } from './transaction.js';
import { fromLiteSvm, namedError, type TxError } from './tx-error.js';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface AccountState {
  lamports: bigint;
  data: Uint8Array;
  owner: string;
  executable: boolean;
  rentEpoch: bigint;
}

/** A compiled inner instruction as `getTransaction` shows it (data in base58). */
export interface UiInnerInstructions {
  index: number;
  instructions: { programIdIndex: number; accounts: number[]; data: string; stackHeight: number }[];
}

/** A transaction included in a block. */
export interface TxRecord {
  signature: string;
  slot: number;
  decoded: DecodedTransaction;
  err: TxError | null;
  fee: number;
  /** Static keys, then keys loaded from lookup tables (writable, then read-only), base58. */
  accountKeys: string[];
  loaded: { writable: string[]; readonly: string[] };
  preBalances: number[];
  postBalances: number[];
  logs: string[];
  innerInstructions: UiInnerInstructions[];
  computeUnitsConsumed: number;
  returnData: { programId: string; data: [string, 'base64'] } | null;
}

export interface Block {
  slot: number;
  /** Blocks before this one since genesis (genesis, slot 0, is height 0): the slot less the skipped slots. */
  height: number;
  /** The slot of the previous block (skipped slots between have none). */
  parent: number;
  blockhash: string;
  /** Unix seconds at the slot's start. */
  blockTime: number;
  transactions: TxRecord[];
}

export type ExecuteResult =
  | { kind: 'landed'; record: TxRecord }
  | { kind: 'duplicate'; record: TxRecord }
  | { kind: 'rejected'; err: TxError };

export interface SimulationResult {
  err: TxError | null;
  logs: string[];
  unitsConsumed: number;
  returnData: TxRecord['returnData'];
  /** Balances of every account key (static, then loaded) before and after; unchanged when not executed. */
  preBalances: number[];
  postBalances: number[];
  loaded: TxRecord['loaded'];
  /** The fee the transaction would pay; null when it would not be executed (Agave's `fee: None`). */
  fee: number | null;
  /** Data bytes of the accounts it loads (0 when not executed); see `loadedDataSize`. */
  loadedAccountsDataSize: number;
}

export interface LedgerOptions {
  schedule: LeaderSchedule;
  faucet: Keypair;
  faucetLamports: bigint;
  /** Blocks (and their transactions) kept for `getTransaction` / history lookups. */
  historySlots: number;
}

/** Entries the SlotHashes sysvar holds (`slot_hashes::MAX_ENTRIES`). */
const SLOT_HASHES_MAX_ENTRIES = 512;

/** One account's state before the first transaction that changed it in `slot`. */
interface Change {
  slot: number;
  before: AccountState | null;
}

export class Ledger {
  private readonly svm: LiteSvm;
  private current = 0;
  private readonly blocks = new Map<number, Block>();
  private readonly blockhashSlot = new Map<string, number>();
  private readonly bySignature = new Map<string, TxRecord>();
  /** Per account, its state before each slot that changed it (newest last), for reads in the past. */
  private readonly changes = new Map<string, Change[]>();
  private readonly changedIn = new Map<number, string[]>();
  /** The SlotHashes sysvar's entries, newest first (address lookup tables are derived from them). */
  private readonly slotHashes: { slot: bigint; hash: string }[] = [];
  private airdrops = 0;
  /** The newest block's slot (the current slot unless it is being skipped). */
  private lastBlock = 0;
  /** Slots that have a block, oldest first, within the history kept (height = genesis's + index offset). */
  private readonly produced: number[] = [];
  /** Blocks since genesis (the newest block's height). */
  private height = 0;
  /** Transactions included since genesis (`getEpochInfo.transactionCount`). */
  transactionCount = 0;

  constructor(private readonly opts: LedgerOptions) {
    const slotsPerEpoch = BigInt(opts.schedule.slotsPerEpoch);
    // The standard runtime (builtins, sysvars, SPL programs, precompiles); signatures verified.
    // Blockhash age is this ledger's (see `execute`); duplicates too, so LiteSVM keeps no history.
    this.svm = new LiteSvm();
    this.svm.setSigverify(true);
    this.svm.setBlockhashCheck(false);
    this.svm.setTransactionHistory(0n);
    this.svm.setEpochSchedule(new EpochSchedule(slotsPerEpoch, slotsPerEpoch, false, 0n, 0n));
    const systemProgram = new Uint8Array(32);
    this.svm.setAccount(opts.faucet.publicKey, new Account(opts.faucetLamports, new Uint8Array(0), systemProgram, false, RENT_EXEMPT_RENT_EPOCH));
    this.beginSlot(0, Date.now());
  }

  get slot(): number {
    return this.current;
  }

  /**
   * Open slot `slot` (its start observed at `unixMs`): a new blockhash, the clock sysvar moved
   * to it, and whatever falls out of the history windows pruned. With `produce` false the slot
   * is skipped, as a leader that produces nothing leaves it on mainnet: no block, no blockhash,
   * no bank (reads and `processed` stay at the last block), and the block height does not move,
   * so from then on it trails the slot.
   */
  beginSlot(slot: number, unixMs: number, produce = true): void {
    this.current = slot;
    if (!produce) {
      this.prune(slot);
      return;
    }
    if (slot > 0) this.svm.expireBlockhash();
    const epoch = BigInt(this.opts.schedule.epochOf(slot));
    const unix = BigInt(Math.floor(unixMs / 1000));
    this.svm.setClock(new Clock(BigInt(slot), unix, epoch, epoch + 1n, unix));
    const blockhash = this.svm.latestBlockhash();
    const parent = this.lastBlock;
    const height = slot === 0 ? 0 : ++this.height;
    this.blocks.set(slot, { slot, height, parent, blockhash, blockTime: Number(unix), transactions: [] });
    this.blockhashSlot.set(blockhash, slot);
    this.produced.push(slot);
    this.lastBlock = slot;
    // The parent's hash joins SlotHashes, as a bank records its parent's when it starts.
    if (slot > 0) {
      this.slotHashes.unshift({ slot: BigInt(parent), hash: this.blocks.get(parent)!.blockhash });
      if (this.slotHashes.length > SLOT_HASHES_MAX_ENTRIES) this.slotHashes.pop();
      this.svm.setSlotHashes(this.slotHashes);
    }
    this.prune(slot);
  }

  /** Does slot `slot` have a block (so far: the current slot has one from its start unless skipped)? */
  hasBlock(slot: number): boolean {
    return this.blocks.has(slot);
  }

  /** The newest slot at or before `slot` that has a block (genesis, 0, always has one). */
  private blockAtOrBefore(slot: number): number {
    for (let i = this.produced.length - 1; i >= 0; i--) if (this.produced[i]! <= slot) return this.produced[i]!;
    return this.produced[0] ?? 0;
  }

  private prune(slot: number): void {
    // A blockhash lives MAX_PROCESSING_AGE blocks (not slots): the one 151 blocks back dies.
    const expiredSlot = this.produced[this.produced.length - 1 - MAX_PROCESSING_AGE - 1];
    const expired = expiredSlot === undefined ? undefined : this.blocks.get(expiredSlot);
    if (expired) this.blockhashSlot.delete(expired.blockhash);
    while (this.produced.length > 0 && this.produced[0]! <= slot - this.opts.historySlots) {
      const old = this.blocks.get(this.produced.shift()!);
      if (!old) continue;
      for (const r of old.transactions) this.bySignature.delete(r.signature);
      this.blocks.delete(old.slot);
    }
    // Reads never go below `finalized`; changes at or before it are no longer needed.
    const settled = this.commitmentSlot('finalized');
    for (const address of this.changedIn.get(settled) ?? []) {
      const list = this.changes.get(address);
      while (list && list.length > 0 && list[0]!.slot <= settled) list.shift();
      if (list && list.length === 0) this.changes.delete(address);
    }
    this.changedIn.delete(settled);
  }

  /**
   * The slot whose bank answers at `commitment`: the newest block at or before the current slot
   * (processed), before the current slot (confirmed: a slot is confirmed when it ends), or
   * `FINALITY_DEPTH` slots before that (finalized). Skipped slots have no bank and are never these.
   */
  commitmentSlot(commitment: Commitment): number {
    switch (commitment) {
      case 'processed':
        return this.lastBlock;
      case 'confirmed':
        return this.blockAtOrBefore(Math.max(0, this.current - 1));
      case 'finalized':
        return this.blockAtOrBefore(Math.max(0, this.current - 1 - FINALITY_DEPTH));
    }
  }

  /** The block height of the bank at `slot` (a slot with a block, as `commitmentSlot` gives). */
  blockHeight(slot: number): number {
    return this.blocks.get(this.blockAtOrBefore(slot))?.height ?? 0;
  }

  /** The commitment a block at `slot` has reached. */
  confirmationStatus(slot: number): Commitment {
    if (slot <= this.commitmentSlot('finalized')) return 'finalized';
    if (slot <= this.commitmentSlot('confirmed')) return 'confirmed';
    return 'processed';
  }

  block(slot: number): Block | undefined {
    return this.blocks.get(slot);
  }

  /** A landed transaction, if still in history. */
  record(signature: string): TxRecord | undefined {
    return this.bySignature.get(signature);
  }

  /**
   * A landed transaction as `getSignatureStatuses` finds it: from the status cache (the last
   * `STATUS_CACHE_SLOTS` slots) or, with `searchHistory`, from all kept blocks.
   */
  statusRecord(signature: string, searchHistory: boolean): TxRecord | undefined {
    const r = this.bySignature.get(signature);
    if (!r) return undefined;
    return searchHistory || r.slot > this.current - STATUS_CACHE_SLOTS ? r : undefined;
  }

  /** The slot that produced `blockhash`, while it is still within the validity window. */
  slotOfBlockhash(blockhash: string): number | undefined {
    return this.blockhashSlot.get(blockhash);
  }

  /**
   * Is `blockhash` usable by a transaction landing at `atSlot` (age ≤ 150 blocks, as Agave's
   * blockhash queue counts: with skipped slots a blockhash outlives 150 slots)?
   */
  isBlockhashValid(blockhash: string, atSlot: number): boolean {
    const slot = this.blockhashSlot.get(blockhash);
    if (slot === undefined || slot > atSlot) return false;
    return this.blockHeight(atSlot) - this.blocks.get(slot)!.height <= MAX_PROCESSING_AGE;
  }

  /** `getLatestBlockhash` at the bank of `slot`: its blockhash and the last block height it lands at. */
  latestBlockhash(slot: number): { blockhash: string; lastValidBlockHeight: number } {
    const block = this.blocks.get(this.blockAtOrBefore(slot))!;
    return { blockhash: block.blockhash, lastValidBlockHeight: block.height + MAX_PROCESSING_AGE };
  }

  minimumBalanceForRentExemption(dataLen: number): bigint {
    return this.svm.minimumBalanceForRentExemption(BigInt(dataLen));
  }

  /** An account as of the bank at `atSlot` (≥ the finalized slot). */
  account(address: string, atSlot: number = this.current): AccountState | null {
    const list = this.changes.get(address);
    if (list) {
      for (const change of list) if (change.slot > atSlot) return change.before;
    }
    return this.readAccount(base58Decode(address));
  }

  private readAccount(key: Uint8Array): AccountState | null {
    const a = this.svm.getAccount(key);
    if (!a) return null;
    return { lamports: a.lamports(), data: a.data(), owner: base58Encode(a.owner()), executable: a.executable(), rentEpoch: a.rentEpoch() };
  }

  private balanceNow(key: Key): bigint {
    return this.svm.getBalance(key.bytes) ?? 0n;
  }

  /**
   * Execute `decoded` now and record it in the block of `slot` (the current one, or an earlier
   * one whose leader received it in time). A blockhash inside the 150-slot window is accepted
   * here; any other goes through LiteSVM's own check, which accepts exactly the transactions
   * whose durable nonce account holds that blockhash (and refuses the rest as BlockhashNotFound).
   */
  execute(decoded: DecodedTransaction, slot: number = this.current): ExecuteResult {
    const seen = this.bySignature.get(decoded.signature);
    if (seen) return { kind: 'duplicate', record: seen };
    const loaded = loadKeys(decoded, (k) => this.svm.getAccount(k.bytes)?.data() ?? null) ?? { writable: [], readonly: [] };
    const keys = [...decoded.staticKeys, ...loaded.writable, ...loaded.readonly];
    const writable = [...decoded.staticKeys.filter((_, i) => isStaticWritable(decoded, i)), ...loaded.writable];
    // Only the first change of an account in a slot needs its earlier state kept.
    const before = writable.map((k) => (this.needsSnapshot(k.address, slot) ? this.readAccount(k.bytes) : null));
    const pre = keys.map((k) => this.balanceNow(k));

    const inWindow = this.isBlockhashValid(decoded.recentBlockhash, this.current);
    this.svm.setBlockhashCheck(!inWindow);
    let result: TransactionMetadata | FailedTransactionMetadata;
    try {
      result = decoded.version === 'legacy' ? this.svm.sendLegacyTransaction(decoded.wire) : this.svm.sendVersionedTransaction(decoded.wire);
    } finally {
      this.svm.setBlockhashCheck(false);
    }
    const failed = result instanceof FailedTransactionMetadata ? result : null;
    const post = keys.map((k) => this.balanceNow(k));
    const fee = pre.reduce((s, b) => s + b, 0n) - post.reduce((s, b) => s + b, 0n);
    if (failed && fee <= 0n) return { kind: 'rejected', err: fromLiteSvm(failed.err()) };

    const meta = failed ? failed.meta() : (result as TransactionMetadata);
    const record: TxRecord = {
      signature: decoded.signature,
      slot,
      decoded,
      err: failed ? fromLiteSvm(failed.err()) : null,
      fee: Number(fee),
      accountKeys: keys.map((k) => k.address),
      loaded: { writable: loaded.writable.map((k) => k.address), readonly: loaded.readonly.map((k) => k.address) },
      preBalances: pre.map(Number),
      postBalances: post.map(Number),
      ...outputsOf(meta),
    };
    this.remember(writable.map((k) => k.address), before, slot);
    this.blocks.get(slot)!.transactions.push(record);
    this.bySignature.set(record.signature, record);
    this.transactionCount++;
    return { kind: 'landed', record };
  }

  /** Is `address` without a recorded change at or after `slot` (so its state now is its state before `slot`)? */
  private needsSnapshot(address: string, slot: number): boolean {
    const list = this.changes.get(address);
    return !list || list[list.length - 1]!.slot < slot;
  }

  /**
   * Keep each written account's state from before its first change in `slot`. An account
   * changed since in a later slot keeps that later slot (entries stay in slot order): state is
   * one line of execution, so a late transaction's effect shows from the later slot on.
   */
  private remember(addresses: string[], before: (AccountState | null)[], slot: number): void {
    addresses.forEach((address, i) => {
      if (!this.needsSnapshot(address, slot)) return;
      let list = this.changes.get(address);
      if (!list) this.changes.set(address, (list = []));
      list.push({ slot, before: before[i]! });
      let touched = this.changedIn.get(slot);
      if (!touched) this.changedIn.set(slot, (touched = []));
      touched.push(address);
    });
  }

  /** A faucet transfer of `lamports` to `to`, signed with the newest block's blockhash (not executed). */
  airdropTransaction(to: string, lamports: bigint): DecodedTransaction {
    const wire = airdropTransaction(this.opts.faucet, base58Decode(to), lamports, base58Decode(this.blocks.get(this.lastBlock)!.blockhash), this.airdrops++);
    return decodeTransaction(wire);
  }

  /** A faucet transfer of `lamports` to `to`, executed in the current slot (which must have a block). */
  airdrop(to: string, lamports: bigint): ExecuteResult {
    return this.execute(this.airdropTransaction(to, lamports));
  }

  /**
   * Run `decoded` against the current state without committing anything. `sigVerify: false`
   * skips signature checks (RPC simulation's default). The blockhash must be valid at the bank
   * of `atSlot` (the request's commitment), the rule a real preflight applies, or be a durable
   * nonce's; otherwise the result is BlockhashNotFound.
   */
  simulate(decoded: DecodedTransaction, sigVerify: boolean, atSlot: number): SimulationResult {
    const loaded = loadKeys(decoded, (k) => this.svm.getAccount(k.bytes)?.data() ?? null) ?? { writable: [], readonly: [] };
    const keys = [...decoded.staticKeys, ...loaded.writable, ...loaded.readonly];
    const pre = keys.map((k) => Number(this.balanceNow(k)));
    const base = {
      preBalances: pre,
      postBalances: pre,
      loaded: { writable: loaded.writable.map((k) => k.address), readonly: loaded.readonly.map((k) => k.address) },
      fee: null,
      loadedAccountsDataSize: 0,
    };
    const refused = (name: string): SimulationResult => ({ err: namedError(name), logs: [], unitsConsumed: 0, returnData: null, ...base });
    const known = this.slotOfBlockhash(decoded.recentBlockhash) !== undefined;
    // A blockhash newer than the answering bank is as unknown to it as a stale one.
    if (known && !this.isBlockhashValid(decoded.recentBlockhash, atSlot)) return refused('BlockhashNotFound');
    if (!known) this.svm.setBlockhashCheck(true);
    if (!sigVerify) this.svm.setSigverify(false);
    try {
      const r = decoded.version === 'legacy' ? this.svm.simulateLegacyTransaction(decoded.wire) : this.svm.simulateVersionedTransaction(decoded.wire);
      const failed = r instanceof FailedTransactionMetadata ? r : null;
      const o = outputsOf(failed ? failed.meta() : (r as SimulatedTransactionInfo).meta());
      const err = failed ? fromLiteSvm(failed.err()) : null;
      // A fieldless transaction error (AccountNotFound, BlockhashNotFound, InsufficientFundsForFee…)
      // stops a transaction before it runs; an instruction error (or a rent check) comes after.
      const executed = err === null || typeof err.json !== 'string';
      const result: SimulationResult = { err, logs: o.logs, unitsConsumed: o.computeUnitsConsumed, returnData: o.returnData, ...base };
      if (!executed) return result;
      const after = new Map<string, number>();
      if (!failed) for (const [address, account] of (r as SimulatedTransactionInfo).postAccounts().map((a) => [a.address, a.account()] as const)) after.set(base58Encode(address), Number(account.lamports()));
      // A failed transaction keeps only its fee payment: the payer's balance less the fee.
      const fee = feeOf(decoded);
      result.postBalances = failed ? pre.map((b, i) => (i === 0 ? b - fee : b)) : keys.map((k, i) => after.get(k.address) ?? pre[i]!);
      result.fee = fee;
      result.loadedAccountsDataSize = keys.reduce((sum, k) => sum + (this.svm.getAccount(k.bytes)?.data().length ?? 0), 0);
      return result;
    } finally {
      this.svm.setBlockhashCheck(false);
      this.svm.setSigverify(true);
    }
  }
}

const LAMPORTS_PER_SIGNATURE = 5_000;
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
/** Compute units a transaction without SetComputeUnitLimit may use, per instruction (Agave's default). */
const DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT = 200_000;

/**
 * The fee Agave charges: 5,000 lamports per signature plus the priority fee, ⌈price × limit /
 * 10⁶⌉ from the ComputeBudget instructions (the default limit counted as 200,000 units per
 * instruction: the local cluster does not tell builtins apart, which only matters with a price
 * and no explicit limit).
 */
export function feeOf(decoded: DecodedTransaction): number {
  let limit: number | null = null;
  let price = 0n;
  for (const ix of decoded.instructions) {
    if (decoded.staticKeys[ix.programIdIndex]?.address !== COMPUTE_BUDGET_PROGRAM) continue;
    const view = Buffer.from(ix.data);
    if (ix.data[0] === 2 && ix.data.length >= 5) limit = view.readUInt32LE(1);
    if (ix.data[0] === 3 && ix.data.length >= 9) price = view.readBigUInt64LE(1);
  }
  limit ??= DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT * decoded.instructions.length;
  const priority = (price * BigInt(limit) + 999_999n) / 1_000_000n;
  return LAMPORTS_PER_SIGNATURE * decoded.header.numRequiredSignatures + Number(priority);
}

/** What a transaction left behind, in the shapes the RPC returns. */
function outputsOf(meta: TransactionMetadata): Pick<TxRecord, 'logs' | 'innerInstructions' | 'computeUnitsConsumed' | 'returnData'> {
  const innerInstructions: UiInnerInstructions[] = [];
  meta.innerInstructions().forEach((list, index) => {
    if (list.length === 0) return;
    innerInstructions.push({
      index,
      instructions: list.map((inner) => {
        const ix = inner.instruction();
        return {
          programIdIndex: ix.programIdIndex(),
          accounts: Array.from(ix.accounts()),
          data: base58Encode(ix.data()),
          stackHeight: inner.stackHeight(),
        };
      }),
    });
  });
  const rd = meta.returnData();
  const data = rd.data();
  return {
    logs: meta.logs(),
    innerInstructions,
    computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
    returnData: data.length > 0 ? { programId: base58Encode(rd.programId()), data: [Buffer.from(data).toString('base64'), 'base64'] } : null,
  };
}

