/**
 * The native transaction core, through its typed wrapper (`src/native.ts`), fed real signed
 * transactions built with @solana/web3.js. Expected values come from web3.js or from the
 * construction, never from the code under test.
 */
import { describe, expect, it } from 'vitest';
import {
  Keypair,
  MessageV0,
  PublicKey,
  SystemInstruction,
  SystemProgram,
  type TransactionInstruction,
} from '@solana/web3.js';
import {
  TipSet,
  base58Decode,
  base58Encode,
  inspectTransaction,
  inspectTransactions,
  inspectTransactionsAsync,
  inspectWire,
  type InspectResult,
  type VerifiedTransaction,
} from '../../src/native.js';
import { LandfallError } from '../../src/errors.js';
import {
  IDENTITY_POINT,
  NONCE_ACCOUNT_LENGTH,
  computeBudget,
  customInstruction,
  keypairs,
  layoutOf,
  legacyTx,
  legacyTxOfSize,
  makeLookupTable,
  makeTipAddresses,
  malleate,
  nonceAdvance,
  randomBlockhash,
  resign,
  signBytes,
  simpleTip,
  simpleTipV0,
  smallOrderForgery,
  toBase64,
  transfer,
  v0Tx,
  web3Base58,
  type BuiltTx,
} from '../../harness/transactions.js';
import {
  assemble,
  compactU16,
  concat,
  flipBit,
  mulberry32,
  randInt,
  randomBytesFrom,
  referenceSanitize,
  shuffle,
} from '../../harness/wire.js';

// ---- shared fixtures ---------------------------------------------------------------------

const TIPS = makeTipAddresses(8);
const tips = new TipSet(TIPS.map((k) => k.toBase58()));
const tip = (i: number): PublicKey => TIPS[i]!;

/** The verified transaction, or a failed assertion that names the refusal. */
function okTx(r: InspectResult): VerifiedTransaction {
  if (!r.ok) {
    expect.fail(`expected ok, got ${r.error.code}: ${r.error.message}`);
  }
  return r.tx;
}

/** The refusal, or a failed assertion. */
function errOf(r: InspectResult): LandfallError {
  if (r.ok) {
    expect.fail(`expected a refusal, got ok (signature ${r.tx.signature})`);
  }
  expect(r.error).toBeInstanceOf(LandfallError);
  return r.error;
}

function expectError(r: InspectResult, code: string, index?: number): LandfallError {
  const e = errOf(r);
  expect(e.code, e.message).toBe(code);
  if (index !== undefined) expect(e.context.index, e.message).toBe(index);
  return e;
}

/** A comparable summary of a verdict (Buffers and errors flattened). */
function summary(r: InspectResult): unknown {
  if (r.ok) return { ok: true, ...r.tx, wire: r.tx.wire === undefined ? undefined : toBase64(r.tx.wire) };
  return { ok: false, code: r.error.code, message: r.error.message, context: r.error.context };
}

interface Facts {
  tipLamports?: bigint;
  tipTransfers?: number;
  tipAccount?: string | undefined;
  transfersViaLookup?: number;
  durableNonce?: boolean;
  nonceAccount?: VerifiedTransaction['nonceAccount'];
  computeUnitLimit?: number | undefined;
  computeUnitPrice?: bigint | undefined;
}

/** What web3.js says about `built`, checked against a verdict. */
function expectMatchesWeb3(tx: VerifiedTransaction, built: BuiltTx): void {
  expect(tx.signature).toBe(web3Base58(built.signatures[0]!));
  expect(tx.numSignatures).toBe(built.compiled.header.numRequiredSignatures);
  expect(tx.numSignatures).toBe(built.signatures.length);
  expect(tx.feePayer).toBe(built.feePayer.toBase58());
  expect(tx.feePayer).toBe(built.compiled.staticAccountKeys[0]!.toBase58());
  expect(tx.recentBlockhash).toBe(built.recentBlockhash);
  expect(tx.recentBlockhash).toBe(built.compiled.recentBlockhash);
  expect(tx.version).toBe(built.version);
  expect(tx.version).toBe(built.compiled.version === 0 ? 'v0' : 'legacy');
  expect(tx.size).toBe(built.bytes.length);
  // The offsets the store keys and encodes the record from: the very bytes of those two fields.
  const wire = Buffer.from(built.bytes);
  expect(web3Base58(wire.subarray(tx.signatureOffset, tx.signatureOffset + 64))).toBe(tx.signature);
  expect(web3Base58(wire.subarray(tx.blockhashOffset, tx.blockhashOffset + 32))).toBe(tx.recentBlockhash);
}

/**
 * Inspect `built` three ways (base64 text, wire bytes, wire bytes at an offset inside a larger
 * buffer), check every field, and return the base64 verdict.
 */
function expectVerified(built: BuiltTx, facts: Facts = {}): VerifiedTransaction {
  const fromText = okTx(inspectTransaction(built.base64, tips));
  expectMatchesWeb3(fromText, built);
  expect(fromText.wire).toBeDefined();
  expect(Buffer.from(fromText.wire!).equals(Buffer.from(built.bytes))).toBe(true);

  const fromWire = okTx(inspectWire(built.bytes, tips));
  expectMatchesWeb3(fromWire, built);
  expect(fromWire.wire).toBeUndefined();

  // The same bytes as a view into the middle of a larger buffer, surrounded by junk.
  const big = new Uint8Array(built.bytes.length + 23).fill(0xee);
  big.set(built.bytes, 7);
  const fromView = okTx(inspectWire(big.subarray(7, 7 + built.bytes.length), tips));
  expect({ ...fromView }).toEqual({ ...fromWire });

  const expected: Facts = {
    tipLamports: 0n,
    tipTransfers: 0,
    tipAccount: undefined,
    transfersViaLookup: 0,
    durableNonce: false,
    nonceAccount: undefined,
    computeUnitLimit: undefined,
    computeUnitPrice: undefined,
    ...facts,
  };
  for (const t of [fromText, fromWire]) {
    expect({
      tipLamports: t.tipLamports,
      tipTransfers: t.tipTransfers,
      tipAccount: t.tipAccount,
      transfersViaLookup: t.transfersViaLookup,
      durableNonce: t.durableNonce,
      nonceAccount: t.nonceAccount,
      computeUnitLimit: t.computeUnitLimit,
      computeUnitPrice: t.computeUnitPrice,
    }).toEqual(expected);
  }
  return fromText;
}

const isZero = (s: Uint8Array): boolean => s.every((b) => b === 0);

// ---- base58 and TipSet -------------------------------------------------------------------

describe('base58 and TipSet', () => {
  it('the test helpers base58 agrees with web3.js PublicKey (leading zeros included)', () => {
    for (let i = 0; i < 50; i++) {
      const k = Keypair.generate().publicKey.toBytes();
      if (i % 5 === 0) k.fill(0, 0, i % 7);
      expect(web3Base58(k)).toBe(new PublicKey(k).toBase58());
    }
  });

  it('base58Encode / base58Decode match web3.js base58 for signatures and keys', () => {
    const rand = mulberry32(58);
    for (let i = 0; i < 200; i++) {
      const len = i % 2 === 0 ? 64 : 32;
      const b = randomBytesFrom(rand, len);
      if (i % 10 === 0) b.fill(0, 0, 1 + (i % 4)); // leading zero bytes become leading '1's
      const text = web3Base58(b);
      expect(base58Encode(b)).toBe(text);
      expect(Buffer.from(base58Decode(text)).equals(Buffer.from(b))).toBe(true);
    }
  });

  it('base58Decode refuses characters outside the alphabet with BASE58_INVALID', () => {
    for (const bad of ['0', 'O', 'I', 'l', 'abc+def', ' 1']) {
      let thrown: unknown;
      try {
        base58Decode(bad);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, bad).toBeInstanceOf(LandfallError);
      expect((thrown as LandfallError).code).toBe('BASE58_INVALID');
    }
  });

  it('TipSet keeps its addresses in order and refuses anything but 32-byte base58 keys', () => {
    expect(tips.addresses).toEqual(TIPS.map((k) => k.toBase58()));
    const bad = [
      '',
      '0OIl',
      web3Base58(new Uint8Array(31).fill(7)),
      web3Base58(new Uint8Array(33).fill(7)),
      '1' + TIPS[0]!.toBase58(), // a leading '1' is a leading zero byte: 33 bytes
    ];
    for (const a of bad) {
      expect(() => new TipSet([TIPS[1]!.toBase58(), a]), JSON.stringify(a)).toThrow();
      try {
        new TipSet([a]);
      } catch (e) {
        expect((e as { code?: string }).code).toBe('BASE58_INVALID');
      }
    }
    expect(new TipSet([]).addresses).toEqual([]);
  });
});

// ---- valid transactions ------------------------------------------------------------------

describe('valid transactions: verdict ok and the facts web3.js states', () => {
  it('legacy Transaction with one tip transfer', () => {
    const payer = Keypair.generate();
    const built = legacyTx([transfer(payer.publicKey, tip(3), 123_456)], { feePayer: payer });
    expect(built.compiled.version).toBe('legacy');
    expectVerified(built, { tipLamports: 123_456n, tipTransfers: 1, tipAccount: tip(3).toBase58() });
  });

  it('v0 VersionedTransaction compiled against a real address lookup table', () => {
    const payer = Keypair.generate();
    const [a, b, c] = [Keypair.generate().publicKey, Keypair.generate().publicKey, Keypair.generate().publicKey];
    const program = Keypair.generate().publicKey;
    const table = makeLookupTable([c, a, b]);
    const built = v0Tx(
      [
        transfer(payer.publicKey, tip(0), 5_000),
        transfer(payer.publicKey, a, 7),
        customInstruction(program, [
          { pubkey: b, isWritable: false },
          { pubkey: payer.publicKey, isSigner: true, isWritable: true },
        ]),
      ],
      { feePayer: payer, lookupTables: [table] },
    );
    // web3.js really moved a and b into the lookup table: they are not static keys.
    const m = built.compiled;
    expect(m.version).toBe(0);
    expect(m.addressTableLookups).toHaveLength(1);
    expect(m.addressTableLookups[0]!.accountKey.equals(table.key)).toBe(true);
    expect(m.addressTableLookups[0]!.writableIndexes).toEqual([1]); // a
    expect(m.addressTableLookups[0]!.readonlyIndexes).toEqual([2]); // b
    expect(m.staticAccountKeys.some((k) => k.equals(a) || k.equals(b))).toBe(false);
    expect(m.staticAccountKeys.some((k) => k.equals(tip(0)))).toBe(true);
    expectVerified(built, {
      tipLamports: 5_000n,
      tipTransfers: 1,
      tipAccount: tip(0).toBase58(),
      transfersViaLookup: 1, // the transfer to `a`
    });
  });

  it('legacy transaction with three signers', () => {
    const [payer, s1, s2] = keypairs(3) as [Keypair, Keypair, Keypair];
    const built = legacyTx(
      [transfer(s1.publicKey, tip(5), 1_000), transfer(s2.publicKey, Keypair.generate().publicKey, 2_000)],
      { feePayer: payer, signers: [s1, s2] },
    );
    expect(built.compiled.header.numRequiredSignatures).toBe(3);
    expect(built.signatures.every((s) => !isZero(s))).toBe(true);
    expect(built.signerKeys[0]!.equals(payer.publicKey)).toBe(true);
    const tx = expectVerified(built, { tipLamports: 1_000n, tipTransfers: 1, tipAccount: tip(5).toBase58() });
    expect(tx.numSignatures).toBe(3);
  });

  it('v0 transaction with two signers', () => {
    const [payer, s1] = keypairs(2) as [Keypair, Keypair];
    const built = v0Tx([transfer(s1.publicKey, tip(1), 9)], { feePayer: payer, signers: [s1] });
    expect(built.compiled.header.numRequiredSignatures).toBe(2);
    expectVerified(built, { tipLamports: 9n, tipTransfers: 1, tipAccount: tip(1).toBase58() });
  });

  it('durable nonce: first instruction AdvanceNonceAccount (legacy and v0)', () => {
    for (const build of [legacyTx, v0Tx]) {
      const payer = Keypair.generate();
      const nonceAccount = Keypair.generate().publicKey;
      const nonceValue = randomBlockhash();
      const built = build([nonceAdvance(nonceAccount, payer.publicKey), transfer(payer.publicKey, tip(2), 77)], {
        feePayer: payer,
        blockhash: nonceValue,
      });
      const t = expectVerified(built, {
        durableNonce: true,
        nonceAccount: nonceAccount.toBase58(),
        tipLamports: 77n,
        tipTransfers: 1,
        tipAccount: tip(2).toBase58(),
      });
      expect(t.recentBlockhash).toBe(nonceValue);
    }
  });

  it('not a durable nonce: the nonce account loaded from an address lookup table (SIMD-0242, static nonce account only)', () => {
    const payer = Keypair.generate();
    const nonceAccount = Keypair.generate().publicKey;
    // web3.js loads a non-signer key from a table that holds it: entry 2 here.
    const table = makeLookupTable([Keypair.generate().publicKey, Keypair.generate().publicKey, nonceAccount]);
    const built = v0Tx([nonceAdvance(nonceAccount, payer.publicKey), transfer(payer.publicKey, tip(2), 77)], {
      feePayer: payer,
      lookupTables: [table],
    });
    const lookups = (built.compiled as MessageV0).addressTableLookups;
    expect(lookups.map((l) => [l.accountKey.toBase58(), [...l.writableIndexes]])).toEqual([[table.key.toBase58(), [2]]]);
    expectVerified(built, { durableNonce: false, nonceAccount: undefined, tipLamports: 77n, tipTransfers: 1, tipAccount: tip(2).toBase58() });
  });

  it('not a durable nonce: AdvanceNonceAccount second, or a nonce account being created', () => {
    const payer = Keypair.generate();
    const second = legacyTx(
      [transfer(payer.publicKey, tip(2), 77), nonceAdvance(Keypair.generate().publicKey, payer.publicKey)],
      { feePayer: payer },
    );
    expectVerified(second, { durableNonce: false, tipLamports: 77n, tipTransfers: 1, tipAccount: tip(2).toBase58() });

    const nonceKeypair = Keypair.generate();
    const create = SystemProgram.createNonceAccount({
      fromPubkey: payer.publicKey,
      noncePubkey: nonceKeypair.publicKey,
      authorizedPubkey: payer.publicKey,
      lamports: 1_447_680,
    });
    // createAccount(space = NONCE_ACCOUNT_LENGTH) then InitializeNonceAccount.
    expect(SystemInstruction.decodeCreateAccount(create.instructions[0]!).space).toBe(NONCE_ACCOUNT_LENGTH);
    const built = legacyTx([...create.instructions, transfer(payer.publicKey, tip(4), 1)], {
      feePayer: payer,
      signers: [nonceKeypair],
    });
    expectVerified(built, { durableNonce: false, tipLamports: 1n, tipTransfers: 1, tipAccount: tip(4).toBase58() });
  });

  it('not a durable nonce: AdvanceNonceAccount on a read-only nonce account (the validator requires it writable)', () => {
    // agave `get_durable_nonce`: first instruction is System AdvanceNonceAccount AND its first
    // account (the nonce account) is writable; otherwise the blockhash is checked as usual.
    const payer = Keypair.generate();
    const nonceAccount = Keypair.generate().publicKey;
    const real = nonceAdvance(nonceAccount, payer.publicKey);
    expect(real.keys[0]!.isWritable).toBe(true);
    const readonlyNonce = customInstruction(
      SystemProgram.programId,
      real.keys.map((k, i) => ({ pubkey: k.pubkey, isSigner: k.isSigner, isWritable: i === 0 ? false : k.isWritable })),
      Uint8Array.from(real.data),
    );
    expect(SystemInstruction.decodeInstructionType(readonlyNonce)).toBe('AdvanceNonceAccount');
    for (const build of [legacyTx, v0Tx]) {
      const built = build([readonlyNonce, transfer(payer.publicKey, tip(2), 77)], { feePayer: payer });
      const idx = built.compiled.compiledInstructions[0]!.accountKeyIndexes[0]!;
      expect(built.compiled.isAccountWritable(idx)).toBe(false);
      expectVerified(built, { durableNonce: false, tipLamports: 77n, tipTransfers: 1, tipAccount: tip(2).toBase58() });
    }
  });

  it('compute budget: SetComputeUnitLimit and SetComputeUnitPrice (u64 beyond 2^53)', () => {
    const price = (1n << 60n) + 7n;
    for (const build of [legacyTx, v0Tx]) {
      const payer = Keypair.generate();
      const built = build([...computeBudget(1_234_567, price), transfer(payer.publicKey, tip(6), 42)], {
        feePayer: payer,
      });
      const t = expectVerified(built, {
        computeUnitLimit: 1_234_567,
        computeUnitPrice: price,
        tipLamports: 42n,
        tipTransfers: 1,
        tipAccount: tip(6).toBase58(),
      });
      expect(typeof t.computeUnitPrice).toBe('bigint');
    }
  });

  it('a transaction of exactly 1232 bytes is accepted, as wire bytes and as 1644 base64 characters', () => {
    for (const size of [1232, 1231, 1230]) {
      const built = legacyTxOfSize(size);
      expect(built.bytes.length).toBe(size);
      expect(built.base64.length).toBe(Math.ceil(size / 3) * 4);
      expectVerified(built);
    }
  });
});

// ---- tampering -----------------------------------------------------------------------------

describe('tampering: any changed byte is refused', () => {
  it('a key verified before (kept decoded by the thread) still refuses a signature it did not make', () => {
    const payer = Keypair.generate();
    const good = simpleTip(tip(0), 10_000, payer);
    okTx(inspectTransaction(good.base64, tips));
    okTx(inspectTransaction(good.base64, tips)); // the payer's key now comes from the thread's cache
    // The same payer's next transaction, its signature's last bit flipped (s stays canonical).
    const next = simpleTip(tip(1), 20_000, payer);
    const forged = flipBit(next.bytes, 1 + 63, 0);
    const e = errOf(inspectWire(Buffer.from(forged), tips));
    expect(e.code).toBe('SIGNATURE_INVALID');
    expect(e.context).toMatchObject({ index: 0 });
    // And another payer's signature on it (the key is not the signer's).
    const other = simpleTip(tip(1), 20_000, Keypair.generate());
    const swapped = Uint8Array.from(next.bytes);
    swapped.set(other.signatures[0]!, 1);
    expect(errOf(inspectWire(Buffer.from(swapped), tips)).code).toBe('SIGNATURE_INVALID');
    okTx(inspectTransaction(next.base64, tips));
  });

  /** Flip every bit of every message byte; classify each mutation independently. */
  function flipEveryMessageBit(built: BuiltTx): { invalid: number; framing: number } {
    const layout = layoutOf(built);
    // Regions whose bytes cannot affect framing or sanitize: keys, blockhash, instruction data,
    // lookup table addresses.
    const inert: [number, number][] = [
      ...layout.staticKeys,
      layout.blockhash,
      ...layout.instructionData,
      ...layout.lookupTables,
    ];
    const isInert = (o: number): boolean => inert.some(([s, e]) => o >= s && o < e);
    let invalid = 0;
    let framing = 0;
    const failures: string[] = [];
    for (let o = layout.messageStart; o < built.bytes.length; o++) {
      for (let bit = 0; bit < 8; bit++) {
        const mutated = flipBit(built.bytes, o, bit);
        let r: InspectResult;
        try {
          r = inspectWire(mutated, tips);
        } catch (e) {
          failures.push(`offset ${o} bit ${bit}: threw ${String(e)}`);
          continue;
        }
        const ref = referenceSanitize(mutated);
        const where = `offset ${o} bit ${bit}`;
        if (r.ok) {
          failures.push(`${where}: accepted`);
          continue;
        }
        const { code } = r.error;
        if (isInert(o) && !ref.ok) failures.push(`${where}: reference says inert byte broke framing (${ref.code})`);
        if (ref.ok) {
          // Still a well-formed transaction: only the signature can catch it.
          invalid++;
          if (code !== 'SIGNATURE_INVALID' || r.error.context.index !== 0) {
            failures.push(`${where}: frames, expected SIGNATURE_INVALID [0], got ${code} [${r.error.context.index}]`);
          }
        } else {
          framing++;
          if (code === 'SIGNATURE_INVALID' || code === 'UNSIGNED') {
            failures.push(`${where}: does not frame (${ref.code}), got ${code}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
    return { invalid, framing };
  }

  it('every bit of every message byte of a legacy transaction (tip + compute budget)', () => {
    const payer = Keypair.generate();
    const built = legacyTx([...computeBudget(200_000, 5_000n), transfer(payer.publicKey, tip(0), 10_000)], {
      feePayer: payer,
    });
    const { invalid, framing } = flipEveryMessageBit(built);
    const layout = layoutOf(built);
    // Keys, blockhash and instruction data alone give this many SIGNATURE_INVALID verdicts.
    const inertBytes = layout.staticKeys.length * 32 + 32 + layout.instructionData.reduce((s, [a, b]) => s + b - a, 0);
    expect(invalid).toBeGreaterThanOrEqual(inertBytes * 8);
    expect(framing).toBeGreaterThan(0);
  });

  it('every bit of every message byte of a two-signer v0 transaction with a lookup table', () => {
    const [payer, s1] = keypairs(2) as [Keypair, Keypair];
    const far = Keypair.generate().publicKey;
    const built = v0Tx(
      [transfer(s1.publicKey, tip(1), 10_000), transfer(payer.publicKey, far, 1)],
      { feePayer: payer, signers: [s1], lookupTables: [makeLookupTable([far])] },
    );
    expect(built.compiled.addressTableLookups).toHaveLength(1);
    const { invalid, framing } = flipEveryMessageBit(built);
    expect(invalid).toBeGreaterThan(0);
    expect(framing).toBeGreaterThan(0);
  });

  it('flips in the blockhash and instruction data give exactly SIGNATURE_INVALID [index 0], as base64 too', () => {
    const [payer, s1, s2] = keypairs(3) as [Keypair, Keypair, Keypair];
    const built = legacyTx(
      [transfer(payer.publicKey, tip(0), 10_000), transfer(s1.publicKey, tip(1), 1), transfer(s2.publicKey, tip(2), 2)],
      { feePayer: payer, signers: [s1, s2] },
    );
    const layout = layoutOf(built);
    const offsets: number[] = [];
    for (const [s, e] of [layout.blockhash, ...layout.instructionData]) for (let o = s; o < e; o++) offsets.push(o);
    expect(offsets.length).toBe(32 + 3 * 12);
    for (const o of offsets) {
      const mutated = flipBit(built.bytes, o, o % 8);
      expectError(inspectWire(mutated, tips), 'SIGNATURE_INVALID', 0);
      expectError(inspectTransaction(toBase64(mutated), tips), 'SIGNATURE_INVALID', 0);
    }
  });

  it('a flipped bit inside signature i gives SIGNATURE_INVALID with index i', () => {
    const [payer, s1, s2] = keypairs(3) as [Keypair, Keypair, Keypair];
    for (const built of [
      legacyTx([transfer(s1.publicKey, tip(0), 1), transfer(s2.publicKey, tip(1), 1)], {
        feePayer: payer,
        signers: [s1, s2],
      }),
      v0Tx([transfer(s1.publicKey, tip(0), 1), transfer(s2.publicKey, tip(1), 1)], {
        feePayer: payer,
        signers: [s1, s2],
      }),
    ]) {
      const layout = layoutOf(built);
      expect(layout.signatures).toHaveLength(3);
      layout.signatures.forEach(([start, end], i) => {
        for (let o = start; o < end; o++) {
          for (let bit = 0; bit < 8; bit++) {
            const r = inspectWire(flipBit(built.bytes, o, bit), tips);
            const e = errOf(r);
            if (e.code !== 'SIGNATURE_INVALID' || e.context.index !== i) {
              expect.fail(`signature ${i} byte ${o - start} bit ${bit}: ${e.code} [${e.context.index}]`);
            }
          }
        }
      });
    }
  });

  it('a malleated signature (s + ℓ, accepted by lax verifiers) is SIGNATURE_INVALID', () => {
    const [payer, s1] = keypairs(2) as [Keypair, Keypair];
    const built = legacyTx([transfer(s1.publicKey, tip(0), 1)], { feePayer: payer, signers: [s1] });
    for (const i of [0, 1]) {
      const sigs = built.signatures.map((s, j) => (j === i ? malleate(s) : s));
      const bytes = assemble(sigs, built.message);
      expectError(inspectWire(bytes, tips), 'SIGNATURE_INVALID', i);
    }
  });

  it('a small-order key with an identity-point signature (a forgery for cofactorless checks) is SIGNATURE_INVALID', () => {
    const built = smallOrderForgery(tip(0));
    expect(built.feePayer.toBytes()).toEqual(IDENTITY_POINT);
    expectError(inspectWire(built.bytes, tips), 'SIGNATURE_INVALID', 0);
    expectError(inspectTransaction(built.base64, tips), 'SIGNATURE_INVALID', 0);
  });

  it('an all-zero signature (partially signed) is UNSIGNED with the index of the missing signer', () => {
    const [payer, s1, s2] = keypairs(3) as [Keypair, Keypair, Keypair];
    const ixs = (): TransactionInstruction[] => [
      transfer(s1.publicKey, tip(0), 1),
      transfer(s2.publicKey, tip(1), 1),
    ];
    const subsets: Keypair[][] = [[payer], [payer, s2], [payer, s1], [s1, s2], [s2], []];
    for (const build of [legacyTx, v0Tx]) {
      for (const signWith of subsets) {
        const built = build(ixs(), { feePayer: payer, signers: [s1, s2], signWith });
        // Which signature web3.js left empty, from its own signer order.
        const missing = built.signerKeys.findIndex((k) => !signWith.some((s) => s.publicKey.equals(k)));
        expect(missing).toBeGreaterThanOrEqual(0);
        expect(isZero(built.signatures[missing]!)).toBe(true);
        expectError(inspectWire(built.bytes, tips), 'UNSIGNED', missing);
        expectError(inspectTransaction(built.base64, tips), 'UNSIGNED', missing);
      }
    }
  });
});

// ---- tips ------------------------------------------------------------------------------------

describe('tips', () => {
  it('a tip routed through an address lookup table is not counted, and is reported as via-lookup', () => {
    const payer = Keypair.generate();
    const built = v0Tx([transfer(payer.publicKey, tip(4), 50_000)], {
      feePayer: payer,
      lookupTables: [makeLookupTable([Keypair.generate().publicKey, tip(4)])],
    });
    // The tip address is only in the lookup table, not a static key.
    expect(built.compiled.staticAccountKeys.some((k) => k.equals(tip(4)))).toBe(false);
    expect(built.compiled.addressTableLookups[0]!.writableIndexes).toEqual([1]);
    const t = expectVerified(built, { tipLamports: 0n, tipTransfers: 0, tipAccount: undefined, transfersViaLookup: 1 });
    expect(t.transfersViaLookup).toBeGreaterThanOrEqual(1);
  });

  it('static tip plus a looked-up tip: only the static one counts', () => {
    const payer = Keypair.generate();
    const built = v0Tx([transfer(payer.publicKey, tip(7), 11), transfer(payer.publicKey, tip(6), 13)], {
      feePayer: payer,
      lookupTables: [makeLookupTable([tip(6)])],
    });
    expect(built.compiled.staticAccountKeys.some((k) => k.equals(tip(7)))).toBe(true);
    expect(built.compiled.staticAccountKeys.some((k) => k.equals(tip(6)))).toBe(false);
    expectVerified(built, { tipLamports: 11n, tipTransfers: 1, tipAccount: tip(7).toBase58(), transfersViaLookup: 1 });
  });

  it('a transfer to a non-tip address is no tip, even with a tip address among the static keys', () => {
    const payer = Keypair.generate();
    const other = Keypair.generate().publicKey;
    const built = legacyTx(
      [
        transfer(payer.publicKey, other, 1_000_000),
        // The tip address is present, but only as a read-only account of another program.
        customInstruction(Keypair.generate().publicKey, [{ pubkey: tip(0) }]),
      ],
      { feePayer: payer },
    );
    expect(built.compiled.staticAccountKeys.some((k) => k.equals(tip(0)))).toBe(true);
    expectVerified(built, { tipLamports: 0n, tipTransfers: 0, tipAccount: undefined });
  });

  it('two tip transfers to two tip addresses add up; tipAccount is the first one paid', () => {
    const big = (1n << 53n) + 1n; // beyond Number precision
    for (const build of [legacyTx, v0Tx]) {
      const payer = Keypair.generate();
      const built = build([transfer(payer.publicKey, tip(5), big), transfer(payer.publicKey, tip(2), 5n)], {
        feePayer: payer,
      });
      expectVerified(built, { tipLamports: big + 5n, tipTransfers: 2, tipAccount: tip(5).toBase58() });
    }
  });

  it('a TransferWithSeed to a tip address counts', async () => {
    const base = Keypair.generate();
    for (const seed of ['landfall', 'x'.repeat(32)]) {
      const from = await PublicKey.createWithSeed(base.publicKey, seed, SystemProgram.programId);
      const ix = SystemProgram.transfer({
        fromPubkey: from,
        basePubkey: base.publicKey,
        toPubkey: tip(3),
        lamports: 31_337,
        seed,
        programId: SystemProgram.programId,
      });
      // web3.js built a TransferWithSeed (tag 11), destination third.
      expect(SystemInstruction.decodeInstructionType(ix)).toBe('TransferWithSeed');
      expect(ix.keys[2]!.pubkey.equals(tip(3))).toBe(true);
      const built = legacyTx([ix], { feePayer: base });
      expectVerified(built, { tipLamports: 31_337n, tipTransfers: 1, tipAccount: tip(3).toBase58() });
    }
  });

  it('a TransferWithSeed whose seed is longer than 32 bytes cannot execute, so is no tip', () => {
    const base = Keypair.generate();
    const ix = SystemProgram.transfer({
      fromPubkey: Keypair.generate().publicKey,
      basePubkey: base.publicKey,
      toPubkey: tip(3),
      lamports: 31_337,
      seed: 'y'.repeat(33), // Pubkey::create_with_seed refuses seeds over MAX_SEED_LEN = 32
      programId: SystemProgram.programId,
    });
    expect(SystemInstruction.decodeInstructionType(ix)).toBe('TransferWithSeed');
    expectVerified(legacyTx([ix], { feePayer: base }), { tipLamports: 0n, tipTransfers: 0 });
  });

  it('a transaction paying tips is no tip to a service with other tip addresses', () => {
    const built = simpleTip(tip(0), 5_000);
    const other = new TipSet(makeTipAddresses(8).map((k) => k.toBase58()));
    const t = okTx(inspectTransaction(built.base64, other));
    expect(t.tipLamports).toBe(0n);
    expect(t.tipTransfers).toBe(0);
    expect(t.tipAccount).toBeUndefined();
    const none = okTx(inspectTransaction(built.base64, new TipSet([])));
    expect(none.tipLamports).toBe(0n);
  });
});

// ---- strictness ----------------------------------------------------------------------------

describe('strictness', () => {
  it('1233 bytes is TOO_LARGE (a real signed transaction one byte over the packet size)', () => {
    const built = legacyTxOfSize(1233);
    expect(built.bytes.length).toBe(1233);
    expectError(inspectWire(built.bytes, tips), 'TOO_LARGE');
    expectError(inspectTransaction(built.base64, tips), 'TOO_LARGE');
    expectError(inspectWire(new Uint8Array(4096), tips), 'TOO_LARGE');
    expectError(inspectTransaction('A'.repeat(4096), tips), 'TOO_LARGE');
  });

  it('a valid transaction plus one trailing byte is MALFORMED (trailing bytes)', () => {
    for (const built of [simpleTip(tip(0)), simpleTipV0(tip(1))]) {
      for (const extra of [0x00, 0xff]) {
        const bytes = concat(built.bytes, [extra]);
        const e = expectError(inspectWire(bytes, tips), 'MALFORMED');
        expect(e.message).toMatch(/trailing/);
        expect(expectError(inspectTransaction(toBase64(bytes), tips), 'MALFORMED').message).toMatch(/trailing/);
      }
    }
  });

  it('a non-minimal compact-u16 is MALFORMED', () => {
    const payer = Keypair.generate();
    const built = legacyTx([transfer(payer.publicKey, tip(0), 1)], { feePayer: payer });
    expect(built.bytes[0]).toBe(1);
    // Signature count 1 re-encoded as [0x81, 0x00].
    const sigCount = assemble(built.signatures, built.message, [0x81, 0x00]);
    expectError(inspectWire(sigCount, tips), 'MALFORMED');
    expectError(inspectTransaction(toBase64(sigCount), tips), 'MALFORMED');

    // The instruction-data length re-encoded non-minimally, and the message re-signed, so the
    // encoding is the only defect.
    const layout = layoutOf(built);
    const [dStart, dEnd] = layout.instructionData[0]!;
    const m = built.messageOffset;
    expect(built.bytes[dStart - 1]).toBe(dEnd - dStart); // 12: one-byte length
    const message = concat(
      built.bytes.subarray(m, dStart - 1),
      [0x80 | (dEnd - dStart), 0x00],
      built.bytes.subarray(dStart),
    );
    expectError(inspectWire(resign(message, [payer]), tips), 'MALFORMED');
  });

  it('every truncation of a valid transaction is MALFORMED, never ok, never a throw', () => {
    const [payer, s1] = keypairs(2) as [Keypair, Keypair];
    const built = v0Tx([...computeBudget(1000, 1n), transfer(s1.publicKey, tip(0), 1)], {
      feePayer: payer,
      signers: [s1],
      lookupTables: [makeLookupTable([Keypair.generate().publicKey])],
    });
    for (const b of [built, simpleTip(tip(1))]) {
      for (let n = 0; n < b.bytes.length; n++) {
        // A view of the prefix: the core must read the view's bytes only.
        expectError(inspectWire(b.bytes.subarray(0, n), tips), 'MALFORMED');
        if (n > 0) expectError(inspectTransaction(toBase64(b.bytes.subarray(0, n)), tips), 'MALFORMED');
      }
    }
  });

  it('malformed base64 is BASE64_INVALID, without a throw', () => {
    const good = simpleTip(tip(0)).base64;
    expect(inspectTransaction(good, tips).ok).toBe(true);
    const cases: [string, string][] = [
      ['empty string', ''],
      ['bad character', good.slice(0, 10) + '*' + good.slice(11)],
      ['url-safe alphabet', good.slice(0, 10) + '-' + good.slice(11)],
      ['embedded newline', good.slice(0, 40) + '\n' + good.slice(40)],
      ['leading space', ' ' + good],
      ['wrong length (one char dropped)', good.slice(0, 10) + good.slice(11)],
      ['wrong length (one char added)', good + 'A'],
      ['single character', 'A'],
      ['padding in the middle', good.slice(0, 8) + '==' + good.slice(10)],
      ['too much padding', 'A==='],
      ['padding only', '===='],
      ['missing padding', 'AAA'],
      ['non-canonical final symbol', 'AB=='],
      ['non-ASCII', good.slice(0, 12) + 'é' + good.slice(13)],
    ];
    for (const [what, text] of cases) {
      let r: InspectResult;
      try {
        r = inspectTransaction(text, tips);
      } catch (e) {
        return expect.fail(`${what}: threw ${String(e)}`);
      }
      const e = errOf(r);
      expect(e.code, `${what}: ${e.message}`).toBe('BASE64_INVALID');
    }
    // A bad character's position is reported.
    expectError(inspectTransaction(good.slice(0, 10) + '*' + good.slice(11), tips), 'BASE64_INVALID', 10);
  });

  it('version byte 0x81 (v1) and above are UNSUPPORTED_VERSION, even correctly signed', () => {
    const payer = Keypair.generate();
    const built = v0Tx([transfer(payer.publicKey, tip(0), 1)], { feePayer: payer });
    expect(built.message[0]).toBe(0x80);
    for (const prefix of [0x81, 0x82, 0xff]) {
      const message = Uint8Array.from(built.message);
      message[0] = prefix;
      const bytes = resign(message, [payer]);
      expectError(inspectWire(bytes, tips), 'UNSUPPORTED_VERSION');
      expectError(inspectTransaction(toBase64(bytes), tips), 'UNSUPPORTED_VERSION');
    }
  });

  it('a signature count different from the header is SIGNATURE_COUNT_MISMATCH', () => {
    const [payer, s1] = keypairs(2) as [Keypair, Keypair];
    const one = legacyTx([transfer(payer.publicKey, tip(0), 1)], { feePayer: payer });
    expect(one.compiled.header.numRequiredSignatures).toBe(1);
    // Two signatures for a one-signer message.
    expectError(inspectWire(assemble([one.signatures[0]!, signBytes(one.message, s1)], one.message), tips), 'SIGNATURE_COUNT_MISMATCH');
    // No signature at all.
    expectError(inspectWire(assemble([], one.message), tips), 'SIGNATURE_COUNT_MISMATCH');
    // One signature for a two-signer message.
    const two = v0Tx([transfer(s1.publicKey, tip(0), 1)], { feePayer: payer, signers: [s1] });
    expect(two.compiled.header.numRequiredSignatures).toBe(2);
    const bytes = assemble([two.signatures[0]!], two.message);
    expectError(inspectWire(bytes, tips), 'SIGNATURE_COUNT_MISMATCH');
    expectError(inspectTransaction(toBase64(bytes), tips), 'SIGNATURE_COUNT_MISMATCH');
    // More required signatures than static keys (header says 4, there are 3 keys).
    expect(one.compiled.staticAccountKeys).toHaveLength(3);
    const message = Uint8Array.from(one.message);
    message[0] = 4;
    const sigs = [payer, s1, ...keypairs(2)].map((k) => signBytes(message, k));
    expectError(inspectWire(assemble(sigs, message), tips), 'SIGNATURE_COUNT_MISMATCH');
  });

  it('sanitize rules, each the only defect of a correctly signed transaction', () => {
    const payer = Keypair.generate();
    const built = legacyTx([transfer(payer.publicKey, tip(0), 1)], { feePayer: payer });
    const keys = built.compiled.staticAccountKeys; // payer, tip, system program
    expect(keys).toHaveLength(3);
    expect(Array.from(built.message.subarray(0, 3))).toEqual([1, 0, 1]);
    const layout = layoutOf(built);
    const [aStart] = layout.instructionAccounts[0]!;
    const programAt = aStart - 2 - built.messageOffset; // program index, then compact(2)
    expect(built.message[programAt]).toBe(2);
    const mutate = (at: number, value: number): Uint8Array => {
      const m = Uint8Array.from(built.message);
      m[at] = value;
      return resign(m, [payer]);
    };
    // Control: re-signing the unchanged message is fine.
    expect(inspectWire(resign(built.message, [payer]), tips).ok).toBe(true);
    // No writable fee payer (the only signer is read-only).
    expectError(inspectWire(mutate(1, 1), tips), 'INVALID_HEADER');
    // Read-only unsigned accounts overlapping the signers.
    expectError(inspectWire(mutate(2, 3), tips), 'INVALID_HEADER');
    // Program index: the fee payer, then past the static keys.
    expectError(inspectWire(mutate(programAt, 0), tips), 'INVALID_PROGRAM_INDEX');
    expectError(inspectWire(mutate(programAt, 3), tips), 'INVALID_PROGRAM_INDEX');
    // Account index past the last account.
    expectError(inspectWire(mutate(aStart - built.messageOffset + 1, 3), tips), 'INVALID_ACCOUNT_INDEX');
  });

  it('v0 lookups: an empty lookup is EMPTY_LOOKUP; 256 accounts are fine, 257 TOO_MANY_ACCOUNTS', () => {
    const payer = Keypair.generate();
    const base = v0Tx([transfer(payer.publicKey, tip(0), 1)], { feePayer: payer });
    const m = base.compiled as MessageV0;
    expect(m.staticAccountKeys).toHaveLength(3);
    const withLookups = (lookups: { writable: number; readonly: number }[]): Uint8Array => {
      const message = new MessageV0({
        header: m.header,
        staticAccountKeys: m.staticAccountKeys,
        recentBlockhash: m.recentBlockhash,
        compiledInstructions: m.compiledInstructions,
        addressTableLookups: lookups.map((l) => ({
          accountKey: Keypair.generate().publicKey,
          writableIndexes: Array.from({ length: l.writable }, (_, i) => i),
          readonlyIndexes: Array.from({ length: l.readonly }, (_, i) => i),
        })),
      }).serialize();
      return resign(Uint8Array.from(message), [payer]);
    };
    expect(inspectWire(withLookups([{ writable: 1, readonly: 0 }]), tips).ok).toBe(true);
    expectError(inspectWire(withLookups([{ writable: 0, readonly: 0 }]), tips), 'EMPTY_LOOKUP');
    expectError(inspectWire(withLookups([{ writable: 2, readonly: 1 }, { writable: 0, readonly: 0 }]), tips), 'EMPTY_LOOKUP');
    // 3 static + 253 looked up = 256 accounts: allowed. One more: refused.
    const at256 = withLookups([{ writable: 128, readonly: 125 }]);
    const verdict = okTx(inspectWire(at256, tips));
    expect(verdict.tipLamports).toBe(1n);
    expectError(inspectWire(withLookups([{ writable: 128, readonly: 126 }]), tips), 'TOO_MANY_ACCOUNTS');
    expectError(inspectWire(withLookups([{ writable: 100, readonly: 0 }, { writable: 100, readonly: 54 }]), tips), 'TOO_MANY_ACCOUNTS');
  });
});

// ---- batches ---------------------------------------------------------------------------------

type Expected = { ok: true; signature: string } | { ok: false; code: string; index?: number };

interface Item {
  label: string;
  base64: string;
  expected: Expected;
}

function checkExpected(item: Item, r: InspectResult): void {
  if (item.expected.ok) {
    expect(r.ok, `${item.label}: ${r.ok ? '' : r.error.message}`).toBe(true);
    if (r.ok) expect(r.tx.signature, item.label).toBe(item.expected.signature);
  } else {
    expect(r.ok, item.label).toBe(false);
    if (!r.ok) {
      expect(r.error.code, `${item.label}: ${r.error.message}`).toBe(item.expected.code);
      if (item.expected.index !== undefined) expect(r.error.context.index, item.label).toBe(item.expected.index);
    }
  }
}

/** Batch and async-batch verdicts equal single verdicts, item by item, and the expectations. */
async function expectBatchConsistent(items: Item[]): Promise<void> {
  const texts = items.map((i) => i.base64);
  const singles = texts.map((t) => inspectTransaction(t, tips));
  const batch = inspectTransactions(texts, tips);
  const asyncBatch = await inspectTransactionsAsync(texts, tips);
  expect(batch).toHaveLength(items.length);
  expect(asyncBatch).toHaveLength(items.length);
  items.forEach((item, i) => {
    checkExpected(item, singles[i]!);
    expect(summary(batch[i]!), `batch #${i} ${item.label}`).toEqual(summary(singles[i]!));
    expect(summary(asyncBatch[i]!), `async batch #${i} ${item.label}`).toEqual(summary(singles[i]!));
  });
}

const valid = (label: string, b: BuiltTx): Item => ({
  label,
  base64: b.base64,
  expected: { ok: true, signature: web3Base58(b.signatures[0]!) },
});
const refused = (label: string, bytes: Uint8Array | string, code: string, index?: number): Item => ({
  label,
  base64: typeof bytes === 'string' ? bytes : toBase64(bytes),
  expected: index === undefined ? { ok: false, code } : { ok: false, code, index },
});

function mixedItems(rand: () => number): Item[] {
  const items: Item[] = [];
  const multi = (n: number, v0: boolean, signWith?: (ks: Keypair[]) => Keypair[]): BuiltTx => {
    const ks = keypairs(n);
    const [payer, ...others] = ks as [Keypair, ...Keypair[]];
    const ixs = others.map((k, i) => transfer(k.publicKey, tip(i % 8), 1 + i));
    if (ixs.length === 0) ixs.push(transfer(payer.publicKey, tip(0), 1));
    const opts = { feePayer: payer, signers: others, ...(signWith ? { signWith: signWith(ks) } : {}) };
    return v0 ? v0Tx(ixs, opts) : legacyTx(ixs, opts);
  };
  // Valid: 1, 2 and 3 signers, legacy and v0, nonce, compute budget, lookup table.
  for (let i = 0; i < 4; i++) items.push(valid(`legacy tip ${i}`, simpleTip(tip(i), 1000 + i)));
  for (let i = 0; i < 4; i++) items.push(valid(`v0 tip ${i}`, simpleTipV0(tip(i + 4), 2000 + i)));
  for (let n = 2; n <= 3; n++) {
    items.push(valid(`legacy ${n} signers`, multi(n, false)));
    items.push(valid(`v0 ${n} signers`, multi(n, true)));
  }
  {
    const payer = Keypair.generate();
    items.push(
      valid(
        'durable nonce',
        legacyTx([nonceAdvance(Keypair.generate().publicKey, payer.publicKey), transfer(payer.publicKey, tip(1), 5)], {
          feePayer: payer,
        }),
      ),
    );
    items.push(
      valid('compute budget', v0Tx([...computeBudget(300, 9n), transfer(payer.publicKey, tip(2), 5)], { feePayer: payer })),
    );
    items.push(
      valid(
        'lookup table',
        v0Tx([transfer(payer.publicKey, tip(3), 5), transfer(payer.publicKey, tip(4), 6)], {
          feePayer: payer,
          lookupTables: [makeLookupTable([tip(4)])],
        }),
      ),
    );
  }
  const dup = simpleTip(tip(7), 99);
  items.push(valid('duplicate A', dup), valid('duplicate B', dup));

  // Flipped bytes: blockhash (message) and inside signatures.
  for (let i = 0; i < 4; i++) {
    const b = i % 2 ? simpleTipV0(tip(i)) : simpleTip(tip(i));
    const [s] = layoutOf(b).blockhash;
    items.push(refused(`flipped blockhash ${i}`, flipBit(b.bytes, s + randInt(rand, 32), randInt(rand, 8)), 'SIGNATURE_INVALID', 0));
  }
  for (const n of [2, 3]) {
    for (let sig = 0; sig < n; sig++) {
      const b = multi(n, sig % 2 === 1);
      const [s] = layoutOf(b).signatures[sig]!;
      items.push(refused(`${n}-signer, flipped signature ${sig}`, flipBit(b.bytes, s + randInt(rand, 64), randInt(rand, 8)), 'SIGNATURE_INVALID', sig));
    }
  }
  // Adversarial signatures.
  {
    const b = multi(2, false);
    items.push(refused('malleated s+ℓ, signature 0', assemble([malleate(b.signatures[0]!), b.signatures[1]!], b.message), 'SIGNATURE_INVALID', 0));
    items.push(refused('malleated s+ℓ, signature 1', assemble([b.signatures[0]!, malleate(b.signatures[1]!)], b.message), 'SIGNATURE_INVALID', 1));
    items.push(refused('small-order forgery', smallOrderForgery(tip(0)).bytes, 'SIGNATURE_INVALID', 0));
    for (let i = 0; i < 2; i++) {
      const c = simpleTip(tip(i));
      const sig = Uint8Array.from(c.signatures[0]!);
      sig.set(randomBytesFrom(rand, 32), 0); // random R
      items.push(refused(`random R ${i}`, assemble([sig], c.message), 'SIGNATURE_INVALID', 0));
    }
    const other = simpleTip(tip(1));
    items.push(refused('signature of another transaction', assemble([other.signatures[0]!], simpleTip(tip(1)).message), 'SIGNATURE_INVALID', 0));
  }
  // Unsigned (partially signed): the index is the first signature web3.js left all zeros.
  const unsigned = (label: string, b: BuiltTx): Item => {
    const missing = b.signatures.findIndex(isZero);
    expect(missing).toBeGreaterThanOrEqual(0);
    return refused(label, b.bytes, 'UNSIGNED', missing);
  };
  items.push(unsigned('unsigned fee payer', multi(2, false, (ks) => ks.slice(1))));
  items.push(unsigned('unsigned 2nd of 3', multi(3, true, (ks) => [ks[0]!, ks[2]!])));
  items.push(unsigned('unsigned 3rd of 3', multi(3, false, (ks) => [ks[0]!, ks[1]!])));
  items.push(unsigned('nothing signed', multi(1, true, () => [])));
  // Malformed base64.
  const good = simpleTip(tip(0)).base64;
  items.push(refused('base64 bad char', good.slice(0, 5) + '!' + good.slice(6), 'BASE64_INVALID', 5));
  items.push(refused('base64 wrong length', good.slice(1), 'BASE64_INVALID'));
  items.push(refused('base64 empty', '', 'BASE64_INVALID'));
  items.push(refused('base64 bad padding', 'AA=A', 'BASE64_INVALID'));
  // Wrong version, wrong counts, framing.
  for (const v of [0x81, 0x90, 0xff]) {
    const payer = Keypair.generate();
    const b = v0Tx([transfer(payer.publicKey, tip(0), 1)], { feePayer: payer });
    const message = Uint8Array.from(b.message);
    message[0] = v;
    items.push(refused(`version byte ${v}`, resign(message, [payer]), 'UNSUPPORTED_VERSION'));
  }
  {
    const b = multi(2, true);
    items.push(refused('one signature for two signers', assemble([b.signatures[0]!], b.message), 'SIGNATURE_COUNT_MISMATCH'));
    const c = simpleTip(tip(2));
    items.push(refused('two signatures for one signer', assemble([c.signatures[0]!, c.signatures[0]!], c.message), 'SIGNATURE_COUNT_MISMATCH'));
    items.push(refused('trailing byte', concat(c.bytes, [0]), 'MALFORMED'));
    items.push(refused('truncated', c.bytes.subarray(0, c.bytes.length - 1), 'MALFORMED'));
    items.push(refused('non-minimal signature count', assemble(c.signatures, c.message, [0x81, 0x00]), 'MALFORMED'));
    items.push(refused('too large', legacyTxOfSize(1233).bytes, 'TOO_LARGE'));
  }
  return shuffle(items, rand);
}

describe('batches: every verdict equals the single verdict', () => {
  it('a shuffled mixed batch (valid, tampered, unsigned, malformed, wrong version, 1–3 signers)', async () => {
    const items = mixedItems(mulberry32(0xba7c4));
    expect(items.length).toBeGreaterThanOrEqual(40);
    expect(items.filter((i) => i.expected.ok).length).toBeGreaterThanOrEqual(12);
    await expectBatchConsistent(items);
  });

  it('a batch of 100 valid transactions, then the same with one tampered item', async () => {
    const rand = mulberry32(100);
    const builts = Array.from({ length: 100 }, (_, i) =>
      i % 3 === 0 ? simpleTipV0(tip(i % 8), 1 + i) : simpleTip(tip(i % 8), 1 + i),
    );
    const items = builts.map((b, i) => valid(`valid ${i}`, b));
    await expectBatchConsistent(items);
    const all = inspectTransactions(items.map((i) => i.base64), tips);
    expect(all.every((r) => r.ok)).toBe(true);

    const bad = randInt(rand, 100);
    const target = builts[bad]!;
    const [bh] = layoutOf(target).blockhash;
    const flipped = flipBit(target.bytes, bh + randInt(rand, 32), randInt(rand, 8));
    const withBad = items.map((it, i) => (i === bad ? refused('tampered', flipped, 'SIGNATURE_INVALID', 0) : it));
    await expectBatchConsistent(withBad);
  });

  it('a batch of only tampered signatures, a batch of 1, and an empty batch', async () => {
    const rand = mulberry32(7);
    const tampered = Array.from({ length: 9 }, (_, i) => {
      const b = simpleTip(tip(i % 8));
      return refused(`tampered ${i}`, flipBit(b.bytes, 1 + randInt(rand, 64), randInt(rand, 8)), 'SIGNATURE_INVALID', 0);
    });
    await expectBatchConsistent(tampered);
    await expectBatchConsistent([valid('only', simpleTipV0(tip(3), 17))]);
    await expectBatchConsistent([refused('only bad', 'not base64!', 'BASE64_INVALID')]);
    expect(inspectTransactions([], tips)).toEqual([]);
    expect(await inspectTransactionsAsync([], tips)).toEqual([]);
  });

  it('the batch result carries every field of the single result', () => {
    const payer = Keypair.generate();
    const built = v0Tx([...computeBudget(5, 6n), transfer(payer.publicKey, tip(1), 3)], { feePayer: payer });
    const [r] = inspectTransactions([built.base64], tips);
    const t = okTx(r!);
    expectMatchesWeb3(t, built);
    expect(t.tipLamports).toBe(3n);
    expect(t.computeUnitLimit).toBe(5);
    expect(t.computeUnitPrice).toBe(6n);
    expect(Buffer.from(t.wire!).equals(Buffer.from(built.bytes))).toBe(true);
  });
});

// ---- random input ----------------------------------------------------------------------------

describe('random input never throws and is never accepted', () => {
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

  function neverOk(label: string, f: () => InspectResult): void {
    let r: InspectResult;
    try {
      r = f();
    } catch (e) {
      return expect.fail(`${label}: threw ${String(e)}`);
    }
    if (r.ok) expect.fail(`${label}: accepted`);
  }

  it('random byte strings (seeded)', () => {
    const rand = mulberry32(0x5eed);
    for (let i = 0; i < 3000; i++) {
      const len = i < 300 ? i : randInt(rand, 1300);
      const bytes = randomBytesFrom(rand, len);
      if (i % 4 === 0 && len > 0) bytes[0] = 1 + randInt(rand, 3); // plausible signature count
      neverOk(`bytes #${i}`, () => inspectWire(bytes, tips));
    }
  });

  it('random base64 strings (seeded): valid base64 of random bytes, and random text', () => {
    const rand = mulberry32(0xb64);
    const texts: string[] = [];
    for (let i = 0; i < 1500; i++) texts.push(toBase64(randomBytesFrom(rand, 1 + randInt(rand, 1250))));
    for (let i = 0; i < 1500; i++) {
      const len = randInt(rand, 1700);
      let s = '';
      for (let j = 0; j < len; j++) s += B64[randInt(rand, 64)];
      if (i % 3 === 0) s += '='.repeat(randInt(rand, 3));
      if (i % 7 === 0) s = s.slice(0, randInt(rand, s.length + 1)) + String.fromCharCode(randInt(rand, 0x10000)) + s;
      texts.push(s);
    }
    texts.forEach((t, i) => neverOk(`text #${i}`, () => inspectTransaction(t, tips)));
    for (let i = 0; i < texts.length; i += 500) {
      const chunk = texts.slice(i, i + 500);
      let rs: InspectResult[] = [];
      expect(() => (rs = inspectTransactions(chunk, tips))).not.toThrow();
      expect(rs).toHaveLength(chunk.length);
      expect(rs.some((r) => r.ok)).toBe(false);
    }
  });

  it('random mutations of valid transactions (seeded)', () => {
    const rand = mulberry32(0x3a7e);
    const [payer, s1] = keypairs(2) as [Keypair, Keypair];
    const bases = [
      simpleTip(tip(0)),
      v0Tx([transfer(s1.publicKey, tip(1), 1)], {
        feePayer: payer,
        signers: [s1],
        lookupTables: [makeLookupTable([Keypair.generate().publicKey])],
      }),
    ];
    for (let i = 0; i < 2000; i++) {
      const base = bases[i % bases.length]!;
      let bytes: Uint8Array = Uint8Array.from(base.bytes);
      const edits = 1 + randInt(rand, 4);
      const positions = new Set<number>();
      while (positions.size < edits) positions.add(randInt(rand, bytes.length));
      for (const at of positions) {
        bytes[at] = (bytes[at]! + 1 + randInt(rand, 255)) & 0xff; // always a different value
      }
      if (i % 5 === 0) bytes = bytes.subarray(0, randInt(rand, bytes.length));
      if (i % 7 === 0) bytes = concat(bytes, randomBytesFrom(rand, 1 + randInt(rand, 8)));
      neverOk(`mutation #${i}`, () => inspectWire(bytes, tips));
      neverOk(`mutation #${i} (base64)`, () => inspectTransaction(toBase64(bytes), tips));
    }
  });
});

// Keep the reference framer honest: it must accept what web3.js builds.
describe('test reference framer', () => {
  it('accepts every transaction web3.js builds and agrees with web3.js on the layout', () => {
    const payer = Keypair.generate();
    const cases = [
      simpleTip(tip(0)),
      simpleTipV0(tip(1)),
      v0Tx([transfer(payer.publicKey, tip(2), 1), transfer(payer.publicKey, tip(3), 1)], {
        feePayer: payer,
        lookupTables: [makeLookupTable([tip(3)])],
      }),
      legacyTxOfSize(1232),
    ];
    for (const b of cases) {
      const ref = referenceSanitize(b.bytes);
      if (!ref.ok) expect.fail(`reference refused a web3.js transaction: ${ref.code}`);
      const layout = layoutOf(b);
      expect(ref.view.messageStart).toBe(layout.messageStart);
      expect(ref.view.blockhashStart).toBe(layout.blockhash[0]);
      expect(ref.view.numSignatures).toBe(b.compiled.header.numRequiredSignatures);
      expect(ref.view.instructions.map((i) => [i.dataStart, i.dataEnd])).toEqual(layout.instructionData);
      expect(compactU16(b.compiled.header.numRequiredSignatures)).toEqual([b.bytes[0]]);
    }
    expect(referenceSanitize(concat(cases[0]!.bytes, [0])).ok).toBe(false);
  });
});
