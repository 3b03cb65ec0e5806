/**
 * AWS Lambda: GET /readyz (lib/triggers/health.ts) behind API Gateway: checks Redis, the API
 * server and the gateway. GET /healthz is ./healthz.ts, which builds nothing.
 */
import { readyz } from '../lib/triggers/health.js';
import { lambdaHttp } from './http.js';

export const handler = lambdaHttp(readyz);
