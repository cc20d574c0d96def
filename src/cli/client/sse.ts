// A Server-Sent Events parser (WHATWG HTML §9.2.6, the parts a JSON-RPC stream uses): fields
// `id`, `event`, `data` (several lines joined by "\n"), comments (`:keepalive`) ignored, `retry`
// ignored, CRLF / LF / CR line ends, chunks split anywhere. Unlike a browser EventSource, an
// event's `id` is reported only when that event carried one, so a caller can tell "no id" apart.
//
//   for await (const ev of sseEvents(res.body)) console.log(ev.id, ev.event, ev.data);

export interface SseEvent {
  /** The `id:` field of this event, if it had one. */
  id?: string;
  /** The `event:` field; absent means "message". */
  event?: string;
  data: string;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private id: string | undefined;
  private event: string | undefined;
  private sawField = false;
  /** A CR ended the last chunk: an LF opening the next one belongs to it. */
  private pendingCr = false;

  /** Feed decoded text; returns the events completed by it. */
  push(text: string): SseEvent[] {
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    const out: SseEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A trailing CR may be the first half of CRLF: wait for the next chunk to decide.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) {
        this.pendingCr = true;
        const line = this.buffer.slice(0, m.index);
        this.buffer = '';
        this.line(line, out);
        break;
      }
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line, out);
    }
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.sawField && this.data.length > 0) {
        const ev: SseEvent = { data: this.data.join('\n') };
        if (this.id !== undefined) ev.id = this.id;
        if (this.event !== undefined) ev.event = this.event;
        out.push(ev);
      }
      this.data = [];
      this.id = undefined;
      this.event = undefined;
      this.sawField = false;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.sawField = true;
    switch (field) {
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        break;
      case 'event':
        this.event = value;
        break;
      default:
        // `retry` and unknown fields are ignored.
        break;
    }
  }
}

/** The events of a byte or text stream; an unterminated last event is dropped (as browsers do). */
export async function* sseEvents(body: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const parser = new SseParser();
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of body) {
    const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    for (const ev of parser.push(text)) yield ev;
  }
  for (const ev of parser.push(decoder.decode())) yield ev;
}
