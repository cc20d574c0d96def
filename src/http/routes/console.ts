// The web console: a static page and its assets, built into dist/console by console/build.mjs and
// read into memory at start. The page holds no data and no secret (it signs in and calls the
// public APIs like any client), so these routes are public. Assets have content-hashed names and
// are cached for good; the page itself is revalidated (ETag) so a new build is picked up.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import { matchesEtag, strongEtag } from '../etag.js';
import { empty, failure, raw, typed } from '../schemas.js';

export const CONSOLE_PATH = '/console';

/** The page's paths: the client routes of the console (each shows the same page). */
export const CONSOLE_PAGES = [
  CONSOLE_PATH,
  `${CONSOLE_PATH}/operations`,
  `${CONSOLE_PATH}/runs/:runId`,
  `${CONSOLE_PATH}/start`,
  `${CONSOLE_PATH}/start/:workflowId`,
  // A decision link's page (src/notify/): the same page, which needs no API key there.
  `${CONSOLE_PATH}/decide/:token`,
];

// Scripts and styles only from this origin, no inline code; the page calls only this origin.
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

interface Built {
  page: StaticFile;
  assets: Map<string, StaticFile>;
}

/** Where the build puts the console: <repository>/dist/console, from src/ (tsx) or dist/src/. */
export function defaultConsoleDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'console');
    if (dirname(dir) === dir) return join(process.cwd(), 'dist', 'console');
  }
}

export function consoleRoutes(app: FastifyInstance, dir = defaultConsoleDir()): void {
  const built = load(dir);
  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!built)
      throw new HttpError(503, 'console_not_built', `the console is not built in ${dir}: run \`npm run build\``);
    return send(req, reply, built.page, 'no-cache');
  };
  const api = typed(app);
  for (const path of CONSOLE_PAGES) api.get(path, { config: { public: true }, schema: pageSchema(path) }, page);
  const asset = {
    operationId: 'getConsoleAsset',
    tags: ['console'],
    summary: 'Web console asset',
    description: 'A script, style sheet or source map of the console, by content-hashed name (cached immutable).',
    params: Type.Object({ file: Type.String() }),
    response: {
      200: raw('The asset.', 'text/javascript', 'text/css', 'application/json'),
      304: empty('Not modified (`If-None-Match`).'),
      404: failure('No such asset (`not_found`).'),
    },
  };
  api.get(`${CONSOLE_PATH}/assets/:file`, { config: { public: true }, schema: asset }, async (req, reply) => {
    const file = built?.assets.get(req.params.file);
    if (!file) throw new HttpError(404, 'not_found', `no console asset ${req.params.file}`);
    // Content-hashed names: a changed file has a new name, so a cached one never goes stale.
    return send(req, reply, file, 'public, max-age=31536000, immutable');
  });
}

const SUMMARIES: Record<string, string> = {
  runs: 'one run',
  start: 'start a run',
  startWorkflow: 'start a run of one workflow',
};

/** The page's documentation: the same HTML at every console path. */
function pageSchema(path: string) {
  const name = path.includes(':workflowId') ? 'startWorkflow' : (path.split('/')[2] ?? 'inbox');
  return {
    operationId: `getConsole${name === 'inbox' ? '' : name[0]?.toUpperCase() + name.slice(1)}`,
    tags: ['console'],
    summary: `Web console: ${SUMMARIES[name] ?? name}`,
    description:
      'The console’s page (the same HTML for every console path; the page routes in the browser). Public: it holds ' +
      'no data, signs in with an API key and calls this API. `Cache-Control: no-cache` with an ETag. A browser ' +
      'opening `/` is redirected here.',
    ...(path.includes(':runId')
      ? { params: Type.Object({ runId: Type.String({ description: 'The run shown.' }) }) }
      : {}),
    ...(path.includes(':workflowId')
      ? { params: Type.Object({ workflowId: Type.String({ description: 'The workflow whose start form is shown.' }) }) }
      : {}),
    ...(path.includes(':token')
      ? { params: Type.Object({ token: Type.String({ description: 'The decision link’s token.' }) }) }
      : {}),
    response: {
      200: raw('The console page.', 'text/html'),
      304: empty('Not modified (`If-None-Match`).'),
      503: failure('The console was not built (`console_not_built`).'),
    },
  };
}

/**
 * A browser opening the host's root is sent to the console. Other clients get what they always
 * got there (a 404 answer; a 401 first without a valid key on a host with keys).
 */
export function isBrowserAtRoot(req: FastifyRequest): boolean {
  return req.method === 'GET' && req.url === '/' && /\btext\/html\b/.test(req.headers.accept ?? '');
}

function send(req: FastifyRequest, reply: FastifyReply, file: StaticFile, cacheControl: string) {
  void reply.headers({ ...SECURITY_HEADERS, 'Cache-Control': cacheControl, ETag: file.etag });
  if (matchesEtag(req.headers['if-none-match'], file.etag)) return reply.status(304).send();
  return reply.type(file.type).send(file.body);
}

function load(dir: string): Built | undefined {
  const index = join(dir, 'index.html');
  if (!existsSync(index)) return undefined;
  const assets = new Map<string, StaticFile>();
  const assetDir = join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) {
      const type = TYPES[extname(name)];
      if (type) assets.set(name, staticFile(readFileSync(join(assetDir, name)), type));
    }
  }
  return { page: staticFile(readFileSync(index), 'text/html; charset=utf-8'), assets };
}

function staticFile(body: Buffer, type: string): StaticFile {
  return { body, type, etag: strongEtag(body) };
}
