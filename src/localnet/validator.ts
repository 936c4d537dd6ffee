/**
 * One validator of the local cluster: an identity keypair and a QUIC TPU server on a loopback
 * port, with its faults. `down` closes the server (nothing listens: connects fail); bringing it
 * back listens on the same port when it is still free (so the address gossip advertised stays
 * right), else on a new one, which `getClusterNodes` then reports.
 *
 * In an executing cluster the advertised `tpuQuic` is the validator's link (`link.ts`): a relay
 * that forwards to the QUIC server on a port of its own, after the path's delay and loss each
 * way. A sink cluster has no links (a benchmark of a sender's throughput must not measure a
 * JavaScript relay): its servers are reached directly, and a link setting is refused.
 */
import { LandfallError } from '../errors.js';
import { faultLink, type Fault } from './faults.js';
import type { Keypair } from './keys.js';
import { describeLink, resolveLink, type LinkRelay, type Links, type LinkSettings, type LinkStats, type ResolvedLink } from './link.js';
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
  /** The link's settings in force ("clean", or like "rtt=80ms,loss=2%"; "direct" in a sink cluster). */
  link: string;
  /** Skips its leader slots (no block). */
  skipSlots: boolean;
  /** Starts its blocks this late, ms (0: on time). */
  lateStartMs: number;
}

export interface ServerLimits {
  maxStreamsPer100ms?: number;
  maxConnectionsPerPeer?: number;
  maxConnectionsPerIpPerMinute?: number;
}

export type TransactionHandler = (validator: Validator, tx: ReceivedTransaction) => void;

export class Validator {
  private server: QuicServer | null = null;
  private relay: LinkRelay | null = null;
  private address = '';
  private fault: Fault = {};
  /** The cluster's link for every validator (`--link`); this validator's fault refines it. */
  private clusterLink: LinkSettings = {};
  /** setFault calls run one after another: a close must finish before the next listen. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly index: number,
    readonly name: string,
    readonly keypair: Keypair,
    private readonly host: string,
    private readonly limits: ServerLimits,
    private readonly onTransaction: TransactionHandler,
    /** The cluster's links (a relay in front of the server), or null in a sink cluster. */
    private readonly links: Links | null,
  ) {}

  private get linked(): boolean {
    return this.links !== null;
  }

  get identity(): string {
    return this.keypair.address;
  }

  get tpuQuic(): string {
    return this.address;
  }

  /** The faults in force. */
  get faults(): Fault {
    return this.fault;
  }

  /** The link in force: the cluster's settings with this validator's fault over them. */
  get link(): ResolvedLink {
    return resolveLink({ ...this.clusterLink, ...faultLink(this.fault) });
  }

  info(): ValidatorInfo {
    return {
      name: this.name,
      identity: this.identity,
      tpuQuic: this.address,
      sandwicher: this.fault.sandwicher === true,
      down: this.fault.down === true,
      link: this.linked ? describeLink(this.link) : 'direct',
      skipSlots: this.fault.skipSlots === true,
      lateStartMs: this.fault.lateStartMs ?? 0,
    };
  }

  /** The link's counters (datagrams each way, dropped, delivered), or null while down or in a sink cluster. */
  linkStats(): LinkStats | null {
    return this.relay ? this.relay.stats() : null;
  }

  /** Replace the cluster-wide link settings this validator's own refine. Applies at once. */
  setClusterLink(settings: LinkSettings): Promise<void> {
    const next = this.queue.then(async () => {
      this.clusterLink = settings;
      this.checkLinked(this.fault);
      await this.relay?.setLink(this.link);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private checkLinked(fault: Fault): void {
    if (this.linked) return;
    const l = resolveLink({ ...this.clusterLink, ...faultLink(fault) });
    if (describeLink(l) !== 'clean') {
      throw new LandfallError('CONFIG_INVALID', `validator ${this.name}: a sink cluster has no links (delay, loss, link): its QUIC servers are reached directly`);
    }
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
    this.checkLinked(fault);
    this.fault = fault;
    if (fault.down) {
      await this.stop();
      return;
    }
    if (!this.server) await this.listen();
    // The server's faults are replaced as a whole; a field left out is off. Delay and loss are
    // the link's (the relay's), not the server's: one model of the path, both directions.
    this.server!.setFaults({
      ...(fault.refuseCode !== undefined && fault.refuseCode !== null && { refuseCode: fault.refuseCode }),
    });
    await this.relay?.setLink(this.link);
  }

  private async listen(): Promise<void> {
    const previousPort = this.address ? Number(this.address.slice(this.address.lastIndexOf(':') + 1)) : 0;
    if (this.linked) {
      // The server on a port of its own; the relay takes the advertised one.
      this.server = this.open(0);
      const [host, port] = splitAddr(this.server.localAddr);
      const target = { host, port };
      try {
        this.relay = await this.links!.open(this.host, previousPort, target, this.link);
      } catch (e) {
        if (previousPort === 0) {
          await this.stop();
          throw new LandfallError('CONFIG_INVALID', `validator ${this.name}: cannot listen on ${this.host}: ${(e as Error).message}`);
        }
        this.relay = await this.links!.open(this.host, 0, target, this.link); // the old port was taken while down
      }
      this.address = this.relay.localAddr;
      return;
    }
    const open = (port: number): QuicServer => this.open(port);
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

  private open(port: number): QuicServer {
    return new QuicServer(
      { bind: `${this.host}:${port}`, identity: this.keypair.seed, ...this.limits },
      (tx: ReceivedTransaction) => this.onTransaction(this, tx),
    );
  }

  /** Close the server and its link (idempotent). */
  async stop(): Promise<void> {
    const server = this.server;
    const relay = this.relay;
    this.server = null;
    this.relay = null;
    // The server first: its closing packets (CONNECTION_CLOSE) go out through the link, so a
    // client learns the connection is gone as it did when it reached the server directly; then
    // the link, once what it carries back has been delivered.
    await server?.close();
    await relay?.close();
  }

  /** Wait for pending fault changes, then close. */
  async close(): Promise<void> {
    await this.queue;
    await this.stop();
  }
}

function splitAddr(addr: string): [string, number] {
  const i = addr.lastIndexOf(':');
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}
