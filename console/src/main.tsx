// The console's entry point: the page the host serves at /console (and the paths under it).
import { render } from 'preact';
import { App } from './app.js';
import { DecideLinkPage } from './decide-link.js';
import { routeOf } from './router.js';

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  // A decision link's page stands outside the signed-in console: its token is its credential.
  const route = routeOf(location.pathname);
  render(route.page === 'decide' ? <DecideLinkPage token={route.token} /> : <App />, root);
}
