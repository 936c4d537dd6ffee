/**
 * One validator of the local cluster: an identity keypair and a QUIC TPU server on a loopback
 * port, with its faults. `down` closes the server (nothing listens: connects fail); bringing it
 * back listens on the same port when it is still free (so the address gossip advertised stays
 * right), else on a new one, which `getClusterNodes` then reports.
 */
import { LandfallError } from '../errors.js';
import type { Fault } from './faults.js';
import type { Keypair } from './keys.js';
import { QuicServer, type ReceivedTransaction, type ServerStats } from './quic.js';

/** What the cluster tells about a validator (`Localnet.validators`). */
export interface ValidatorInfo {
  name: string;
  /** Identity public key, base58 (the leader schedule's and `getClusterNodes`' `pubkey`). */
  identity: string;
  /** QUIC TPU address `host:port` (the last one it listened on, while down). */
  tpuQuic: string;
  /** The anti-MEV fixture flag. */
  sandwicher: boolean;
  down: boolean;
}

export interface ServerLimits {
  maxStreamsPer100ms?: number;
  maxConnectionsPerPeer?: number;
  maxConnectionsPerIpPerMinute?: number;
}

export type TransactionHandler = (validator: Validator, tx: ReceivedTransaction) => void;

export class Validator {
  private server: QuicServer | null = null;
  private address = '';
  private fault: Fault = {};
  /** setFault calls run one after another: a close must finish before the next listen. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly index: number,
    readonly name: string,
    readonly keypair: Keypair,
    private readonly host: string,
    private readonly limits: ServerLimits,
    private readonly onTransaction: TransactionHandler,
  ) {}

  get identity(): string {
    return this.keypair.address;
  }

  get tpuQuic(): string {
    return this.address;
  }

  /** The injected delay now in force, ms. */
  get delayMs(): number {
    return this.fault.delayMs ?? 0;
  }

  info(): ValidatorInfo {
    return {
      name: this.name,
      identity: this.identity,
      tpuQuic: this.address,
      sandwicher: this.fault.sandwicher === true,
      down: this.fault.down === true,
    };
  }

  /** The server's own counters (datagrams dropped by the loss fault, streams, connections), or null while down. */
  stats(): ServerStats | null {
    return this.server ? this.server.stats() : null;
  }

  /** Replace this validator's faults (`{}` clears them). Resolves once the server is in the new state. */
  setFault(fault: Fault): Promise<void> {
    const next = this.queue.then(() => this.apply(fault));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async apply(fault: Fault): Promise<void> {
    this.fault = fault;
    if (fault.down) {
      await this.stop();
      return;
    }
    if (!this.server) this.listen();
    // The server's faults are replaced as a whole; a field left out is off.
    this.server!.setFaults({
      ...(fault.packetLossPct !== undefined && { packetLossPct: fault.packetLossPct }),
      ...(fault.delayMs !== undefined && { delayMs: fault.delayMs }),
      ...(fault.refuseCode !== undefined && fault.refuseCode !== null && { refuseCode: fault.refuseCode }),
    });
  }

  private listen(): void {
    const previousPort = this.address ? Number(this.address.slice(this.address.lastIndexOf(':') + 1)) : 0;
    const open = (port: number): QuicServer =>
      new QuicServer(
        { bind: `${this.host}:${port}`, identity: this.keypair.seed, ...this.limits },
        (tx: ReceivedTransaction) => this.onTransaction(this, tx),
      );
    try {
      this.server = open(previousPort);
    } catch (e) {
      if (previousPort === 0) {
        throw new LandfallError('CONFIG_INVALID', `validator ${this.name}: cannot listen on ${this.host}: ${(e as Error).message}`);
      }
      this.server = open(0); // the old port was taken while down: a new one, as a restarted node would get
    }
    this.address = this.server.localAddr;
  }

  /** Close the server (idempotent). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await server.close();
  }

  /** Wait for pending fault changes, then close. */
  async close(): Promise<void> {
    await this.queue;
    await this.stop();
  }
}
