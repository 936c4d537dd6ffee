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
 */
import {
  Clock,
  EpochSchedule,
  LiteSVM,
  type FailedTransactionMetadata,
  type SimulatedTransactionInfo,
  type TransactionMetadata,
} from 'litesvm';
import { lamports as toLamports, type Address } from '@solana/kit';
import { base58Encode } from '../native.js';
import { FINALITY_DEPTH, MAX_PROCESSING_AGE, STATUS_CACHE_SLOTS } from './constants.js';
import { type Keypair } from './keys.js';
import { type LeaderSchedule } from './schedule.js';
import { airdropTransaction } from './faucet.js';
import {
  decodeTransaction,
  isStaticWritable,
  loadAddresses,
  type DecodedTransaction,
  type LoadedAddresses,
} from './transaction.js';
import { fromLiteSvm, namedError, type TxError } from './tx-error.js';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface AccountState {
  lamports: bigint;
  data: Uint8Array;
  owner: string;
  executable: boolean;
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
  /** Static keys, then keys loaded from lookup tables (writable, then read-only). */
  accountKeys: string[];
  loaded: LoadedAddresses;
  preBalances: number[];
  postBalances: number[];
  logs: string[];
  innerInstructions: UiInnerInstructions[];
  computeUnitsConsumed: number;
  returnData: { programId: string; data: [string, 'base64'] } | null;
}

export interface Block {
  slot: number;
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
}

export interface LedgerOptions {
  schedule: LeaderSchedule;
  faucet: Keypair;
  faucetLamports: bigint;
  /** Blocks (and their transactions) kept for `getTransaction` / history lookups. */
  historySlots: number;
}

/** One account's state before the first transaction that changed it in `slot`. */
interface Change {
  slot: number;
  before: AccountState | null;
}

export class Ledger {
  private readonly svm: LiteSVM;
  private current = 0;
  private readonly blocks = new Map<number, Block>();
  private readonly blockhashSlot = new Map<string, number>();
  private readonly bySignature = new Map<string, TxRecord>();
  /** Per account, its state before each slot that changed it (newest last), for reads in the past. */
  private readonly changes = new Map<string, Change[]>();
  private readonly changedIn = new Map<number, string[]>();
  private airdrops = 0;
  /** Transactions included since genesis (`getEpochInfo.transactionCount`). */
  transactionCount = 0;

  constructor(private readonly opts: LedgerOptions) {
    const slotsPerEpoch = BigInt(opts.schedule.slotsPerEpoch);
    this.svm = new LiteSVM().withSigverify(true).withBlockhashCheck(false).withTransactionHistory(0n);
    this.svm.setEpochSchedule(new EpochSchedule(slotsPerEpoch, slotsPerEpoch, false, 0n, 0n));
    this.svm.setAccount({
      address: opts.faucet.address as Address,
      lamports: toLamports(opts.faucetLamports),
      programAddress: '11111111111111111111111111111111' as Address,
      executable: false,
      data: new Uint8Array(0),
      space: 0n,
    });
    this.beginSlot(0, Date.now());
  }

  get slot(): number {
    return this.current;
  }

  /**
   * Open slot `slot` (its start observed at `unixMs`): a new blockhash, the clock sysvar moved
   * to it, and whatever falls out of the history windows pruned.
   */
  beginSlot(slot: number, unixMs: number): void {
    if (slot > 0) this.svm.expireBlockhash();
    const epoch = BigInt(this.opts.schedule.epochOf(slot));
    const unix = BigInt(Math.floor(unixMs / 1000));
    this.svm.setClock(new Clock(BigInt(slot), unix, epoch, epoch + 1n, unix));
    this.current = slot;
    const blockhash = this.svm.latestBlockhash();
    this.blocks.set(slot, { slot, parent: Math.max(0, slot - 1), blockhash, blockTime: Number(unix), transactions: [] });
    this.blockhashSlot.set(blockhash, slot);
    this.prune(slot);
  }

  private prune(slot: number): void {
    const expired = this.blocks.get(slot - MAX_PROCESSING_AGE - 1);
    if (expired) this.blockhashSlot.delete(expired.blockhash);
    const old = this.blocks.get(slot - this.opts.historySlots);
    if (old) {
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

  /** The slot whose bank answers at `commitment`. */
  commitmentSlot(commitment: Commitment): number {
    switch (commitment) {
      case 'processed':
        return this.current;
      case 'confirmed':
        return Math.max(0, this.current - 1);
      case 'finalized':
        return Math.max(0, this.current - 1 - FINALITY_DEPTH);
    }
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

  /** Is `blockhash` usable by a transaction landing at `atSlot` (age ≤ 150 slots)? */
  isBlockhashValid(blockhash: string, atSlot: number): boolean {
    const slot = this.blockhashSlot.get(blockhash);
    return slot !== undefined && slot <= atSlot && atSlot - slot <= MAX_PROCESSING_AGE;
  }

  /** `getLatestBlockhash` at the bank of `slot`: its blockhash and the last height it lands at. */
  latestBlockhash(slot: number): { blockhash: string; lastValidBlockHeight: number } {
    return { blockhash: this.blocks.get(slot)!.blockhash, lastValidBlockHeight: slot + MAX_PROCESSING_AGE };
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
    return this.readAccount(address);
  }

  private readAccount(address: string): AccountState | null {
    const a = this.svm.getAccount(address as Address);
    if (!a.exists) return null;
    return { lamports: a.lamports, data: a.data, owner: a.programAddress, executable: a.executable };
  }

  private balanceNow(address: string): bigint {
    return this.svm.getBalance(address as Address) ?? 0n;
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
    if (!isFullySigned(decoded)) return { kind: 'rejected', err: namedError('SignatureFailure') };
    const { message } = decoded;
    const loaded = loadAddresses(message, (a) => this.readAccount(a)?.data ?? null) ?? { writable: [], readonly: [] };
    const accountKeys = [...message.staticAccounts, ...loaded.writable, ...loaded.readonly];
    const writable = [...message.staticAccounts.filter((_, i) => isStaticWritable(message, i)), ...loaded.writable];
    const before = writable.map((a) => this.readAccount(a));
    const pre = accountKeys.map((a) => this.balanceNow(a));

    const inWindow = this.isBlockhashValid(decoded.recentBlockhash, this.current);
    this.svm.withBlockhashCheck(!inWindow);
    let result: TransactionMetadata | FailedTransactionMetadata;
    try {
      result = this.svm.sendTransaction(decoded.tx);
    } finally {
      this.svm.withBlockhashCheck(false);
    }
    const failed = 'err' in result ? (result as FailedTransactionMetadata) : null;
    const post = accountKeys.map((a) => this.balanceNow(a));
    const fee = pre.reduce((s, b) => s + b, 0n) - post.reduce((s, b) => s + b, 0n);
    if (failed && fee <= 0n) return { kind: 'rejected', err: fromLiteSvm(failed.err()) };

    const meta = failed ? failed.meta() : (result as TransactionMetadata);
    const record: TxRecord = {
      signature: decoded.signature,
      slot,
      decoded,
      err: failed ? fromLiteSvm(failed.err()) : null,
      fee: Number(fee),
      accountKeys,
      loaded,
      preBalances: pre.map(Number),
      postBalances: post.map(Number),
      ...outputsOf(meta),
    };
    this.remember(writable, before, slot);
    this.blocks.get(slot)!.transactions.push(record);
    this.bySignature.set(record.signature, record);
    this.transactionCount++;
    return { kind: 'landed', record };
  }

  /**
   * Keep each written account's state from before its first change in `slot`. An account
   * changed since in a later slot keeps that later slot (entries stay in slot order): state is
   * one line of execution, so a late transaction's effect shows from the later slot on.
   */
  private remember(addresses: string[], before: (AccountState | null)[], slot: number): void {
    addresses.forEach((address, i) => {
      let list = this.changes.get(address);
      if (!list) this.changes.set(address, (list = []));
      const last = list[list.length - 1]?.slot ?? -1;
      if (last >= slot) return;
      list.push({ slot, before: before[i]! });
      let touched = this.changedIn.get(slot);
      if (!touched) this.changedIn.set(slot, (touched = []));
      touched.push(address);
    });
  }

  /** A faucet transfer of `lamports` to `to`, executed in the current slot. */
  airdrop(to: string, lamports: bigint): ExecuteResult {
    const wire = airdropTransaction(this.opts.faucet, to, lamports, this.blocks.get(this.current)!.blockhash, this.airdrops++);
    return this.execute(decodeTransaction(wire));
  }

  /**
   * Run `decoded` against the current state without committing anything. `sigVerify: false`
   * skips signature checks (RPC simulation's default). The blockhash must be valid at the bank
   * of `atSlot` (the request's commitment), the rule a real preflight applies, or be a durable
   * nonce's; otherwise the result is BlockhashNotFound.
   */
  simulate(decoded: DecodedTransaction, sigVerify: boolean, atSlot: number): SimulationResult {
    const refused = (name: string): SimulationResult => ({ err: namedError(name), logs: [], unitsConsumed: 0, returnData: null });
    const known = this.slotOfBlockhash(decoded.recentBlockhash) !== undefined;
    // A blockhash newer than the answering bank is as unknown to it as a stale one.
    if (known && !this.isBlockhashValid(decoded.recentBlockhash, atSlot)) return refused('BlockhashNotFound');
    if (sigVerify && !isFullySigned(decoded)) return refused('SignatureFailure');
    if (!known) this.svm.withBlockhashCheck(true);
    if (!sigVerify) this.svm.withSigverify(false);
    try {
      const r = this.svm.simulateTransaction(decoded.tx);
      const failed = 'err' in r ? (r as FailedTransactionMetadata) : null;
      const o = outputsOf(failed ? failed.meta() : (r as SimulatedTransactionInfo).meta());
      return { err: failed ? fromLiteSvm(failed.err()) : null, logs: o.logs, unitsConsumed: o.computeUnitsConsumed, returnData: o.returnData };
    } finally {
      this.svm.withBlockhashCheck(false);
      this.svm.withSigverify(true);
    }
  }
}

/** Does every required signer's signature slot hold a signature (LiteSVM refuses empty ones by throwing)? */
function isFullySigned(decoded: DecodedTransaction): boolean {
  return Object.values(decoded.tx.signatures).every((s) => s !== null);
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

