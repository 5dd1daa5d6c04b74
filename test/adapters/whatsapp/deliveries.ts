/**
 * Meta's side of the webhook for tests: deliveries shaped as the Cloud API sends them (a text, a tap on a
 * reply button or a list row, a status), signed with X-Hub-Signature-256 over the raw body, and a user who
 * talks to the product through them and reads its answers from the local Graph API server.
 */
import { createHmac } from 'node:crypto';
import { PHONE_NUMBER_ID, type FakeGraphApi, type SentMessage } from './fake-graph-api.js';

export const APP_SECRET = 'test-app-secret-0123456789abcdef';
export const VERIFY_TOKEN = 'test-verify-token-5e1f';

/** The four settings that turn WhatsApp on, against a local Graph API server. */
export const whatsappEnv = (graph: FakeGraphApi): Record<string, string> => ({
  WHATSAPP_TOKEN: 'EAAG-test-permanent-token-never-logged',
  WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
  WHATSAPP_APP_SECRET: APP_SECRET,
  WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
  WHATSAPP_API_URL: graph.apiUrl,
});

export const signature = (body: string | Buffer, secret = APP_SECRET): string =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

let nextId = 1;
/** A fresh wamid, as Meta makes them (unique per message). */
export const wamid = (): string => `wamid.HBgMMjU2Nzcy${Date.now().toString(36)}${nextId++}AAA=`;

const seconds = () => String(Math.floor(Date.now() / 1000));

export const textMessage = (from: string, body: string, id = wamid()) => ({
  from,
  id,
  timestamp: seconds(),
  type: 'text',
  text: { body },
});

/** A tap on a reply button or a list row (`replyId` as the product sent it), on the message `contextId`. */
function tapped(
  kind: 'button_reply' | 'list_reply',
  from: string,
  replyId: string,
  title: string,
  contextId?: string,
  id = wamid(),
) {
  return {
    ...(contextId ? { context: { from: '15550783881', id: contextId } } : {}),
    from,
    id,
    timestamp: seconds(),
    type: 'interactive',
    interactive: { type: kind, [kind]: { id: replyId, title } },
  };
}

export const buttonReply = (from: string, replyId: string, title: string, contextId?: string, id?: string) =>
  tapped('button_reply', from, replyId, title, contextId, id);
export const listReply = (from: string, rowId: string, title: string, contextId?: string, id?: string) =>
  tapped('list_reply', from, rowId, title, contextId, id);

/** A `messages` webhook body carrying these messages and statuses, for the product's phone number. */
export function delivery(messages: unknown[] = [], statuses: unknown[] = [], phoneNumberId = PHONE_NUMBER_ID) {
  const from = (messages[0] as { from?: string } | undefined)?.from ?? '256772000099';
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550783881', phone_number_id: phoneNumberId },
              contacts: [{ profile: { name: 'Test User' }, wa_id: from }],
              ...(messages.length ? { messages } : {}),
              ...(statuses.length ? { statuses } : {}),
            },
          },
        ],
      },
    ],
  };
}

/** Posts a body to the webhook, signed unless `sign` is given (null: no header; a string: that header). */
export async function post(
  url: string,
  body: unknown,
  sign?: string | null,
): Promise<{ status: number; text: string }> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const header = sign === undefined ? signature(raw) : sign;
  if (header !== null) headers['x-hub-signature-256'] = header;
  const res = await fetch(`${url}/whatsapp/webhook`, {
    method: 'POST',
    headers,
    body: raw,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text() };
}

/** The words a user sees in a message: its text, or its body and its buttons' or rows' titles. */
export function wordsOf(message: SentMessage): string {
  if (message.type === 'text') return message.text.body;
  if (message.type === 'template') return message.template.components[0].parameters[0].text;
  return message.interactive.body.text;
}

/** The button or row titles of an interactive message, with their ids. */
export function optionsOf(message: SentMessage): Array<{ id: string; title: string; description?: string }> {
  if (message.type !== 'interactive') return [];
  const interactive = message.interactive;
  if (interactive.type === 'button')
    return interactive.action.buttons.map((b: { reply: { id: string; title: string } }) => b.reply);
  return interactive.action.sections.flatMap(
    (s: { rows: Array<{ id: string; title: string; description?: string }> }) => s.rows,
  );
}

/** A WhatsApp user talking to the product: each call posts a signed delivery and waits for the answer. */
export class WhatsAppUser {
  /** Messages posted, to deliver again. */
  readonly posted: unknown[] = [];
  constructor(
    private readonly url: string,
    private readonly graph: FakeGraphApi,
    readonly waId: string,
  ) {}

  /** Everything sent to this user so far. */
  get received(): SentMessage[] {
    return this.graph.to(this.waId);
  }

  /** The last message sent to this user. */
  get screen(): SentMessage {
    const last = this.received.at(-1);
    if (!last) throw new Error(`nothing was sent to ${this.waId}`);
    return last;
  }

  /** Posts a message and waits until `answers` more messages have been sent to the user; returns the last. */
  async send(message: unknown, answers = 1): Promise<SentMessage> {
    const before = this.received.length;
    this.posted.push(message);
    const res = await post(this.url, delivery([message]));
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}: ${res.text}`);
    const all = await this.graph.waitFor(this.waId, before + answers);
    return all.at(-1)!;
  }

  say(text: string, answers = 1): Promise<SentMessage> {
    return this.send(textMessage(this.waId, text), answers);
  }

  /** Taps the button or list row titled `title` on the last interactive message sent to the user. */
  tap(title: string, answers = 1): Promise<SentMessage> {
    const shown = [...this.received].reverse().find((m) => m.type === 'interactive');
    if (!shown) throw new Error(`no interactive message was sent to ${this.waId}`);
    const option = optionsOf(shown).find((o) => o.title === title);
    if (!option)
      throw new Error(
        `no option "${title}" on "${wordsOf(shown)}": ${optionsOf(shown)
          .map((o) => o.title)
          .join(', ')}`,
      );
    const reply =
      shown.interactive.type === 'button'
        ? buttonReply(this.waId, option.id, option.title, shown.wamid)
        : listReply(this.waId, option.id, option.title, shown.wamid);
    return this.send(reply, answers);
  }

  /** Meta delivers the last message again (as far as it knows, the first delivery failed). */
  async redeliver(): Promise<{ status: number; text: string }> {
    return post(this.url, delivery([this.posted.at(-1)]));
  }
}
