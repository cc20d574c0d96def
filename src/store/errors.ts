// Errors the store reports. Callers decide what they mean at their layer.

/** The row changed since it was read (optimistic concurrency); the caller may re-read and retry. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
}
