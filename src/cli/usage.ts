/**
 * The usage text of `landfall` and of each of its commands: what `landfall --help`,
 * `landfall <command> --help` (or `-h`, anywhere after the command) and `landfall help <command>`
 * print. One entry per command, so the overview and each command's page cannot disagree.
 */

/** Agave's limits for an unstaked peer, which the local cluster's QUIC servers enforce by default. */
export const QUIC_DEFAULTS = { streamsPer100ms: 20, connectionsPerPeer: 8, connectionsPerIpPerMinute: 8 } as const;

/** How to reach a NATS deployment that requires credentials and TLS (serve and the admin commands). */
const NATS_AUTH_OPTIONS = `  --nats-user NAME  NATS user (env LANDFALL_NATS_USER); the password from LANDFALL_NATS_PASSWORD,
                    the config file or the URL (nats://user:pass@host), never a flag
  --nats-creds FILE NATS credentials file (JWT + nkey seed; env LANDFALL_NATS_CREDS)
  --nats-nkey FILE  NATS nkey seed file (env LANDFALL_NATS_NKEY); a token: LANDFALL_NATS_TOKEN
  --nats-tls-ca FILE, --nats-tls-cert FILE, --nats-tls-key FILE
                    CA and client certificate (PEM; env LANDFALL_NATS_TLS_CA/_CERT/_KEY);
                    any of them, or a tls:// URL, makes TLS required (never plaintext)
`;

/** The options `accounts` and `keys` share: the same two backends (a data directory or the cluster's bucket). */
function adminOptions(natsNote: string): string {
  return `options:
  --data DIR        data directory (default ./data)
  --nats URLS       write to the cluster's accounts bucket instead (every node mirrors it;
                    env LANDFALL_NATS); ${natsNote}
  --nats-replicas N replicas of the bucket if this command creates it (default: min(3, servers);
                    env LANDFALL_NATS_REPLICAS)
${NATS_AUTH_OPTIONS}  --config FILE     JSON config file
  --json            machine-readable output
  -h, --help        this text
`;
}

export const COMMAND_USAGE = {
  serve: `usage: landfall serve [options]

Start the service.
With no chain node (--rpc), it starts the embedded local cluster too.

options:
  --port N          HTTP port (default 8080; env LANDFALL_PORT)
  --host ADDR       address to bind (default 127.0.0.1; env LANDFALL_HOST)
  --data DIR        data directory: LMDB store, identity, tip keys (default ./data; env LANDFALL_DATA)
  --config FILE     JSON config file (precedence: defaults, file, environment LANDFALL_*, flags;
                    env LANDFALL_CONFIG)
  --rpc URL         the chain node's JSON-RPC URL (env LANDFALL_RPC_URL)
  --ws URL          its WebSocket URL (default: derived from --rpc; env LANDFALL_WS_URL)
  --localnet-rpc-port N
                    the embedded cluster's JSON-RPC port, WebSocket on the next one
                    (default 0: any free pair; npm start uses 8899)
  --nats URLS       join other nodes through NATS JetStream: comma-separated nats:// or tls:// URLs
                    (env LANDFALL_NATS; see docs/several-nodes.md)
  --node-name NAME  this node's name among the nodes (default: the host name; env LANDFALL_NODE)
  --nats-replicas N replicas of the cluster's stream and buckets (default: min(3, servers);
                    env LANDFALL_NATS_REPLICAS)
${NATS_AUTH_OPTIONS}  -h, --help        this text

settings of the config file (--config; docs/operations.md has each one's meaning):
  port, host, dataDir, rpcUrl, wsUrl, nats    as the flags above
  localnet          {"validators":4,"slotMs":400,"rpcPort":0}: the embedded cluster
  logLevel          fatal, error, warn, info (default), debug, trace, silent (env LANDFALL_LOG_LEVEL)
  logSuccesses      summary (default: counted, one line per 10 s) or every (a line each) (env LANDFALL_LOG_SUCCESSES)
  logFile           append the JSON log lines there instead of stdout (env LANDFALL_LOG_FILE)
  metricsToken      bearer token /metrics and /health's details require (env LANDFALL_METRICS_TOKEN)
  adminPort         a second listener for /metrics and /health (env LANDFALL_ADMIN_PORT)
  adminHost         its address (default 127.0.0.1)
  identityPath      QUIC identity keypair file (default <data>/identity.json)
  tipAddresses      the tip addresses (default: eight generated into <data>/tip-accounts.json)
  blocklistPath     anti-MEV validator blocklist file (default: none)
  fanout            leaders each send goes to (default 2)
  ingressThreads    threads serving HTTP on the one port (default: cores - 1, at least 1)
  quicThreads       threads of the QUIC runtime every send shares (default 1; env LANDFALL_QUIC_THREADS)
  ingressNice       niceness of each ingress thread, -20..19 (default -5; 0: the process's; lowering it
                    needs CAP_SYS_NICE; env LANDFALL_INGRESS_NICE)
  quicFirstSendNice niceness of the first sends' own QUIC thread, -20..19 (default -10; 0: the process's;
                    lowering it needs CAP_SYS_NICE; env LANDFALL_QUIC_FIRST_SEND_NICE)
  plans             the plan table (default: starter, growth, pro, whale of docs/api.md)
  lamportsPerPoint  lamports per service point, BP (default 1000)
  retentionDays     days a status record is kept (default 7)
  ackSyncMs         ms between flushes of the acknowledgement log to disk: what a power loss
                    may lose (default 100; 0: every send; env LANDFALL_ACK_SYNC_MS)
  ackReplication    local (default) or quorum: with nats, quorum answers a send only once
                    JetStream stored its record (env LANDFALL_ACK_REPLICATION)
  inFlightPerTps    transactions in flight per account, in seconds of its send rate (default 20)
  tracker           {"push":true,"poll":true}: the confirmation tracker's sources
  tipRentCheck      warn (default), refuse or off: at start against an outside chain, a tip address
                    below the rent-exempt minimum is logged, or stops the start
`,
  accounts: `usage: landfall accounts <subcommand> [options]

Manage accounts directly on the store (safe while the service runs).

subcommands:
  create --name NAME [--plan starter|growth|pro|whale]   create an account and its first key (shown once)
  list                                                    every account: id, plan, points, name
  show ID                                                 one account: the record of /v1/account and its keys
  set-plan ID PLAN                                        move an account to a plan

${adminOptions("show/list then carry no points or usage (they are each node's)")}`,
  keys: `usage: landfall keys <subcommand> --account ID [options]

Manage an account's API keys (stored hashed; a key is shown only when created).

subcommands:
  create --account ID --name NAME   add a key
  revoke --account ID --name NAME   revoke a key (refused at once: 401)
  list --account ID                 the account's keys, with creation and revocation times

${adminOptions('list shows the keys the bucket holds')}`,
  localnet: `usage: landfall localnet [options]

Run the embedded local Solana cluster in the foreground until Ctrl-C.
It serves JSON-RPC, WebSocket, and one QUIC TPU server per validator.

options:
  --validators N                          validators, leaders in turn for 4 slots each (default 4)
  --slot-ms N                             slot duration in ms (default 400)
  --rpc-port N                            JSON-RPC port; WebSocket is the next one (default 8899; 0: any free)
  --faults FILE                           JSON {"v2": {"link": "rtt=150ms,loss=3%", "down": false, "skipSlots": true}}
  --link SPEC                             the path to every validator, e.g. rtt=80ms,jitter=10ms,loss=2%
                                          (also up=/down= one-way delays, loss-up=/loss-down=, burst-enter=/
                                          burst-exit=/burst-loss= bursts, bw=10mbit); change it while running
                                          with 'landfall localnet-link'
  --block-cu N                            compute units a block holds (default 48000000)
  --load TPS                              competing transactions per second filling blocks (default 0)
  --load-fees P,P,…                       their compute-unit prices, micro-lamports, drawn uniformly (default 1000)
  --seed S                                same seed, same identities
  --sink                                  validators count what arrives over QUIC and execute nothing
                                          (JSON-RPC getArrivalCounts reads the counts)
  QUIC limits of every validator, per client IP (Agave's unstaked defaults; a load test sending
  from one IP lifts them):
  --max-streams-per-100ms N               streams a peer may start per 100 ms (default ${QUIC_DEFAULTS.streamsPer100ms}; 0: no limit)
  --max-connections-per-peer N            connections a peer may hold; one more is closed with code 4 (default ${QUIC_DEFAULTS.connectionsPerPeer})
  --max-connections-per-ip-per-minute N   new connections per minute; one more is closed with code 2 (default ${QUIC_DEFAULTS.connectionsPerIpPerMinute}; 0: no limit)
  -h, --help                              this text
`,
  'localnet-link': `usage: landfall localnet-link [options] SPEC

Change the link to a running local cluster's validators (JSON-RPC setLink).
SPEC as localnet's --link, e.g. rtt=150ms,loss=10%; an empty string is a clean link.

options:
  --rpc URL         the cluster's JSON-RPC (default http://127.0.0.1:8899)
  --validator NAME  only this validator's link (default: every validator's)
  --for DURATION    then go back to the previous setting, e.g. 5s
  -h, --help        this text
`,
  demo: `usage: landfall demo [options]

Watch tipped sends land on the local cluster, in a live table.
It starts the local cluster and the service and sends through the typed client; one send in
five fails on chain on purpose, and two validators turn faulty mid-run.

options:
  --duration S      seconds of sending (default 30)
  --rate N          sends per second (default 5)
  --log FILE        keep the service's log there (default: in the temporary data directory, removed at the end)
  -h, --help        this text
`,
  'cluster-demo': `usage: landfall cluster-demo [options]

Run several Landfall nodes as one service, on loopback.
It starts 3 NATS JetStream servers, the local cluster and the nodes, creates a demo account
through the cluster, and prints the URLs and the key.

options:
  --nodes N         Landfall nodes (default 3)
  --slot-ms N       the local cluster's slot duration in ms (default 400)
  -h, --help        this text

nats-server is the pinned version, built into .cache/ on first use (scripts/nats-server.mjs).
`,
} as const;

export type CommandName = keyof typeof COMMAND_USAGE;

export function isCommand(name: string): name is CommandName {
  return Object.hasOwn(COMMAND_USAGE, name);
}

/** The overview's left column: every command, and `help`, padded to the longest. */
const OVERVIEW_ROWS: [string, string][] = [
  ...(Object.keys(COMMAND_USAGE) as CommandName[]).map((c): [string, string] => [c, summary(c)]),
  ['help [COMMAND]', "this text, or a command's"],
  ['--version', "landfall's version"],
];
const COLUMN = Math.max(...OVERVIEW_ROWS.map(([c]) => c.length)) + 2;

/** `landfall --help`: every command, each with its one-sentence summary. */
export const USAGE = `usage: landfall <command> [options]

commands:
${OVERVIEW_ROWS.map(([c, s]) => `  ${c.padEnd(COLUMN)}${s}`).join('\n')}

Run 'landfall <command> --help' for its options.
`;

/** A command's summary: the line after its usage line, which is one whole sentence. */
export function summary(c: CommandName): string {
  return COMMAND_USAGE[c].split('\n')[2]!;
}

/** True when the arguments ask for help: `--help` or `-h` anywhere. */
export function wantsHelp(argv: readonly string[]): boolean {
  return argv.includes('--help') || argv.includes('-h');
}
