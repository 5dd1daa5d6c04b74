/** Every gateway the router serves, by the path segment it is served at (`/ussd/<name>`). */
import { africastalking } from './africastalking.js';
import { arkesel } from './arkesel.js';
import { beem } from './beem.js';
import type { Codec } from './codec.js';
import { hubtel } from './hubtel.js';
import { nalo } from './nalo.js';

export const codecs: readonly Codec[] = [africastalking, hubtel, arkesel, nalo, beem];
export type { Codec, Hop } from './codec.js';
