/** AWS Lambda: POST /resync (lib/triggers/resync.ts) behind API Gateway. */
import { resync } from '../lib/triggers/resync.js';
import { lambdaHttp } from './http.js';

export const handler = lambdaHttp(resync);
