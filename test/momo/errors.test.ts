import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ConnectionError,
  DuplicateRequestError,
  MethodNotAllowedError,
  MomoClient,
  MomoError,
  NotAcceptableError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServiceError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../../src/momo/index.js';
import { ScriptedServer } from './scriptedServer.js';

let server: ScriptedServer;
let client: MomoClient;

beforeAll(async () => {
  server = await ScriptedServer.start();
});
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
  client = new MomoClient({ baseUrl: server.url, apiKey: 'k', maxRetries: 0 });
});

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );
}

describe('errors from answers', () => {
  it('400 with a field map -> ValidationError.fields', async () => {
    server.reply({
      status: 400,
      body: { phonenumber: ['This field may not be blank.'], amount: ['A valid number is required.'] },
    });
    const e = await failure(client.contacts.get(1));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e).toBeInstanceOf(MomoError);
    const v = e as ValidationError;
    expect(v.status).toBe(400);
    expect(v.fields).toEqual({
      phonenumber: ['This field may not be blank.'],
      amount: ['A valid number is required.'],
    });
    expect(v.message).toContain('phonenumber: This field may not be blank.');
  });

  it('400 with only a detail -> ValidationError without fields, detail as message', async () => {
    server.reply({ status: 400, body: { detail: 'claim requires amount' } });
    const e = (await failure(client.contacts.get(1))) as ValidationError;
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.fields).toEqual({});
    expect(e.message).toBe('400: claim requires amount');
  });

  it.each([
    [401, AuthenticationError, 'Invalid token.'],
    [403, PermissionError, 'You do not have permission.'],
    [404, NotFoundError, 'Not found.'],
    [500, ServiceError, 'Server error.'],
    [503, ServiceError, 'Maintenance.'],
  ])('%i -> %o with status, body and request id', async (status, type, detail) => {
    server.reply({ status, body: { detail }, headers: { 'x-request-id': 'req-9' } });
    const e = (await failure(client.payments.get(1))) as MomoError;
    expect(e).toBeInstanceOf(type);
    expect(e.status).toBe(status);
    expect(e.body).toEqual({ detail });
    expect(e.requestId).toBe('req-9');
    expect(e.message).toContain(detail);
  });

  it('409 Duplicate Request Detected! -> DuplicateRequestError', async () => {
    server.reply({ status: 409, body: { detail: 'Duplicate Request Detected! key abc' } });
    const e = await failure(
      client.payments.create(
        { phonenumber: '+256772123456', amount: '10', currency: 'UGX', description: 'x' },
        { key: 'k-errors-85' },
      ),
    );
    expect(e).toBeInstanceOf(DuplicateRequestError);
    expect((e as DuplicateRequestError).status).toBe(409);
  });

  it('409 without the duplicate text -> plain MomoError', async () => {
    server.reply({ status: 409, body: { detail: 'Conflict' } });
    const e = await failure(client.contacts.get(1));
    expect(e).toBeInstanceOf(MomoError);
    expect(e).not.toBeInstanceOf(DuplicateRequestError);
    expect((e as MomoError).status).toBe(409);
  });

  it('429 -> RateLimitError with retryAfterMs', async () => {
    server.reply({ status: 429, body: { detail: 'Request was throttled.' }, headers: { 'retry-after': '42' } });
    const e = (await failure(client.collections.get(1))) as RateLimitError;
    expect(e).toBeInstanceOf(RateLimitError);
    expect(e.retryAfterMs).toBe(42_000);
  });

  it('405, 406 and 415 -> their own classes, each a MomoError with the status and detail', async () => {
    const cases = [
      [405, MethodNotAllowedError, 'Method "POST" not allowed.'],
      [406, NotAcceptableError, 'Could not satisfy the request Accept header.'],
      [415, UnsupportedMediaTypeError, 'Unsupported media type "text/plain" in request.'],
    ] as const;
    for (const [status, kind, detail] of cases) {
      server.reply({ status, body: { detail } });
      const e = (await failure(client.events.get(1))) as MomoError;
      expect(e).toBeInstanceOf(kind);
      expect(e).toBeInstanceOf(MomoError);
      expect(e).toMatchObject({ status, name: kind.name });
      expect(e.message).toContain(detail);
    }
    // Not retried: the request itself was wrong.
    expect(server.requests).toHaveLength(3);
  });

  it('other statuses -> MomoError with the status', async () => {
    server.reply({ status: 418, body: { detail: 'I am a teapot.' } });
    const e = (await failure(client.events.get(1))) as MomoError;
    expect(e.constructor).toBe(MomoError);
    expect(e.status).toBe(418);
  });

  it('a non-JSON error body is kept as text', async () => {
    server.reply({ status: 502, body: '<html>Bad gateway</html>' });
    const e = (await failure(client.events.get(1))) as ServiceError;
    expect(e).toBeInstanceOf(ServiceError);
    expect(e.body).toBe('<html>Bad gateway</html>');
  });

  it('a 2xx answer of the wrong shape -> MomoError naming the field, not a crash', async () => {
    server.reply({ status: 200, body: { id: 'abc', phone_number: 5 } });
    const e = (await failure(client.contacts.get(1))) as MomoError;
    expect(e.constructor).toBe(MomoError);
    expect(e.status).toBe(200);
    expect(e.message).toContain('phone_number');
  });
});

describe('no answer -> ConnectionError, not a MomoError', () => {
  it('a dropped connection', async () => {
    server.reply({ drop: true });
    const e = await failure(client.contacts.get(1));
    expect(e).toBeInstanceOf(ConnectionError);
    expect(e).not.toBeInstanceOf(MomoError);
    expect((e as ConnectionError).message).toContain('GET /api/contacts/1');
  });

  it('no answer within timeoutMs', async () => {
    const impatient = new MomoClient({ baseUrl: server.url, apiKey: 'k', maxRetries: 0, timeoutMs: 50 });
    server.reply({ hang: true });
    const e = (await failure(impatient.contacts.get(1))) as ConnectionError;
    expect(e).toBeInstanceOf(ConnectionError);
    expect(e.message).toContain('no answer within 50 ms');
  });

  it('nothing listening', async () => {
    const closed = await ScriptedServer.start();
    const url = closed.url;
    await closed.close();
    const nowhere = new MomoClient({ baseUrl: url, apiKey: 'k', maxRetries: 0 });
    expect(await failure(nowhere.contacts.get(1))).toBeInstanceOf(ConnectionError);
  });
});
