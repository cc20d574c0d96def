// The JSON Schema of a workflow file for editors (schemas/workflow.schema.json, what every shipped
// workflow names in `"$schema"`, and `handoff schema` prints): the definition's shape
// (schemas/workflow-definition.schema.json, which the loader checks first) with each node's
// `config` checked against its type's schema, so an editor completes and checks configs too. It
// is derived from the registered node types, and test/unit/workflow-file-schema.test.ts fails
// while the committed file differs from it.
import definitionSchema from '../../../schemas/workflow-definition.schema.json' with { type: 'json' };
import { NODE_TYPES } from '../nodes/index.js';

type Schema = Record<string, any>;

export const WORKFLOW_FILE_SCHEMA_ID = 'https://handoff.dev/schemas/workflow.schema.json';

/** The schema as the committed file holds it (2-space JSON and a final newline). */
export function workflowFileSchemaText(): string {
  return `${JSON.stringify(workflowFileSchema(), null, 2)}\n`;
}

export function workflowFileSchema(): Schema {
  const schema: Schema = structuredClone(definitionSchema);
  schema.$id = WORKFLOW_FILE_SCHEMA_ID;
  schema.title = 'Handoff workflow file';
  schema.description =
    'A workflow file as Handoff loads it (docs/workflows.md): only id and nodes are required, and each node only ' +
    'id, typeId and the config its type needs. Generated from the node types: `handoff schema` prints it.';
  const node: Schema = schema.$defs.WorkflowNode;
  node.properties.typeId = {
    enum: [...NODE_TYPES.keys()],
    description: 'The node type: docs/workflows.md#node-types.',
  };
  node.allOf = [...NODE_TYPES.values()].map((type) => ({
    if: { properties: { typeId: { const: type.typeId } }, required: ['typeId'] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's `then`, never awaited
    then: { properties: { config: configSchemaOf(type.configSchema) } },
  }));
  return schema;
}

/** A type's config schema as a subschema: `$schema` may only stand at a schema's root. */
function configSchemaOf(configSchema: Schema): Schema {
  const { $schema: _dialect, ...rest } = structuredClone(configSchema);
  return rest;
}
