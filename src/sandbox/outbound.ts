/**
 * Outgoing HTTP of the sandbox (webhook notifications, collection verification): a JSON POST over
 * node:http/https, so a target ending in `?skip-cert-verify` can skip certificate validation, which
 * fetch cannot do per request.
 *
 * Anyone with an API key chooses these targets, so the sandbox never calls into a private network: a
 * target's host is resolved, every address it resolves to is checked, and the connection goes to a checked
 * address (the check is the socket's own DNS lookup, so a name cannot resolve to a public address for the
 * check and to a private one for the call). Public unicast addresses are reached, and loopback, so a bot on
 * the same machine gets its notifications; private, link-local (169.254.169.254, the cloud metadata
 * service), carrier-grade NAT, unique-local, multicast, unspecified and reserved addresses are not
 * (IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry).
 */
import dns, { type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { WebhookAuth } from './state.js';

export interface OutboundResponse {
  status: number;
  text: string;
}

/** Longest answer text read: a verification answer is a line; the delivery log keeps none. */
const MAX_TEXT = 2000;

/** `Authorization: Basic ...` of the organization's webhook credentials; none without them. */
export function basicAuthHeaders(auth: WebhookAuth | null | undefined): Record<string, string> | undefined {
  return auth
    ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` }
    : undefined;
}

/**
 * True when the error is the target's certificate failing validation (self-signed, expired, another
 * host's, an unknown issuer): OpenSSL's verify codes as Node reports them, and its host name check.
 */
export function isCertificateError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || /CERT|ISSUER|SIGNATURE|SELF_SIGNED|VERIFY/.test(code))
  );
}

/** Address ranges (ipaddr.js names) an outbound call may reach. */
const REACHABLE = new Set(['unicast', 'loopback']);

/** Why `address` may not be called, or undefined when it may. */
function unreachableReason(address: string): string | undefined {
  const range = ipaddr.process(address).range();
  return REACHABLE.has(range)
    ? undefined
    : `target address ${address} is ${range}: the sandbox does not call private or internal addresses`;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The socket's DNS lookup: every address of the name is resolved and checked; any unreachable one refuses it. */
function checkedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { family: options.family, hints: options.hints, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const refused = addresses.map((a) => unreachableReason(a.address)).find((reason) => reason !== undefined);
    if (refused || addresses.length === 0)
      return callback(
        Object.assign(new Error(refused ?? `no address for ${hostname}`), { code: 'EADDRNOTREACHABLE' }),
        [],
      );
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/** True when the URL asks to skip certificate validation (`?skip-cert-verify`). */
const skipsCertVerify = (url: URL): boolean => url.searchParams.has('skip-cert-verify');

/**
 * POSTs JSON; rejects on a network failure, when no answer arrives within timeoutMs, or when the target is
 * (or resolves to) an address the sandbox does not call.
 */
export function postJson(
  target: string,
  body: unknown,
  options: { timeoutMs: number; headers?: Record<string, string> },
): Promise<OutboundResponse> {
  const url = new URL(target);
  const payload = JSON.stringify(body);
  const transport = url.protocol === 'https:' ? https : http;
  // An address written in the URL is connected to without a lookup: checked here.
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  const refused = isIP(literal) ? unreachableReason(literal) : undefined;
  if (refused) return Promise.reject(new Error(refused));
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        lookup: checkedLookup as never,
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
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(payload);
  });
}
