#!/usr/bin/env node
// Entry point of the `landfall` command: the compiled CLI (built by `npm install`).
import { main } from '../dist/cli/main.js';

const code = await main(process.argv.slice(2));
if (code !== 0) process.exitCode = code;
