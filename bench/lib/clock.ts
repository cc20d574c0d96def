// Time as the scenarios take it: epoch milliseconds with sub-ms precision, so a receipt time can be
// compared with a commit timestamp a server wrote (same host clock), and a plain sleep.

/** Epoch milliseconds, sub-ms precision (monotonic within this process). */
export const nowMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
