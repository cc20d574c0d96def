// The operation scopes a credential may be limited to (OpenWOP auth.md, and Handoff's `audit:read`):
// the names only, so configuration can refuse a key naming an unknown one and the agent card can list
// them. Which operation needs which is src/http/scopes.ts (documented in docs/security.md).

export const SCOPES = {
  manifestRead: 'manifest:read',
  runsCreate: 'runs:create',
  runsRead: 'runs:read',
  runsCancel: 'runs:cancel',
  webhooksManage: 'webhooks:manage',
  approvalsRespond: 'approvals:respond',
  auditRead: 'audit:read',
} as const;

export type Scope = (typeof SCOPES)[keyof typeof SCOPES];

/** Every scope name, in the order above. */
export const OPERATION_SCOPES: readonly Scope[] = Object.values(SCOPES);
