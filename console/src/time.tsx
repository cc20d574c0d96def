// Times as people read them: "3 minutes ago", "in 2 hours", with the exact time on hover.
import { useEffect, useState } from 'preact/hooks';

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const exact = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

export function relativeTime(iso: string, now: number): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (Math.abs(seconds) < 10) return 'just now';
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size) return relative.format(Math.trunc(seconds / size), unit);
  }
  return 'just now';
}

const listeners = new Set<(now: number) => void>();
let ticker: ReturnType<typeof setInterval> | undefined;

/** The current time, updated every 15 s for every component showing a relative time (one timer). */
function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    listeners.add(setNow);
    ticker ??= setInterval(() => {
      const t = Date.now();
      for (const l of listeners) l(t);
    }, 15_000);
    return () => {
      listeners.delete(setNow);
      if (listeners.size === 0 && ticker !== undefined) {
        clearInterval(ticker);
        ticker = undefined;
      }
    };
  }, []);
  return now;
}

export function Ago({ iso }: { iso: string }) {
  const now = useNow();
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return <span>{iso}</span>;
  return (
    <time dateTime={iso} title={exact.format(date)}>
      {relativeTime(iso, now)}
    </time>
  );
}
