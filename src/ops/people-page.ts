/**
 * The People page: who may use the product, and the operators.
 *
 * - `GET /ops/people`: everyone in the directory (name, role, status, PIN state, identities) with the forms that
 *   change them, the policy's `*` rules, the operators; `GET /ops/people/<id>`: one person with every change
 *   made to them (who, when, before and after, from the journal).
 * - `GET /ops/people.json`: the same as data.
 * - `POST /ops/people` (name, role, ussd, whatsapp, telegram, slack, preferred): adds a person.
 * - `POST /ops/people/<id>/suspend`, `/reactivate`, `/role` (role), `/unlock-pin`, `/reset-pin`, `/link-code`: the
 *   changes. A reset makes a one-time code, `/link-code` a link code for the person to send to the bot from a
 *   chat account (src/people/link.ts); each goes to the person (src/people/code-delivery.ts: an SMS to their
 *   number, else shown at their next USSD dial) and never to the operator, who reads only where it went ("code
 *   sent to +256 77… 460 by SMS"); kept only as a hash or digest. A person without a number gets no code (409).
 * - `POST /ops/operators` (name, password): adds an operator (the password strength rule: 400 with the reason);
 *   `POST /ops/operators/<name>/suspend`, `/reactivate`, `/remove`: a suspended or removed operator's sign-ins end
 *   at their next request and their sign-in is refused; removed is for good.
 * - Dual control (OPS_DUAL_CONTROL, src/people/requests.ts): a change it names answers 202 and waits, as a
 *   request listed on the page, for a second operator: `POST /ops/requests/<id>/approve` (then it takes effect,
 *   made as the approver naming the asker) or `/reject` (reason). Any signed-in operator with the page's CSRF
 *   token may decide, but never approve their own (403 with the reason; the table refuses it too); an unknown
 *   request is a 404, one decided or expired a 409; nothing changes then.
 *
 * Who may call them: the /ops access check (access.ts) lets in signed-in operators, Basic auth readers and, for
 * people.json, the OPS_TOKEN; every POST also needs the session's CSRF token and this site's Origin (a form
 * posted from another site, or by a Basic-auth or token caller, is refused with 403 and changes nothing). Bad
 * values get a 400 naming them; an identity that belongs to someone already, a 409.
 * Every change is recorded with the operator's name (src/people/people.ts) and applies in this process at once,
 * in the others within 2 seconds. The operators' audit (src/ops/audit.ts) gets a row for each request asked
 * (`request.made`), approved or rejected (`request.approved`, `request.rejected`) and each change made alone
 * (`change`); a request whose row cannot be written is withdrawn, an approval's is marked failed (nothing takes
 * effect unaudited).
 */
import type { Express, Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import type { AccessPolicy } from '../conversation/calls/access-policy.js';
import type { Channel } from '../conversation/types.js';
import type { Store } from '../store/types.js';
import { readBody } from '../http/body.js';
import type { Logger } from '../log.js';
import { CHANNELS } from '../people/directory.js';
import { DUAL_CONTROL_ACTIONS, type DualControlAction } from '../config.js';
import { OPERATOR_NAME, operatorPasswordHash } from '../people/operators.js';
import {
  LINK_CODE_MINUTES,
  PeopleError,
  PIN_CODE_HOURS,
  type People,
  type PersonChange,
  type PersonView,
} from '../people/people.js';
import type { OperatorRequest } from '../people/requests.js';
import { mayMakeLinkCode } from '../people/link.js';
import { numberOf, sentLine, type CodeDelivery } from '../people/code-delivery.js';
import type { PeopleDirectory } from '../people/start.js';
import type { OpsAccess, SignIn } from './access.js';
import { actorOf, viaOf, type OperatorAudit } from './audit.js';
import { html, page, unavailable, when, type Html } from './html.js';

export interface PeoplePageOptions {
  directory: PeopleDirectory;
  policy: AccessPolicy;
  /** Where wrong PIN tries are counted (an unlock clears them). */
  store: Store;
  logger: Logger;
  /** The changes that wait for a second operator (OPS_DUAL_CONTROL); none when unset. */
  dualControl?: ReadonlySet<DualControlAction>;
  /** Where one-time codes and link codes go: to the person, never to the operator's screen. */
  codes: CodeDelivery;
  /** The operators' audit: every request asked, approved or rejected, and every change made alone. */
  audit?: OperatorAudit;
}

/** The changes this page asks and decides (a reconciliation's correction is decided on /ops/reconciliation). */
type PeopleAction = Exclude<DualControlAction, 'correct'>;
const PEOPLE_ACTIONS: readonly PeopleAction[] = DUAL_CONTROL_ACTIONS.filter((a): a is PeopleAction => a !== 'correct');

/** How an identity is written on each channel. */
const IDENTITY: Record<Channel, { pattern: RegExp; hint: string }> = {
  ussd: { pattern: /^\+[1-9]\d{7,14}$/, hint: 'a phone number in + form, e.g. +256772123456' },
  whatsapp: { pattern: /^\+?[1-9]\d{7,14}$/, hint: 'the wa_id: the number in digits, e.g. 256772123456' },
  telegram: { pattern: /^[1-9]\d{0,19}$/, hint: 'the numeric Telegram user id' },
  slack: { pattern: /^[UW][A-Z0-9]{2,20}$/, hint: 'the Slack user id, e.g. U0123ABCD' },
};
const PERSON_ID = /^[\w.@:+-]{1,80}$/;
const clean = (text: string): string => text.replace(/[\p{Cc}\p{Cf}]/gu, '').trim();

const addForm = z
  .object({
    csrf: z.string(),
    name: z.string().transform(clean).pipe(z.string().min(1, 'a name').max(80, 'at most 80 characters')),
    role: z.string(),
    ussd: z.string().max(40).optional(),
    whatsapp: z.string().max(40).optional(),
    telegram: z.string().max(40).optional(),
    slack: z.string().max(40).optional(),
    preferred: z.enum(['', ...CHANNELS] as [string, ...string[]]).optional(),
  })
  .strict();

export function addPeopleRoutes(app: Express, access: OpsAccess, o: PeoplePageOptions): void {
  const form = readBody('form', { limit: '8kb' }) as RequestHandler;
  const roleNames = () => Object.keys(o.policy.roles());

  /** Runs a change for a signed-in operator with a valid CSRF token; answers 400/404/409 with the reason. */
  const change = (work: (req: Request, res: Response, by: string) => Promise<() => void>): RequestHandler[] => [
    form,
    async (req, res, next) => {
      const operator = access.requireCsrf(req, res);
      if (!operator) return;
      if (o.directory.readOnly) {
        res
          .status(409)
          .type('html')
          .send(
            page('People', '/ops/people', html`<p class="reasons">${o.directory.readOnly}. Nothing was changed.</p>`),
          );
        return;
      }
      try {
        const answer = await work(req, res, `operator:${operator}`);
        // In use in this process before the operator is answered; the others within their next look.
        await o.directory.changed();
        answer();
      } catch (err) {
        if (err instanceof PeopleError) {
          res
            .status(err.status)
            .type('html')
            .send(
              page(
                'People',
                '/ops/people',
                html`<p class="reasons">${err.message}. Nothing was changed.</p>
                  <p><a href="/ops/people">Back to People</a></p>`,
              ),
            );
          return;
        }
        next(err);
      }
    },
  ];
  const personId = (req: Request): string => {
    const id = String(req.params.id ?? '');
    if (!PERSON_ID.test(id)) throw new PeopleError('no such person', 404);
    return id;
  };

  app.get('/ops/people.json', async (_req, res, next) => {
    try {
      const found = await snapshot(o);
      try {
        // Every person's numbers: recorded before it is sent, or not sent.
        await o.audit?.record(actorOf(res), 'export', {
          export: 'people.json',
          rows: found.persons.length,
          via: viaOf(res),
        });
      } catch (err) {
        o.logger.warn({ err }, 'ops: the audit could not be written');
        res.status(503).json({ detail: unavailable('The audit could not be written') });
        return;
      }
      res.json(found);
    } catch (err) {
      next(err);
    }
  });

  app.get('/ops/people', async (_req, res, next) => {
    try {
      const data = await snapshot(o);
      res
        .type('html')
        .send(page('People', '/ops/people', listPage(data, res.locals.signIn as SignIn | undefined, roleNames())));
    } catch (err) {
      next(err);
    }
  });

  app.get('/ops/people/:id', async (req, res, next) => {
    try {
      const id = personId(req);
      const opened = await o.directory.open();
      const person = opened ? await opened.people.get(id) : undefined;
      if (!opened || !person) {
        res
          .status(404)
          .type('html')
          .send(page('People', '/ops/people', html`<p class="reasons">No such person in the database.</p>`));
        return;
      }
      const history = await opened.people.history(id);
      res
        .type('html')
        .send(
          page(
            person.name,
            '/ops/people',
            personPage(person, history, res.locals.signIn as SignIn | undefined, roleNames()),
          ),
        );
    } catch (err) {
      if (err instanceof PeopleError) {
        res
          .status(err.status)
          .type('html')
          .send(page('People', '/ops/people', html`<p class="reasons">${err.message}</p>`));
        return;
      }
      next(err);
    }
  });

  /** The change a request names, made as `by` (the approver naming the asker, or the operator alone). */
  type Opened = NonNullable<Awaited<ReturnType<PeopleDirectory['open']>>>;
  type Done = (res: Response) => void;
  const toPerson =
    (id: string): Done =>
    (res) =>
      res.redirect(303, `/ops/people/${encodeURIComponent(id)}`);
  const APPLY: Record<
    PeopleAction,
    (
      opened: Opened,
      target: string | null,
      payload: Record<string, unknown>,
      by: string,
      operator: string,
    ) => Promise<Done>
  > = {
    'add-person': async (opened, _target, payload, by) => {
      const person = await opened.people.add(by, payload as unknown as Parameters<People['add']>[1]);
      o.logger.info({ person: person.id, by }, 'people: person added');
      return toPerson(person.id);
    },
    role: async (opened, target, payload, by) => {
      await opened.people.setRole(by, target!, String(payload.role));
      return toPerson(target!);
    },
    reactivate: async (opened, target, _payload, by) => {
      await opened.people.setStatus(by, target!, 'active');
      return toPerson(target!);
    },
    'reset-pin': async (opened, target, _payload, by) => {
      const before = await opened.people.get(target!);
      if (!before) throw new PeopleError('no such person', 404);
      // No number, no reset: a code that could reach nobody would leave the person without a PIN.
      numberOf(before);
      const { code, person } = await opened.people.resetPin(by, target!);
      o.logger.info({ person: target, by, change: 'reset-pin' }, 'people: person changed');
      // To the person alone; never shown here, never logged, kept only as a hash.
      const sent = await o.codes.send(person, 'pin', code, { hours: PIN_CODE_HOURS });
      return (res) =>
        res.type('html').send(
          page(
            person.name,
            '/ops/people',
            html`<h2>PIN reset for ${person.name}</h2>
              <p data-testid="code-sent">One-time ${sentLine(sent)}.</p>
              <p>
                ${person.name} types it at their next dial, then chooses a new PIN; it works once, for ${PIN_CODE_HOURS}
                hours. Until then they cannot move money. Nobody, operators included, should ask them for it.
              </p>
              <p><a href="/ops/people/${encodeURIComponent(person.id)}">Back to ${person.name}</a></p>`,
          ),
        );
    },
    'link-code': async (opened, target, _payload, by) => {
      const id = target!;
      const person = await opened.people.get(id);
      if (!person) throw new PeopleError('no such person', 404);
      numberOf(person);
      if (!(await mayMakeLinkCode(opened.limits, id)))
        throw new PeopleError('too many link codes made for this person; try again in 15 minutes', 409);
      const code = await opened.people.linkCode(id);
      o.logger.info({ person: id, by, change: 'link-code' }, 'people: link code made');
      // To the person alone: whoever sends it to the bot becomes them, so it is never shown here or logged.
      const sent = await o.codes.send(person, 'link', code, { minutes: LINK_CODE_MINUTES });
      return (res) =>
        res.type('html').send(
          page(
            person.name,
            '/ops/people',
            html`<h2>Link code for ${person.name}</h2>
              <p data-testid="code-sent">Link ${sentLine(sent)}.</p>
              <p>
                ${person.name} sends it to the bot from the chat account to link (Telegram <code>/link</code>, WhatsApp
                <code>link</code>, Slack <code>/momo link</code>, then the code). It works once, for
                ${LINK_CODE_MINUTES} minutes.
              </p>
              <p><a href="/ops/people/${encodeURIComponent(id)}">Back to ${person.name}</a></p>`,
          ),
        );
    },
    'add-operator': async (opened, _target, payload, by, operator) => {
      // Added by the operator who made it take effect (the database checks that one is an active operator).
      await opened.operators.addHashed(operator, {
        name: String(payload.name),
        passwordHash: String(payload.passwordHash),
      });
      o.logger.info({ by }, 'people: operator added');
      return (res) => res.redirect(303, '/ops/people#operators');
    },
    'suspend-operator': async (opened, target, _payload, by) => {
      await opened.operators.setStatus(by, target!, 'suspended');
      return (res) => res.redirect(303, '/ops/people#operators');
    },
    'reactivate-operator': async (opened, target, _payload, by) => {
      await opened.operators.setStatus(by, target!, 'active');
      return (res) => res.redirect(303, '/ops/people#operators');
    },
    'remove-operator': async (opened, target, _payload, by) => {
      await opened.operators.setStatus(by, target!, 'removed');
      return (res) => res.redirect(303, '/ops/people#operators');
    },
  };

  /**
   * A change under dual control when OPS_DUAL_CONTROL names it: written as a pending request (202, a page that
   * says so) for a second operator to approve; else made at once.
   */
  const gated = (
    action: PeopleAction,
    prepare: (req: Request, opened: Opened) => Promise<{ target: string | null; payload: Record<string, unknown> }>,
  ) =>
    change(async (req, res, by) => {
      const opened = (await o.directory.open())!;
      const { target, payload } = await prepare(req, opened);
      const name = by.replace(/^operator:/, '');
      if (!o.dualControl?.has(action)) {
        const done = await APPLY[action](opened, target, payload, by, name);
        await o.audit?.record(name, 'change', { change: action, target: target ?? String(payload.name ?? '') });
        return () => done(res);
      }
      const asked = await opened.requests.ask(name, action, target, payload);
      o.logger.info({ request: asked.id, action, target, by }, 'people: change asked, waiting for a second operator');
      try {
        await o.audit?.record(name, 'request.made', {
          request: asked.id,
          change: action,
          target,
          what: describe(asked),
        });
      } catch (err) {
        // Nothing waits unaudited: the request is withdrawn (by its asker, which the table allows).
        await opened.requests.decide(asked.id, name, false, 'the audit row could not be written').catch(() => {});
        throw err;
      }
      return () =>
        res
          .status(202)
          .type('html')
          .send(
            page(
              'People',
              '/ops/people',
              html`<h2>Waiting for a second operator</h2>
                <p data-testid="request">
                  Asked: ${describe(asked)} (request <code>${asked.id}</code>). It takes effect once another operator
                  approves it on the People page; you cannot approve your own.
                </p>
                <p><a href="/ops/people#requests">Back to People</a></p>`,
            ),
          );
    });

  app.post(
    '/ops/people',
    ...gated('add-person', async (req) => {
      const parsed = addForm.safeParse(req.body ?? {});
      if (!parsed.success)
        throw new PeopleError(parsed.error.issues.map((i) => `${i.path.join('.') || 'form'}: ${i.message}`).join('; '));
      const input = parsed.data;
      if (!roleNames().includes(input.role)) throw new PeopleError(`role is one of ${roleNames().join(', ')}`);
      const identities: Array<{ channel: Channel; userId: string }> = [];
      for (const channel of CHANNELS) {
        const value = clean(input[channel] ?? '');
        if (!value) continue;
        if (!IDENTITY[channel].pattern.test(value)) throw new PeopleError(`${channel}: ${IDENTITY[channel].hint}`);
        identities.push({ channel, userId: value });
      }
      if (identities.length === 0)
        throw new PeopleError('give at least one identity (USSD, WhatsApp, Telegram or Slack)');
      const preferred = input.preferred ? identities.find((i) => i.channel === input.preferred) : undefined;
      if (input.preferred && !preferred) throw new PeopleError(`the preferred chat ${input.preferred} has no identity`);
      return {
        target: null,
        payload: {
          name: input.name,
          role: input.role,
          identities,
          ...(preferred && preferred.channel !== 'ussd'
            ? { preferredChat: `${preferred.channel}:${preferred.userId.replace(/^\+/, '')}` }
            : {}),
        },
      };
    }),
  );

  const simple = (path: string, run: (id: string, by: string, req: Request) => Promise<unknown>) =>
    app.post(
      `/ops/people/:id/${path}`,
      ...change(async (req, res, by) => {
        const id = personId(req);
        await run(id, by, req);
        o.logger.info({ person: id, by, change: path }, 'people: person changed');
        await o.audit?.record(by.replace(/^operator:/, ''), 'change', { change: path, target: id });
        return () => res.redirect(303, `/ops/people/${encodeURIComponent(id)}`);
      }),
    );
  /** A change of one existing person, under dual control when the setting names it. */
  const ofPerson = (path: string, action: PeopleAction, payload: (req: Request) => Record<string, unknown>) =>
    app.post(
      `/ops/people/:id/${path}`,
      ...gated(action, async (req, opened) => {
        const id = personId(req);
        const person = await opened.people.get(id);
        if (!person) throw new PeopleError('no such person', 404);
        // A code goes to the person's number: a request that could reach nobody is not asked.
        if (action === 'reset-pin' || action === 'link-code') numberOf(person);
        return { target: id, payload: payload(req) };
      }),
    );
  simple('suspend', async (id, by) => (await o.directory.open())!.people.setStatus(by, id, 'suspended'));
  ofPerson('reactivate', 'reactivate', () => ({}));
  ofPerson('role', 'role', (req) => {
    const role = String((req.body as Record<string, unknown>).role ?? '');
    if (!roleNames().includes(role)) throw new PeopleError(`role is one of ${roleNames().join(', ')}`);
    return { role };
  });
  simple('unlock-pin', async (id, by) => {
    // The lock and the wrong tries counted go together (people.ts unlockPin).
    await (await o.directory.open())!.people.unlockPin(by, id);
  });
  ofPerson('reset-pin', 'reset-pin', () => ({}));
  ofPerson('link-code', 'link-code', () => ({}));

  app.post(
    '/ops/operators',
    ...gated('add-operator', async (req, opened) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const account = operatorPasswordHash(
        typeof body.name === 'string' ? body.name.trim() : '',
        typeof body.password === 'string' ? body.password : '',
      );
      if (await opened.operators.exists(account.name))
        throw new PeopleError(`there is already an operator ${account.name}`, 409);
      return { target: account.name, payload: account };
    }),
  );

  for (const act of ['suspend', 'reactivate', 'remove'] as const)
    app.post(
      `/ops/operators/:name/${act}`,
      ...gated(`${act}-operator`, async (req, opened) => {
        const name = String(req.params.name ?? '');
        if (!OPERATOR_NAME.test(name) || !(await opened.operators.exists(name)))
          throw new PeopleError('no such operator', 404);
        return { target: name, payload: {} };
      }),
    );

  /** A second operator's decision on a request: approve (then the change is made) or reject, with a reason. */
  const decision = (approve: boolean) =>
    change(async (req, res, by) => {
      const id = String(req.params.id ?? '');
      if (!/^r-[\w-]{1,40}$/.test(id)) throw new PeopleError('no such request', 404);
      const opened = (await o.directory.open())!;
      const reason =
        typeof (req.body as Record<string, unknown>).reason === 'string'
          ? String((req.body as Record<string, unknown>).reason).trim()
          : '';
      const name = by.replace(/^operator:/, '');
      const decided = await opened.requests.decide(id, name, approve, reason, PEOPLE_ACTIONS);
      o.logger.info({ request: id, action: decided.action, by, approve }, 'people: request decided');
      const audited = {
        request: id,
        change: decided.action,
        target: decided.target,
        askedBy: decided.askedBy,
        ...(reason ? { reason } : {}),
      };
      if (!approve) {
        await o.audit?.record(name, 'request.rejected', audited);
        return () => res.redirect(303, '/ops/people#requests');
      }
      try {
        await o.audit?.record(name, 'request.approved', audited);
      } catch (err) {
        // Nothing takes effect unaudited: the approval is marked failed, with why.
        await opened.requests.failed(id, 'the audit row could not be written');
        throw err;
      }
      try {
        const done = await APPLY[decided.action as PeopleAction](
          opened,
          decided.target,
          decided.payload,
          `operator:${decided.askedBy}, approved by ${by}`,
          name,
        );
        return () => done(res);
      } catch (err) {
        const why = err instanceof PeopleError ? err.message : 'the change failed';
        await opened.requests.failed(id, why);
        if (err instanceof PeopleError)
          throw new PeopleError(
            `approved, but it could not take effect: ${why}`,
            err.status === 404 ? 409 : err.status,
          );
        throw err;
      }
    });
  app.post('/ops/requests/:id/approve', ...decision(true));
  app.post('/ops/requests/:id/reject', ...decision(false));
}

/** What a request asks, in a line (never a password or its hash). */
function describe(r: OperatorRequest): string {
  const p = r.payload;
  switch (r.action) {
    case 'add-person': {
      const ids = (p.identities as Array<{ channel: string; userId: string }> | undefined) ?? [];
      return `add ${String(p.name)} as ${String(p.role)} (${ids.map((i) => `${i.channel} ${i.userId}`).join(', ')})`;
    }
    case 'role':
      return `give ${r.target} the role ${String(p.role)}`;
    case 'reactivate':
      return `reactivate ${r.target}`;
    case 'reset-pin':
      return `reset the PIN of ${r.target}`;
    case 'link-code':
      return `make a link code for ${r.target}`;
    case 'add-operator':
      return `add operator ${r.target}`;
    default:
      return `${r.action.replace('-operator', '')} operator ${r.target}`;
  }
}

/** A request as the page and people.json show it: the payload's password hash left out. */
function requestView(r: OperatorRequest): OperatorRequest & { what: string } {
  const { passwordHash: _hidden, ...payload } = r.payload;
  return { ...r, payload, what: describe(r) };
}

interface Snapshot {
  persons: PersonView[];
  rules: Array<{ channel: Channel; role: string }>;
  roles: string[];
  operators: Array<{ name: string; status: string; createdBy: string }>;
  /** Changes waiting for a second operator, and the last decided. */
  requests: { pending: Array<ReturnType<typeof requestView>>; decided: Array<ReturnType<typeof requestView>> };
  readOnly: string | null;
}

async function snapshot(o: PeoplePageOptions): Promise<Snapshot> {
  const opened = await o.directory.open();
  const directory = o.policy.directory;
  const persons: PersonView[] = opened
    ? await opened.people.list()
    : directory.persons().map((p) => ({
        id: p.id,
        name: p.name,
        role: p.role,
        status: p.status,
        pin: p.pinMustChange ? 'must change' : p.pin ? 'set' : 'none',
        pinLockedUntil: p.pinLockedUntil ? new Date(p.pinLockedUntil).toISOString() : null,
        preferredChat: p.preferredChat ?? null,
        identities: directory.identitiesOf(p.id).map((i) => ({ channel: i.channel, userId: i.userId })),
      }));
  const rules = Object.entries(directory.wildcards).map(([channel, rule]) => ({
    channel: channel as Channel,
    role: rule!.role,
  }));
  const operators = (await o.directory.operators())?.list() ?? [];
  const requests = opened ? await opened.requests.list(20, PEOPLE_ACTIONS) : { pending: [], decided: [] };
  return {
    requests: { pending: requests.pending.map(requestView), decided: requests.decided.map(requestView) },
    persons,
    rules,
    roles: Object.keys(o.policy.roles()),
    operators: await operators,
    readOnly: o.directory.readOnly,
  };
}

const csrfField = (signIn: SignIn | undefined): Html =>
  html`<input type="hidden" name="csrf" value="${signIn?.csrf ?? ''}" />`;
const roleSelect = (roles: string[], current?: string): Html =>
  html`<select name="role" required>
    ${roles.map((r) => html`<option value="${r}" ${r === current ? html` selected` : ''}>${r}</option>`)}
  </select>`;

function signOut(signIn: SignIn | undefined): Html {
  if (!signIn)
    return html`<p class="exports">Signed in to read only: <a href="/ops/sign-in">sign in</a> to change anything.</p>`;
  return html`<form method="post" action="/ops/sign-out" class="search sign-out">
    ${csrfField(signIn)}<span>Signed in as <strong data-testid="operator">${signIn.operator}</strong></span
    ><button type="submit">Sign out</button>
  </form>`;
}

function actions(person: PersonView, signIn: SignIn | undefined, roles: string[]): Html {
  if (!signIn) return html``;
  const post = (path: string, label: string, extra: Html = html``) =>
    html`<form method="post" action="/ops/people/${encodeURIComponent(person.id)}/${path}" class="search inline">
      ${csrfField(signIn)}${extra}<button type="submit">${label}</button>
    </form>`;
  return html`${person.status === 'active' ? post('suspend', 'Suspend') : post('reactivate', 'Reactivate')}
  ${post('role', 'Change role', roleSelect(roles, person.role))} ${post('unlock-pin', 'Unlock PIN')}
  ${post('reset-pin', 'Reset PIN')} ${post('link-code', 'Make a link code')}`;
}

/**
 * The PIN's state as an operator needs it: a person locked out (wrong PINs or one-time codes) reads "locked",
 * until when, why, and how to unlock; a lock that has run out is no lock. A locked person's PIN is not called
 * "must change" (what a reset reads before its code is used): locked out of a one-time code, they have no PIN to
 * change, and the way on is a new code or the same code again once unlocked.
 */
function pinState(p: PersonView, now = Date.now()): Html {
  const until = p.pinLockedUntil ? Date.parse(p.pinLockedUntil) : NaN;
  if (!(until > now)) return html`${p.pin}`;
  const unlock =
    p.pin === 'must change'
      ? 'Unlock PIN (the one-time code they were given works again until it expires) or Reset PIN (a new one-time code)'
      : p.pin === 'set'
        ? 'Unlock PIN (their PIN stays, the tries start again) or Reset PIN (a new one-time code)'
        : 'Unlock PIN, or Reset PIN (a one-time code to choose one)';
  const pin =
    p.pin === 'must change'
      ? 'No PIN yet: they choose one with a one-time code.'
      : p.pin === 'set'
        ? 'PIN set.'
        : 'No PIN.';
  return html`<span class="state state-failed" data-testid="locked">locked</span> until
    ${when(p.pinLockedUntil)}${p.pinLockedWhy ? `: ${p.pinLockedWhy}` : ''}<br /><small
      >To unlock: ${unlock}; else it opens by itself then. ${pin}</small
    >`;
}

function listPage(data: Snapshot, signIn: SignIn | undefined, roles: string[]): Html {
  const row = (p: PersonView) =>
    html`<tr data-person="${p.id}">
      <td><a href="/ops/people/${encodeURIComponent(p.id)}">${p.name}</a><br /><small>${p.id}</small></td>
      <td>${p.role}</td>
      <td><span class="state status-${p.status === 'active' ? 'clean' : 'failed'}">${p.status}</span></td>
      <td>${pinState(p)}</td>
      <td>${p.identities.map((i) => html`${i.channel} ${i.userId}<br />`)}</td>
      <td>${actions(p, signIn, roles)}</td>
    </tr>`;
  return html`${signOut(signIn)} ${data.readOnly ? html`<p class="reasons">${data.readOnly}.</p>` : ''}
    <section>
      <h2>People</h2>
      <table class="payments people">
        <thead>
          <tr>
            <th>Name</th>
            <th>Role</th>
            <th>Status</th>
            <th>PIN</th>
            <th>Identities</th>
            <th>Changes</th>
          </tr>
        </thead>
        <tbody>
          ${data.persons.map(row)}
        </tbody>
      </table>
      ${data.rules.length > 0 ? html`<p class="exports">Everyone else: ${data.rules.map((r) => html`${r.channel} users have role ${r.role} (the access policy's * rule). `)}</p>` : ''}
    </section>
    ${requestsSection(data, signIn)} ${signIn && !data.readOnly ? addPersonForm(signIn, roles) : ''}
    <section id="operators">
      <h2>Operators</h2>
      <table class="payments">
        <thead>
          <tr>
            <th>Name</th>
            <th>Status</th>
            <th>Added by</th>
          </tr>
        </thead>
        <tbody>
          ${data.operators.map(
            (op) =>
              html`<tr>
                <td>${op.name}</td>
                <td>${op.status}</td>
                <td>${op.createdBy}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${
        signIn && !data.readOnly
          ? html`<form method="post" action="/ops/operators" class="search add-operator">
              ${csrfField(signIn)}
              <label>Name <input name="name" required maxlength="64" pattern="[A-Za-z0-9_.@\\-]{1,64}" /></label>
              <label
                >Password (12 or more characters)
                <input
                  name="password"
                  type="password"
                  required
                  minlength="12"
                  maxlength="200"
                  autocomplete="new-password"
              /></label>
              <button type="submit">Add operator</button>
            </form>`
          : ''
      }
    </section>`;
}

/** Changes waiting for a second operator: approve or reject each (not one's own: withdraw it). */
function requestsSection(data: Snapshot, signIn: SignIn | undefined): Html {
  const { pending, decided } = data.requests;
  if (pending.length === 0 && decided.length === 0) return html``;
  const decide = (r: OperatorRequest, path: 'approve' | 'reject', label: string) =>
    html`<form method="post" action="/ops/requests/${encodeURIComponent(r.id)}/${path}" class="search inline">
      ${csrfField(signIn)}<input name="reason" maxlength="500" placeholder="reason" /><button type="submit">
        ${label}
      </button>
    </form>`;
  return html`<section id="requests">
    <h2>Waiting for a second operator</h2>
    <table class="payments requests">
      <thead>
        <tr>
          <th>Asked</th>
          <th>Change</th>
          <th>By</th>
          <th>Decide</th>
        </tr>
      </thead>
      <tbody>
        ${pending.map(
          (r) =>
            html`<tr data-request="${r.id}">
              <td>${when(r.askedAt)}</td>
              <td>${r.what}</td>
              <td>${r.askedBy}</td>
              <td>
                ${
                  !signIn
                    ? ''
                    : signIn.operator === r.askedBy
                      ? html`yours: another operator approves it ${decide(r, 'reject', 'Withdraw')}`
                      : html`${decide(r, 'approve', 'Approve')} ${decide(r, 'reject', 'Reject')}`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${
      decided.length > 0
        ? html`<details>
            <summary>Decided lately</summary>
            <ul>
              ${decided.map(
                (r) =>
                  html`<li>
                    ${r.what}: <strong>${r.state}</strong>${r.decidedBy ? html` by ${r.decidedBy}` : ''} (asked by
                    ${r.askedBy})${r.reason ? `: ${r.reason}` : ''}
                  </li>`,
              )}
            </ul>
          </details>`
        : ''
    }
  </section>`;
}

function addPersonForm(signIn: SignIn, roles: string[]): Html {
  return html`<section>
    <h2>Add a person</h2>
    <form method="post" action="/ops/people" class="search add-person">
      ${csrfField(signIn)}
      <label>Name <input name="name" required maxlength="80" /></label>
      <label>Role ${roleSelect(roles)}</label>
      <label>USSD phone <input name="ussd" placeholder="+256772123456" maxlength="40" /></label>
      <label>WhatsApp wa_id <input name="whatsapp" placeholder="256772123456" maxlength="40" /></label>
      <label>Telegram user id <input name="telegram" maxlength="40" /></label>
      <label>Slack user id <input name="slack" placeholder="U0123ABCD" maxlength="40" /></label>
      <label
        >Preferred chat
        <select name="preferred">
          <option value="">none</option>
          ${CHANNELS.filter((c) => c !== 'ussd').map((c) => html`<option value="${c}">${c}</option>`)}
        </select></label
      >
      <button type="submit">Add person</button>
    </form>
    <p class="exports">
      A new person has no PIN: reset it to give them a one-time code, with which they choose their own.
    </p>
  </section>`;
}

function personPage(person: PersonView, history: PersonChange[], signIn: SignIn | undefined, roles: string[]): Html {
  const fields = (view: Partial<PersonView> | null) =>
    view
      ? html`<dl class="data">
          ${Object.entries(view).map(
            ([k, v]) =>
              html`<dt>${k}</dt>
                <dd>${typeof v === 'string' ? v : JSON.stringify(v)}</dd>`,
          )}
        </dl>`
      : html``;
  return html`${signOut(signIn)}
    <section>
      <h2>${person.name}</h2>
      <dl class="summary">
        <dt>Id</dt>
        <dd>${person.id}</dd>
        <dt>Role</dt>
        <dd>${person.role}</dd>
        <dt>Status</dt>
        <dd data-testid="status">${person.status}</dd>
        <dt>PIN</dt>
        <dd data-testid="pin">${pinState(person)}</dd>
        <dt>Identities</dt>
        <dd>${person.identities.map((i) => html`${i.channel} ${i.userId}<br />`)}</dd>
        <dt>Preferred chat</dt>
        <dd>${person.preferredChat ?? 'none'}</dd>
      </dl>
      <div class="person-actions">${actions(person, signIn, roles)}</div>
    </section>
    <section>
      <h2>Changes</h2>
      <ol class="timeline">
        ${history
          .slice()
          .reverse()
          .map(
            (c) =>
              html`<li>
                <div class="event-head">
                  <time>${when(c.at)}</time> <strong>${c.action}</strong> <span class="source">by ${c.by}</span>
                </div>
                <details>
                  <summary>before and after</summary>
                  <div class="before-after">${fields(c.before)}${fields(c.after)}</div>
                </details>
              </li>`,
          )}
      </ol>
    </section>
    <p><a href="/ops/people">All people</a></p>`;
}
