/**
 * What a kind's build says of a certificate, without the uploads and removals (certificates.ts,
 * loaded only by a run that has certificates to put or to collect): the text that carries a
 * private key (SecretText, never printed), one certificate to upload, and a record's use of
 * a certificate on a gateway ("Certificate/<gateway>/<id>"). Pure.
 */

/**
 * Text that must never be printed: a PEM with a private key. JSON, util.inspect and String
 * show a placeholder; `reveal()` gives the text to the one place that sends it.
 */
export class SecretText {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  reveal(): string {
    return this.#text;
  }
  toJSON(): string {
    return '[secret]';
  }
  toString(): string {
    return '[secret]';
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return '[secret]';
  }
}

/** One certificate to have in the gateway's store before the API that uses it is written. */
export interface CertificateUpload {
  readonly id: string;
  readonly pem: SecretText;
  /** the Secret it comes from, "namespace/name" */
  readonly secret: string;
}

export const CERTIFICATE_USE_PREFIX = 'Certificate/';

/** The record use naming certificate `id` on gateway `gateway` ("Certificate/<gateway>/<id>"). */
export function certificateUse(gateway: string, id: string): string {
  return `${CERTIFICATE_USE_PREFIX}${gateway}/${id}`;
}
