#!/usr/bin/env node
// Entry point of the `landfall` command: the compiled CLI (built by `npm install`).
import { main } from '../dist/cli/main.js';

const argv = process.argv.slice(2);
const code = await main(argv);
// A command that failed, or one that is done once it answers (the admin commands), ends here:
// a connection left half-open behind it (a NATS server that accepts TCP and never answers) must
// not keep the process waiting after its message was printed. `serve`, `localnet`, `demo` and
// `cluster-demo` keep running on their servers and stop on a signal.
if (code !== 0 || argv[0] === 'accounts' || argv[0] === 'keys') process.exit(code);
