// What the a2a.invoke node needs from its host (NodeServices.peers): the peer service, defined
// beside its implementation (src/peers/service.ts), so that peers/ imports nothing of the engine.
export type { PeerService, WaitMode } from '../../../peers/service.js';
