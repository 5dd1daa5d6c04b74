/**
 * Outgoing HTTP of the sandbox (webhook notifications, collection verification): a JSON POST over
 * node:http/https, so a target ending in `?skip-cert-verify` can skip certificate validation, which
 * fetch cannot do per request.
 */
import http from 'node:http';
import https from 'node:https';
import type { WebhookAuth } from './state.js';

export interface OutboundResponse {
  status: number;
  text: string;
}

/** Longest response text kept (delivery log, verification answers). */
const MAX_TEXT = 2000;

/** `Authorization: Basic ...` of the organization's webhook credentials; none without them. */
export function basicAuthHeaders(auth: WebhookAuth | null | undefined): Record<string, string> | undefined {
  return auth ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` } : undefined;
}

/**
 * True when the error is the target's certificate failing validation (self-signed, expired, another
 * host's, an unknown issuer): OpenSSL's verify codes as Node reports them, and its host name check.
 */
export function isCertificateError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || /CERT|ISSUER|SIGNATURE|SELF_SIGNED|VERIFY/.test(code));
}

/** True when the URL asks to skip certificate validation (`?skip-cert-verify`). */
const skipsCertVerify = (url: URL): boolean => url.searchParams.has('skip-cert-verify');

/** POSTs JSON; rejects on a network failure or when no answer arrives within timeoutMs. */
export function postJson(
  target: string,
  body: unknown,
  options: { timeoutMs: number; headers?: Record<string, string> },
): Promise<OutboundResponse> {
  const url = new URL(target);
  const payload = JSON.stringify(body);
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'user-agent': 'momo-sandbox',
          ...options.headers,
        },
        ...(url.protocol === 'https:' ? { rejectUnauthorized: !skipsCertVerify(url) } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < MAX_TEXT) text += chunk;
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: text.slice(0, MAX_TEXT) });
        });
        res.on('error', reject);
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(payload);
  });
}
