#!/usr/bin/env node
// The `handoff` command: one file per subcommand under src/cli/.
import { Command } from 'commander';
import { VERSION } from '../http/routes/ops.js';
import { serveCommand } from './serve.js';

const program = new Command('handoff').description('Durable A2A tasks for human-in-the-loop workflow runs').version(VERSION);
program.addCommand(serveCommand());
await program.parseAsync(process.argv);
