// Identifiers: sortable (UUIDv7) and opaque, with a type prefix for humans reading logs.
import { v7 as uuidv7 } from 'uuid';

export const newRunId = (): string => `run_${uuidv7()}`;
export const newInterruptId = (): string => `int_${uuidv7()}`;
export const newContextId = (): string => `ctx_${uuidv7()}`;
