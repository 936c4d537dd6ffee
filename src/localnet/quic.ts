/**
 * The native QUIC TPU endpoint (`native/src/quic`, bound in `native/src/node_quic/`) as the
 * local cluster uses it: the server each validator listens with, the client the RPC node
 * forwards `sendTransaction` with. The one place the cluster reaches into the addon for QUIC.
 */
export { QuicClient, QuicServer } from '../native.js';
export type { QuicFaults, ReceivedTransaction, SendResult, ServerStats } from '../native.js';
