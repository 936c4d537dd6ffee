/**
 * What a node and the admin CLI give the NATS client (issue 20, part 1): the servers, the one way
 * of authenticating the configuration names, and TLS — required (`tls: {}` at least) whenever
 * the configuration asks for it, so a `tls://` server that answers in plaintext is refused
 * rather than used. The credentials and nkey seed files are read at each attempt, so a rotated
 * file is picked up by the next one, and no secret of a file sits in the configuration object.
 */
import { readFileSync } from 'node:fs';
import { credsAuthenticator, nkeyAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import type { NatsConfig } from '../config-nats.js';

/** The connection options of `c` (merge with the caller's own timing options). */
export function natsConnectOptions(c: NatsConfig): ConnectionOptions {
  const o: ConnectionOptions = { servers: c.servers };
  const a = c.auth;
  if (a?.kind === 'user') Object.assign(o, { user: a.user, pass: a.password });
  else if (a?.kind === 'token') o.token = a.token;
  else if (a?.kind === 'creds') o.authenticator = credsAuthenticator(() => readFileSync(a.file));
  else if (a?.kind === 'nkey') o.authenticator = nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(a.file, 'utf8').trim()));
  if (c.tls) {
    o.tls = {};
    if (c.tls.caFile !== null) o.tls.caFile = c.tls.caFile;
    if (c.tls.certFile !== null) o.tls.certFile = c.tls.certFile;
    if (c.tls.keyFile !== null) o.tls.keyFile = c.tls.keyFile;
  }
  return o;
}

/**
 * Why a connection attempt failed, in words an operator can act on (for `/health`, the log and
 * the admin CLI), given the configuration `c` the attempt used. The client's messages carry no
 * secret: the servers it names hold no credentials (taken out of the URLs by the configuration).
 */
export function natsErrorReason(e: unknown, c?: NatsConfig): string {
  const msg = e instanceof Error ? e.message : String(e);
  // A server that requires client certificates says nothing to a connection without one: the
  // client only sees its handshake time out.
  if (c?.tls && c.tls.certFile === null && /^timeout$/i.test(msg)) return 'timeout: no answer over TLS (a server that requires a client certificate never answers a connection without one: check nats.tls.certFile)';
  if (/authorization violation|authentication/i.test(msg)) return `authorization refused by the NATS server (check the NATS credentials given): ${msg}`;
  if (/does not support 'tls'/i.test(msg)) return 'the NATS server does not offer TLS, and the configuration requires it (tls:// or a TLS file): not connecting in plaintext';
  if (/certificate|self.signed|handshake|SSL|TLS/i.test(msg)) return `TLS failed (check the CA and client certificate): ${msg}`;
  if (/permissions violation/i.test(msg)) return `permission refused by the NATS server (check this user's permissions): ${msg}`;
  return msg;
}
