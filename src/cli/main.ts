#!/usr/bin/env node
// The `handoff` command: one file per subcommand under src/cli/.
import { Command } from 'commander';
import { VERSION } from '../version.js';
import { serveCommand } from './serve.js';
import { conformanceCommand } from './conformance.js';
import { sendCommand } from './send.js';
import { getCommand } from './get.js';
import { watchCommand } from './watch.js';
import { approveCommand } from './approve.js';
import { answerCommand } from './answer.js';
import { cancelCommand } from './cancel.js';
import { pushCommand } from './push.js';
import { tasksCommand } from './tasks.js';
import { validateCommand } from './validate.js';
import { schemaCommand } from './schema.js';
import { auditCommand } from './audit.js';
import { cardCommand } from './card.js';

const program = new Command('handoff')
  .description('Durable A2A tasks for human-in-the-loop workflow runs')
  .version(VERSION);
program.addCommand(serveCommand());
program.addCommand(conformanceCommand());
program.addCommand(sendCommand());
program.addCommand(getCommand());
program.addCommand(watchCommand());
program.addCommand(approveCommand());
program.addCommand(answerCommand());
program.addCommand(cancelCommand());
program.addCommand(pushCommand());
program.addCommand(tasksCommand());
program.addCommand(validateCommand());
program.addCommand(schemaCommand());
program.addCommand(auditCommand());
program.addCommand(cardCommand());
await program.parseAsync(process.argv);
