// The codec of each served protocol version: what the endpoints pick by the request's version.
import type { ProtocolVersion } from '../versions.js';
import type { WireCodec } from './codec.js';
import { v0_3 } from '../v0_3/codec.js';
import { v1_0 } from './v1_0.js';

export const CODECS: Readonly<Record<ProtocolVersion, WireCodec>> = { '0.3': v0_3, '1.0': v1_0 };
