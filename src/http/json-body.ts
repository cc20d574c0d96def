// Request bodies: JSON only, and within the depth and character limits of src/json-guard.ts.
import type { FastifyInstance } from 'fastify';
import { inspectJson } from '../json-guard.js';
import { HttpError } from './errors.js';

/**
 * The only bodies the host reads. Anything else (text/plain, forms, multipart: the types a browser
 * may send cross-site without a preflight) is 415 before any work.
 */
export const JSON_MEDIA_TYPES = ['application/json', 'application/a2a+json'];

/**
 * Replace Fastify's JSON parser with the same parser (prototype poisoning refused) followed by the
 * limits check, so no route, validator or hash ever sees a body that breaks them.
 */
export function jsonBodyParser(app: FastifyInstance, maxDepth: number, opts: { allowEmpty?: boolean } = {}): void {
  // Fastify's own parser is callback-style; its type also admits the promise form.
  const parse = app.getDefaultJsonParser('error', 'error') as (
    req: unknown,
    text: string,
    done: (err: Error | null, value?: unknown) => void,
  ) => void;
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(JSON_MEDIA_TYPES, { parseAs: 'string' }, (req, text, done) => {
    // A body-less POST that still says application/json (the A2A clients' cancel and subscribe).
    if (opts.allowEmpty && text === '') return done(null, undefined);
    parse(req, text as string, (err, value) => {
      if (err) return done(err);
      const problem = inspectJson(value, { maxDepth, root: 'body' });
      if (problem) return done(new HttpError(400, 'validation_error', `${problem.path}: ${problem.message}`));
      done(null, value);
    });
  });
}
