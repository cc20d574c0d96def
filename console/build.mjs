// Builds the console into dist/console: content-hashed assets (served as immutable) and the page
// (index.html) that names them. Runs at `npm install` (prepare) and `npm run build`; no network.
//
//   node console/build.mjs
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const out = join(root, 'dist', 'console');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { app: 'console/src/main.tsx', style: 'console/styles.css' },
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
});

/** The output file built from `entry`, by its base name. */
function outputOf(entry) {
  for (const [file, meta] of Object.entries(result.metafile.outputs)) {
    if (meta.entryPoint === entry) return basename(file);
  }
  throw new Error(`esbuild produced nothing for ${entry}`);
}

const shell = readFileSync(join(root, 'console', 'shell.html'), 'utf8')
  .replace('%SCRIPT%', outputOf('console/src/main.tsx'))
  .replace('%STYLE%', outputOf('console/styles.css'));
writeFileSync(join(out, 'index.html'), shell);
