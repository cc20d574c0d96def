// A Server-Sent Events frame parser (WHATWG "event stream interpretation"), small enough to carry
// here so the shipped CLI needs no SSE dependency. Feed it decoded text in any chunking; it calls
// back once per dispatched event. Comments (": keepalive") and `retry:` are ignored.
//
//   const p = new SseParser((e) => events.push(e));
//   p.feed('id: 3\ndata: {"a":1}\n\n');   // → { id: '3', data: '{"a":1}' }

export interface SseFrame {
  /** The `id:` field of this frame, if it had one. */
  id?: string;
  /** The `event:` field of this frame, if it had one. */
  event?: string;
  /** The `data:` lines joined with "\n". */
  data: string;
}

export class SseParser {
  private buffer = '';
  private started = false;
  private data: string[] = [];
  private id: string | undefined;
  private event: string | undefined;

  constructor(private readonly onFrame: (frame: SseFrame) => void) {}

  feed(chunk: string): void {
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    this.buffer += chunk;
    let start = 0;
    for (;;) {
      const cr = this.buffer.indexOf('\r', start);
      const lf = this.buffer.indexOf('\n', start);
      if (cr === -1 && lf === -1) break;
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A CR at the very end may be the first half of CRLF: wait for the next chunk.
        if (cr === this.buffer.length - 1) break;
        end = cr;
        next = this.buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      } else {
        end = lf;
        next = lf + 1;
      }
      this.line(this.buffer.slice(start, end));
      start = next;
    }
    this.buffer = this.buffer.slice(start);
  }

  /** The stream ended: an unterminated last event is discarded, as the spec says. */
  end(): void {
    this.buffer = '';
    this.reset();
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
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
        // retry and unknown fields: nothing to do for a one-shot reader
        break;
    }
  }

  private dispatch(): void {
    if (this.data.length > 0) {
      const frame: SseFrame = { data: this.data.join('\n') };
      if (this.id !== undefined) frame.id = this.id;
      if (this.event !== undefined && this.event !== '') frame.event = this.event;
      this.onFrame(frame);
    }
    this.reset();
  }

  private reset(): void {
    this.data = [];
    this.id = undefined;
    this.event = undefined;
  }
}
