// The events of a Server-Sent Events body, for the client commands. Parsing is the conformance
// suite's SseParser (WHATWG event-stream rules, chunks split anywhere): one SSE parser in Handoff.
//
//   for await (const ev of sseEvents(res.body)) console.log(ev.id, ev.event, ev.data);
import { type SseFrame, SseParser } from '../../conformance/sse.js';

export type SseEvent = SseFrame;

/** The events of a byte or text stream; an unterminated last event is dropped (as browsers do). */
export async function* sseEvents(body: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const ready: SseEvent[] = [];
  const parser = new SseParser((frame) => ready.push(frame));
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    yield* ready.splice(0);
  }
  parser.feed(decoder.decode());
  yield* ready.splice(0);
  parser.end();
}
