// Errors the engine reports to its callers. `code` is the OpenWOP error code
// (docs/protocol/openwop.md#errors); the HTTP layer maps codes to statuses.
export type EngineErrorCode =
  | 'validation_error'
  | 'not_found'
  | 'forbidden'
  | 'run_terminal'
  | 'interrupt_not_found'
  | 'interrupt_already_resolved'
  | 'interrupt_cancelled'
  /** An external event whose fields do not match the correlation the interrupt awaits. */
  | 'correlation_mismatch'
  /** The interrupt of a child run its parent's end cancelled (OpenWOP interrupt-profiles.md §cascade-cancel). */
  | 'interrupt_gone'
  | 'interrupt_withdrawn'
  | 'idempotency_key_mismatch'
  | 'conflict'
  /** The decision was sent for another artifact (or questions) than the interrupt shows now. */
  | 'artifact_changed'
  /** A child run would stand deeper below its top run than HANDOFF_MAX_CHILD_DEPTH allows. */
  | 'child_depth_exceeded'
  /** A run that has ended, or is being cancelled, starts no more child runs. */
  | 'parent_ended';

export class EngineError extends Error {
  override readonly name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}
