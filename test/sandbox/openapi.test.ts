/**
 * The sandbox's OpenAPI 3.1 document: valid by a real OpenAPI validator, served at /sandbox/openapi.json,
 * the same as the committed docs/openapi.json, naming every route the sandbox's express router serves
 * (and no other), and true: real answers of the sandbox, success and error, validate against the schema
 * the document gives for their path, method and status (Ajv, JSON Schema 2020-12).
 */
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, TEST_NUMBERS } from '../../src/sandbox/index.js';
import { openApiDocument } from '../../src/sandbox/openapi.js';
import { openApiText } from '../../src/sandbox/write-openapi.js';
import { silent, startReceiver, startSandbox, type Answer, type RunningSandbox } from './harness.js';

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }> }> }>
  >;
};
const doc = openApiDocument() as unknown as Doc & Record<string, unknown>;

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  rawPath?: string;
  slash?: boolean;
}

/** Every `METHOD /path` the app's router serves, mount paths joined, `:id` written `{id}`. */
function servedRoutes(stack: Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      const path = `${prefix}${layer.route.path}`.replace(/:(\w+)/g, '{$1}');
      return Object.keys(layer.route.methods)
        .filter((m) => m !== '_all')
        .map((m) => `${m.toUpperCase()} ${path}`);
    }
    if (layer.handle.stack)
      return servedRoutes(
        layer.handle.stack,
        layer.slash || layer.rawPath === undefined ? prefix : `${prefix}${layer.rawPath}`,
      );
    return [];
  });
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(structuredClone(doc) as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('is the committed docs/openapi.json (run `npm run openapi` after changing a schema or a route)', () => {
    expect(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')).toBe(openApiText());
  });

  it('names every route the sandbox serves, and only those', () => {
    const sandbox = createSandbox({ logger: silent, autoAdvance: false });
    const served = servedRoutes((sandbox.app as unknown as { router: Router & { stack: Layer[] } }).router.stack);
    void sandbox.close();
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(served.length).toBeGreaterThan(30);
    expect(new Set(documented)).toEqual(new Set(served));
  });
});

/** `openapi#/a/b` with each segment escaped as a JSON pointer in a URI fragment. */
const pointer = (...segments: string[]): string =>
  `openapi#/${segments.map((x) => encodeURIComponent(x.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/')}`;

describe('real answers match the document', () => {
  let sb: RunningSandbox;
  let hooks: Awaited<ReturnType<typeof startReceiver>>;
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(doc, 'openapi');

  beforeAll(async () => {
    sb = await startSandbox({ allowHttpWebhooks: true });
    hooks = await startReceiver();
  });
  afterAll(async () => {
    await sb.close();
    await hooks.close();
  });

  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
  }));

  /** Validates the answer against the schema the document gives for this path, method and status. */
  function check(method: string, url: string, answer: Answer): Answer {
    const path = new URL(url, 'http://x').pathname.replace(/^\/api\/v\d/, '/api');
    const found = templates.find((t) => t.pattern.test(path));
    expect(found, `${method} ${path} is documented`).toBeDefined();
    const operation = doc.paths[found!.template]![method.toLowerCase()];
    // A method the path does not take is a 405 in the error shape of its group.
    const response = operation
      ? operation.responses[String(answer.status)]
      : answer.status === 405
        ? { $ref: path.startsWith('/vending') ? 'VendingError' : 'Error' }
        : undefined;
    expect(response, `${method} ${path} documents ${answer.status}`).toBeDefined();
    // A pointer into the document, so the schema's own `#/components/...` references resolve.
    const at = response!.$ref
      ? ['components', 'responses', response!.$ref.split('/').at(-1)!]
      : ['paths', found!.template, method.toLowerCase(), 'responses', String(answer.status)];
    const validate = ajv.compile({ $ref: pointer(...at, 'content', 'application/json', 'schema') });
    const ok = validate(answer.body);
    expect(ok, `${method} ${path} ${answer.status}: ${JSON.stringify(validate.errors)}`).toBe(true);
    return answer;
  }

  const api = async (method: string, path: string, json?: unknown, key?: string | null) =>
    check(method, `/api${path}`, await sb.api(method, path, { json, key }));
  const control = async (method: string, path: string, json?: unknown) =>
    check(
      method,
      `/sandbox${path}`,
      await sb.raw(`/sandbox${path}`, {
        method,
        headers: {
          authorization: 'Token test-key',
          ...(json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: json === undefined ? undefined : JSON.stringify(json),
      }),
    );
  const vending = async (path: string, json: unknown, headers: Record<string, string>) =>
    check(
      'POST',
      `/vending${path}`,
      await sb.raw(`/vending${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(json),
      }),
    );

  it('main API: contacts, payments, requests, collections, webhooks, events, banks, and their errors', async () => {
    const sarah = TEST_NUMBERS[0]!.phonenumber;
    const contact = await api('POST', '/contacts', {
      phone_number: sarah,
      first_name: 'Sarah',
      last_name: 'Nakato',
      metadata: { sync: '1' },
    });
    await api('GET', `/contacts/${contact.body.id}`);
    await api('PATCH', `/contacts/${contact.body.id}`, { email: 'sarah@example.org' });
    await api('GET', '/contacts?first_name=Sarah');
    await api('POST', '/webhooks', { event: 'payment.status.changed', target: `${hooks.url}/h` });
    const payment = await api('POST', '/payments', {
      phonenumber: sarah,
      amount: '100',
      currency: 'UGX',
      description: 'x',
      metadata: { chat: 'telegram:1' },
    });
    await control('PATCH', '/organization', { approvalRules: [{ currency: 'UGX', above: '1000' }] });
    const big = await api('POST', '/payments', {
      phonenumber: sarah,
      amount: '5000',
      currency: 'UGX',
      description: 'big',
    });
    await control('POST', '/clock/advance', { seconds: 5 });
    await control('POST', `/payments/${big.body.id}/reject`, { reason: 'No' });
    await api('GET', `/payments/${payment.body.id}`);
    await api('GET', '/payments?state=processed');
    const request = await api('POST', '/collectionrequests', {
      phonenumber: sarah,
      amount: '250',
      currency: 'UGX',
      send_instructions: true,
    });
    await api('GET', `/collectionrequests/${request.body.id}`);
    const collection = await control('POST', '/collections', {
      phonenumber: sarah,
      amount: '250',
      currency: 'UGX',
      reference: 'r',
    });
    await api('GET', `/collections/${collection.body.id}`);
    await api('GET', '/collections');
    await api('GET', `/collections?phonenumber=${encodeURIComponent(sarah)}`);
    await control('POST', `/collections/${collection.body.id}/reverse`);
    await api('GET', '/collectionrequests');
    await api('GET', '/webhooks');
    const events = await api('GET', '/events');
    await api('GET', `/events/${events.body.results[0].id}`);
    await api('GET', '/banks');
    await api('GET', '/payments/999');
    await api('POST', '/payments', { amount: 'lots' });
    await api('GET', '/contacts', undefined, 'wrong');
    check('DELETE', '/api/payments', await sb.api('DELETE', '/payments'));
    check('GET', '/api/payments', await sb.api('GET', '/payments', { headers: { accept: 'text/html' } }));
    check(
      'POST',
      '/api/contacts',
      await sb.raw('/api/contacts', {
        method: 'POST',
        headers: { authorization: 'Token test-key', 'content-type': 'text/plain' },
        body: 'hi',
      }),
    );
  });

  it('vending group and controls, and the 503 of maintenance', async () => {
    await vending(
      '/services/namefinder/query',
      { service_type: 'jamb', account_number: '1234567890', product_code: 'utme' },
      { 'x-api-key': 'test-vending-key' },
    );
    const token = { authorization: 'Token test-vending-key' };
    await vending('/services/databundle/bundles', { service_type: 'mtn' }, token);
    await vending('/services/epin/bundles', { service_type: 'mtn' }, token);
    await vending(
      '/services/epin/purchase',
      {
        service_type: 'mtn',
        product_code: 'mtn-100',
        account_number: '1',
        gsmNo: '08031234567',
        amount: 100,
        quantity: 1,
      },
      token,
    );
    await vending(
      '/services/databundle/purchase',
      { service_type: 'mtn', datacode: 1001, phonenumber: '08031234567', amount: 350 },
      token,
    );
    await vending('/services/epin/bundles', { service_type: 'nope' }, token);
    for (const path of ['/clock', '/organization', '/faults', '/deliveries', '/sms', '/purchases', '/balances'])
      await control('GET', path);
    check('GET', '/sandbox/openapi.json', await sb.raw('/sandbox/openapi.json'));
    await control('POST', '/faults', { maintenance: true });
    await api('GET', '/contacts');
    await vending('/services/epin/bundles', { service_type: 'mtn' }, token);
    await control('POST', '/faults', { maintenance: false });
  });

  it('would catch an answer that strays from it', async () => {
    const payment = ajv.compile({ $ref: pointer('components', 'schemas', 'Payment') });
    const real = sb.controls.payments()[0]!;
    expect(payment(real)).toBe(true);
    expect(payment({ ...real, state: 'paid' })).toBe(false);
    expect(payment({ ...real, phone_nos: [{ phonenumber: 5 }] })).toBe(false);
    const { amount: _amount, ...missing } = real;
    expect(payment(missing)).toBe(false);
  });

  it('serves the document without a key, and only to GET', async () => {
    const served = await sb.raw('/sandbox/openapi.json');
    expect(served.status).toBe(200);
    expect(served.body).toEqual(doc);
    expect((await sb.raw('/sandbox/openapi.json', { method: 'POST' })).status).toBe(405);
  });
});
