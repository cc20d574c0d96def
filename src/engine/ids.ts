// Identifiers: sortable (UUIDv7) and opaque, with a type prefix for humans reading logs.
import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';

export const newRunId = (): string => `run_${uuidv7()}`;
export const newInterruptId = (): string => `int_${uuidv7()}`;
export const newContextId = (): string => `ctx_${uuidv7()}`;

/** The namespace of child run ids (a fixed, random UUID: ids derived in it are this host's own). */
const CHILD_RUNS = '6f1b0c2e-4d7a-4c51-9a3e-2b8f5d9c7e10';

/**
 * The run id of a child run, derived from where it is started (`parentRunId:nodeId:ordinal:index`):
 * an execution repeated after a crash derives the same id, so it finds the child instead of
 * starting a second one.
 */
export const childRunId = (key: string): string => `run_${uuidv5(key, CHILD_RUNS)}`;
