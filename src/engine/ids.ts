// Identifiers: sortable (UUIDv7) and opaque, with a type prefix for humans reading logs.
import { randomFillSync } from 'node:crypto';

export const newRunId = (): string => `run_${uuidv7()}`;
export const newInterruptId = (): string => `int_${uuidv7()}`;
export const newContextId = (): string => `ctx_${uuidv7()}`;

// UUIDv7 exactly as the `uuid` package's v7() lays it out (RFC 9562: 48-bit Unix ms, then a 32-bit
// counter seeded at random on each new millisecond and incremented within one, so ids made in
// the same ms still sort in creation order; then random bits), made here because v7() costs
// ≈ 1.3 µs: a crypto call for every 16 ids (its pool is 256 bytes), and a copy and a byte array per id.
const pool = new Uint8Array(16 * 256);
let poolAt = pool.length;
let lastMs = Number.NEGATIVE_INFINITY;
let seq = 0;
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
/** The low byte of `n` (as the `uuid` package takes it: `n & 0xff`) in hex. */
const h = (n: number): string => HEX[n & 0xff] as string;

function uuidv7(): string {
  if (poolAt > pool.length - 16) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += 16;
  const now = Date.now();
  if (now > lastMs) {
    seq = (pool[r + 6]! << 23) | (pool[r + 7]! << 16) | (pool[r + 8]! << 8) | pool[r + 9]!;
    lastMs = now;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) lastMs++;
  }
  const ms = lastMs;
  return (
    h(ms / 0x10000000000) +
    h(ms / 0x100000000) +
    h(ms / 0x1000000) +
    h(ms / 0x10000) +
    '-' +
    h(ms / 0x100) +
    h(ms) +
    '-' +
    h(0x70 | ((seq >>> 28) & 0x0f)) +
    h(seq >>> 20) +
    '-' +
    h(0x80 | ((seq >>> 14) & 0x3f)) +
    h(seq >>> 6) +
    '-' +
    h(((seq << 2) & 0xff) | (pool[r + 10]! & 0x03)) +
    h(pool[r + 11]!) +
    h(pool[r + 12]!) +
    h(pool[r + 13]!) +
    h(pool[r + 14]!) +
    h(pool[r + 15]!)
  );
}
