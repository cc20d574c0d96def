// Client-side routes under /console (the host serves the same page for each of them).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'inbox' }
  | { page: 'operations' }
  | { page: 'run'; runId: string }
  | { page: 'start'; workflowId?: string }
  | { page: 'decide'; token: string }
  | { page: 'unknown'; path: string };

export function routeOf(path: string): Route {
  if (path === '/console') return { page: 'inbox' };
  if (path === '/console/operations') return { page: 'operations' };
  if (path === '/console/start') return { page: 'start' };
  const start = /^\/console\/start\/([^/]+)$/.exec(path);
  if (start?.[1]) return { page: 'start', workflowId: decodeURIComponent(start[1]) };
  const run = /^\/console\/runs\/([^/]+)$/.exec(path);
  if (run?.[1]) return { page: 'run', runId: decodeURIComponent(run[1]) };
  const decide = /^\/console\/decide\/([^/]+)$/.exec(path);
  if (decide?.[1]) return { page: 'decide', token: decodeURIComponent(decide[1]) };
  return { page: 'unknown', path };
}

export const runPath = (runId: string): string => `/console/runs/${encodeURIComponent(runId)}`;
export const startPath = (workflowId: string): string => `/console/start/${encodeURIComponent(workflowId)}`;

const NAVIGATED = 'handoff:navigated';

export function navigate(path: string): void {
  if (path === location.pathname + location.search) return;
  history.pushState(null, '', path);
  dispatchEvent(new Event(NAVIGATED));
}

/** The current path; re-renders on navigation and on the browser's back and forward. */
export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    addEventListener('popstate', update);
    addEventListener(NAVIGATED, update);
    return () => {
      removeEventListener('popstate', update);
      removeEventListener(NAVIGATED, update);
    };
  }, []);
  return path;
}

interface LinkProps {
  href: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: 'page';
}

/** An ordinary link that navigates in-page; a modified click (new tab, …) is left to the browser. */
export function Link({ href, children, ...attributes }: LinkProps) {
  const onClick = (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...attributes}>
      {children}
    </a>
  );
}
