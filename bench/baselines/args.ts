// Shared by the baseline servers: they take exactly one flag, `--port N` (loopback only).
export function parsePort(argv: readonly string[]): number {
  const i = argv.indexOf('--port');
  const port = Number(i >= 0 ? argv[i + 1] : NaN);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    console.error('usage: --port N');
    process.exit(2);
  }
  return port;
}
