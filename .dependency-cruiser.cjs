// The folder table of docs/architecture.md ("The map"), checked by `npm run lint`: each part of
// src/ imports only the parts its row allows, type imports included. The table itself must have no
// cycle (checked below when this file loads), so no two parts of src/ can import each other,
// directly or through others. A change of the table changes this file and the doc together.

/** part → the parts it may import. A part is a folder of src/, or one of the modules named here. */
const MAY_IMPORT = {
  cli: ['host', 'config', 'conformance', 'a2a', 'a2a-model', 'engine', 'peers', 'store', 'telemetry', 'jws'],
  config: ['calls', 'egress', 'peers', 'secrets', 'telemetry'],
  http: [
    ...['a2a', 'a2a-model', 'engine', 'store', 'bus', 'config', 'egress', 'metrics', 'telemetry'],
    ...['peers', 'push', 'notify', 'webhooks', 'jws'],
  ],
  notify: ['engine', 'store', 'push', 'egress', 'metrics', 'config', 'telemetry'],
  a2a: ['a2a-model', 'engine', 'store', 'bus', 'push', 'egress', 'telemetry', 'jws'],
  engine: ['a2a-model', 'store', 'bus', 'calls', 'peers', 'secrets', 'egress', 'metrics', 'telemetry'],
  peers: ['a2a-model', 'bus', 'calls', 'egress', 'store', 'secrets', 'telemetry', 'jws'],
  webhooks: ['store', 'push', 'egress'],
  push: ['store', 'egress', 'metrics', 'telemetry'],
  calls: ['egress', 'secrets', 'telemetry'],
  bus: ['store'],
  metrics: ['store'],
  store: [],
  egress: [],
  secrets: [],
  conformance: [],
  telemetry: [],
  jws: [],
  // The neutral A2A model (src/a2a/model.ts): plain types and constants every layer speaks.
  'a2a-model': [],
};
// Modules at the top of src/ that any part may use (no state, no I/O of their own).
const SHARED = ['version', 'json-guard', 'pass-loop', 'byte-page', 'operation-scopes'];

/** The path pattern of a part. */
const pathOf = (part) => (part === 'a2a-model' ? '^src/a2a/model\\.ts$' : `^src/${part}(/|\\.ts$)`);

assertAcyclic(MAY_IMPORT);

const rules = Object.entries(MAY_IMPORT).map(([from, allowed]) => ({
  name: `${from}-imports`,
  comment: `src/${from} may import only: ${allowed.join(', ') || 'nothing outside it'} (docs/architecture.md, the map)`,
  severity: 'error',
  from: from === 'a2a' ? { path: pathOf(from), pathNot: pathOf('a2a-model') } : { path: pathOf(from) },
  to: {
    path: '^src/',
    pathNot: [...[from, ...allowed].map(pathOf), ...SHARED.map((m) => `^src/${m}\\.ts$`)],
  },
}));

/** Throws naming a cycle of the table, if it has one. */
function assertAcyclic(table) {
  const state = new Map();
  const visit = (part, path) => {
    if (state.get(part) === 'done') return;
    if (state.get(part) === 'open') throw new Error(`the folder table has a cycle: ${[...path, part].join(' → ')}`);
    state.set(part, 'open');
    for (const next of table[part] ?? []) visit(next, [...path, part]);
    state.set(part, 'done');
  };
  for (const part of Object.keys(table)) visit(part, []);
}

module.exports = {
  forbidden: rules,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
