// Leg 4, push-config SSRF, two-sided (gated on a2a.pushNotifications): through the host-sample
// push-config seam (which MUST use the production guard), an https URL at a private address is
// refused on the ADDRESS arm and an http URL at a public host on the SCHEME arm — each with a
// status ≥ 400 that is not 403/404 (those read as "seam absent") — and, as a positive control, a
// public https URL is NOT refused by the guard (2xx, or 404 for the unknown task run_x).
import { type LegRun, type SuiteContext, ev, pick } from './context.js';
import { gate, seamAbsent, skipSeamAbsent } from './gates.js';
import type { HttpAnswer } from './http.js';

export const PUSH_SEAM = '/v1/host/sample/a2a/tasks/push-config';
/** The probe task does not exist: the guard must answer before any task lookup. */
const PROBE_TASK = 'run_x';

export const ADDRESS_ARM_URL = 'https://10.0.0.5/push';
export const SCHEME_ARM_URL = 'http://push.example.com/push';
export const CONTROL_URL = 'https://caller.example.com/push';

export async function pushSsrfLeg(ctx: SuiteContext, leg: LegRun): Promise<void> {
  gate(ctx, leg, 'pushNotifications');
  const probe = (url: string) =>
    ctx.http.request('POST', ctx.url(PUSH_SEAM), { body: { taskId: PROBE_TASK, url }, auth: true });

  const address = await probe(ADDRESS_ARM_URL);
  const scheme = await probe(SCHEME_ARM_URL);
  if (seamAbsent(address) && seamAbsent(scheme))
    skipSeamAbsent(leg, address, `and ${scheme.status} for ${SCHEME_ARM_URL}: the push-config seam is not mounted`);

  refused(leg, address, 'ADDRESS arm: an https URL at a private address (10.0.0.5) is refused', ADDRESS_ARM_URL);
  refused(leg, scheme, 'SCHEME arm: an http URL at a public host is refused', SCHEME_ARM_URL);

  const control = await probe(CONTROL_URL);
  const ok = (control.status >= 200 && control.status < 300) || control.status === 404;
  leg.expect(
    ok,
    'positive control: a public https URL is not refused by the guard (2xx, or 404 for the unknown task)',
    ev(control, {
      field: 'url',
      expected: `2xx or 404 for ${CONTROL_URL}`,
      actual: `HTTP ${control.status}${errorCode(control)}`,
      note:
        control.status === 400
          ? 'the guard refuses a legitimate public https callback: it is over-broad (or resolves DNS and fails closed)'
          : control.status === 401
            ? 'the request was not authenticated (pass --api-key)'
            : undefined,
    }),
  );
}

function refused(leg: LegRun, res: HttpAnswer, name: string, url: string): void {
  // 401 is the auth layer answering, not the guard: it proves nothing about the URL.
  const ok = res.status >= 400 && res.status !== 401 && res.status !== 403 && res.status !== 404;
  let note: string | undefined;
  if (res.status >= 200 && res.status < 300) note = `the host ACCEPTED ${url}: the guard let it through`;
  else if (res.status === 401)
    note = 'the request was not authenticated, so the guard was never reached (pass --api-key)';
  else if (res.status === 403 || res.status === 404) {
    note = `${res.status} reads as "seam absent", not a refusal: validate the URL before looking up the task (run_x does not exist) and answer 400 (spec pitfalls 1–2)`;
  }
  leg.expect(
    ok,
    name,
    ev(res, {
      field: 'url',
      expected: `a status ≥ 400, not 401/403/404, for ${url}`,
      actual: `HTTP ${res.status}${errorCode(res)}`,
      note,
    }),
  );
}

/** " (error_code)" from an error envelope, if any. */
function errorCode(res: HttpAnswer): string {
  const code = pick(res.json, 'error');
  return typeof code === 'string' ? ` (${code})` : '';
}
