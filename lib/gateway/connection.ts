/**
 * The TYK_* connection settings (TYK_MODE, TYK_URL, TYK_AUTH, TYK_ORG,
 * TYK_TLS_INSECURE_SKIP_VERIFY), parsed in one place for both places that hold them: the
 * process environment (lib/platform/config.ts, the default gateway) and an OperatorContext's
 * `spec.env` and Secret (./targets.ts, other gateways).
 *
 * Contract: pure. `parseConnection` returns the settings and every problem, one per setting,
 * each naming the setting; a problem never quotes TYK_AUTH. The URL loses its trailing
 * slashes; the mode is lower-cased; blank values count as absent.
 */
import { parseFlag, trimmed } from '../platform/guards.js';

export type TykMode = 'ce' | 'pro';

export interface ConnectionSettings {
  mode: TykMode;
  url: string;
  auth: string;
  org?: string;
  insecureSkipVerify: boolean;
}

/** The raw values, by setting name (a boolean is taken for the flag, as `spec.env` holds it). */
export type TykValues = Partial<Record<TykSetting, string | boolean | undefined>>;

export type TykSetting = 'TYK_MODE' | 'TYK_URL' | 'TYK_AUTH' | 'TYK_ORG' | 'TYK_TLS_INSECURE_SKIP_VERIFY';

export interface SettingProblem {
  setting: TykSetting;
  message: string;
}

export function parseConnection(values: TykValues): { settings: ConnectionSettings; problems: SettingProblem[] } {
  const problems: SettingProblem[] = [];
  const problem = (setting: TykSetting, message: string): undefined => {
    problems.push({ setting, message });
    return undefined;
  };
  const mode = (trimmed(values.TYK_MODE) ?? 'ce').toLowerCase();
  if (mode !== 'ce' && mode !== 'pro') problem('TYK_MODE', `must be ce or pro, got "${mode}"`);
  const url = httpUrl(trimmed(values.TYK_URL), problem);
  const auth = trimmed(values.TYK_AUTH);
  if (auth === undefined) problem('TYK_AUTH', 'is required (the gateway secret)');
  const org = trimmed(values.TYK_ORG);
  const insecureSkipVerify = parseFlag(values.TYK_TLS_INSECURE_SKIP_VERIFY);
  if (insecureSkipVerify === null) problem('TYK_TLS_INSECURE_SKIP_VERIFY', `must be true or false, got "${String(values.TYK_TLS_INSECURE_SKIP_VERIFY).trim().toLowerCase()}"`);
  const settings: ConnectionSettings = { mode: mode === 'pro' ? 'pro' : 'ce', url: url ?? '', auth: auth ?? '', insecureSkipVerify: insecureSkipVerify ?? false, ...(org ? { org } : {}) };
  return { settings, problems };
}

function httpUrl(v: string | undefined, problem: (setting: TykSetting, message: string) => undefined): string | undefined {
  if (v === undefined) return problem('TYK_URL', 'is required (the gateway admin URL, e.g. http://tyk-gateway:8080)');
  try {
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return problem('TYK_URL', `must be an http or https URL, got protocol "${u.protocol}"`);
    if (u.username !== '' || u.password !== '') return problem('TYK_URL', 'must not contain credentials; put the secret in TYK_AUTH');
    return v.replace(/\/+$/, '');
  } catch {
    return problem('TYK_URL', 'is not a valid URL');
  }
}
