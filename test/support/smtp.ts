// A real SMTP server on loopback (the `smtp-server` package) for notification tests: every
// message it accepts is parsed (mailparser) and kept. `refuse` answers the next messages with a
// permanent 550; `hold` keeps them waiting (the DATA reply never comes) until `release`.
//
//   const smtp = await startSmtpServer();
//   env.HANDOFF_SMTP_URL = smtp.url;
//   const [mail] = await smtp.waitFor(1);  mail.to, mail.text, mail.html
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { until } from './until.js';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

export interface SmtpServer {
  url: string;
  mails: ReceivedMail[];
  /** Messages whose DATA arrived, accepted or not. */
  attempts: number;
  refuse(on: boolean): void;
  hold(on: boolean): void;
  waitFor(n: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

/** `auth`: the server requires these credentials (AUTH PLAIN/LOGIN, allowed without TLS on loopback). */
export async function startSmtpServer(opts: { auth?: { user: string; pass: string } } = {}): Promise<SmtpServer> {
  const mails: ReceivedMail[] = [];
  let refusing = false;
  let holding = false;
  const state = { attempts: 0 };
  const auth = opts.auth;
  const server = new SMTPServer({
    authOptional: auth === undefined,
    allowInsecureAuth: true,
    disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    logger: false,
    onAuth(a, _session, callback) {
      if (auth && a.username === auth.user && a.password === auth.pass) callback(null, { user: a.username });
      else callback(new Error('invalid credentials'));
    },
    onData(stream, session, callback) {
      state.attempts++;
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (holding) return; // never answered: the client waits, or dies waiting
        if (refusing) {
          callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }));
          return;
        }
        simpleParser(Buffer.concat(chunks)).then(
          (parsed) => {
            mails.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
            });
            callback();
          },
          (err: Error) => callback(err),
        );
      });
    },
  });
  // A client SIGKILLed mid-conversation (the crash tests) resets its connection: smtp-server
  // reports that as an 'error' event, which without a listener would throw in the test process.
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') throw err;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    get attempts() {
      return state.attempts;
    },
    refuse: (on) => {
      refusing = on;
    },
    hold: (on) => {
      holding = on;
    },
    waitFor: (n) => until(`${n} e-mails`, () => mails.length >= n && mails.slice(0, n), { deadlineMs: 30_000 }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The decision link's token in a message (its decide page link), if it has one. */
export const tokenIn = (text: string): string | undefined =>
  /\/console\/decide\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)/.exec(text)?.[1];
