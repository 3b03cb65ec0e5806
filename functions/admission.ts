/** AWS Lambda: POST /admission (lib/triggers/admission.ts), the API server's validating webhook, behind API Gateway. */
import { admission } from '../lib/triggers/admission.js';
import { lambdaHttp } from './http.js';

export const handler = lambdaHttp(admission);
