// A local SMTP server that prints every e-mail it receives, for trying gate notifications without
// a real mail server (README, "A gate that e-mails its approver"):
//
//   npm run mail-sink                      # listens on 127.0.0.1:2525
//   HANDOFF_SMTP_URL=smtp://127.0.0.1:2525 HANDOFF_SMTP_FROM=handoff@localhost npm start
//
// Loopback only, no TLS, no authentication: never a relay, only a printer.
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

const port = Number(process.env.PORT ?? 2525);
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, session, callback) {
    simpleParser(stream).then(
      (mail) => {
        const to = session.envelope.rcptTo.map((r) => r.address).join(', ');
        process.stdout.write(`\n=== To: ${to}\n=== Subject: ${mail.subject ?? ''}\n\n${mail.text ?? ''}\n`);
        callback();
      },
      (err) => callback(err),
    );
  },
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`mail sink on smtp://127.0.0.1:${port}\n`));
