// `handoff schema`: print the JSON Schema of workflow files (src/engine/workflow/file-schema.ts),
// for an editor, or to write schemas/workflow.schema.json again after a node type changed.
import { Command } from 'commander';
import { workflowFileSchemaText } from '../engine/workflow/file-schema.js';

export function schemaCommand(): Command {
  return new Command('schema')
    .description('print the JSON Schema of workflow files (what "$schema" in a workflow file names)')
    .action(() => {
      process.stdout.write(workflowFileSchemaText());
    });
}
