/**
 * Typed access to the native QUIC TPU endpoint (`native/src/quic`) for the local cluster: the
 * server each validator listens with, and the client the RPC node forwards `sendTransaction`
 * with. Only the shapes the cluster relies on are named here.
 */
import { QuicClient, QuicServer } from '../../native/index.js';

export { QuicClient, QuicServer };

/** One transaction as a validator's QUIC server hands it over. */
export interface ReceivedTransaction {
  bytes: Buffer;
  /** The sender's identity (base58) read from its certificate, or null. */
  peer: string | null;
  remoteAddr: string;
  /** ms since the Unix epoch (fractional), stamped when the stream was complete. */
  arrivalMs: number;
}

/** Faults a QUIC server injects on its own socket. */
export interface ServerFaults {
  packetLossPct?: number;
  delayMs?: number;
  refuseCode?: number | null;
}
