// What the host lends node executors that reach outside the run. Each field is optional: a node
// whose service is missing fails with a precise error, and tests give only what they use.
// Additive: each outside-reaching node type adds its own field here.
import type { PeerService } from './a2a-invoke/service.js';

export interface NodeServices {
  /** Other A2A agents (the a2a.invoke node). */
  peers?: PeerService;
}
