/**
 * A payout's rows from a CSV file shared in the channel where `/momo payout` was run, read through the Web
 * API with the bot token (scope files:read): `latest` takes the newest CSV file of `files.list` for that
 * channel; a file's link (or id) is looked up with `files.info` and must be shared in that channel. The bytes
 * come from the file's `url_private_download` with `Authorization: Bearer <bot token>`, only from Slack's own
 * hosts (or the configured Web API's, a test server), bounded in size and in time. Every failure is a
 * sentence for the maker, never an exception: another workspace's file, one not shared here, not a CSV, too
 * large, a download that fails or hangs.
 */
import type { webApi } from '@slack/bolt';
import { plainText } from '../../src/conversation/flow/plain-text.js';
import { within } from '../../src/within.js';

/** Largest file read: about 4000 rows of `phone,amount,description`, four times what a payout takes. */
export const CSV_BYTES_MAX = 256 * 1024;
/** The whole read (lookup and download) ends within this, so the modal is answered within Slack's 3 s. */
export const CSV_READ_MS = 2000;
/** Files of the channel looked through for `latest`. */
const LISTED = 20;

export type SharedCsv = { ok: true; name: string; text: string } | { ok: false; reason: string };

export interface SharedCsvOptions {
  client: webApi.WebClient;
  botToken: string;
  /** The Web API base in use: a download URL on its origin is allowed too (a test server). */
  apiUrl: string;
  /** Where `/momo payout` was run: the file must be shared there. */
  channel: string;
  /** `latest`, or a file's link or id as the maker typed it. */
  reference: string;
  timeoutMs?: number;
}

interface SlackFile {
  id?: string;
  name?: string;
  filetype?: string;
  mimetype?: string;
  size?: number;
  url_private_download?: string;
  url_private?: string;
  channels?: string[];
  groups?: string[];
  ims?: string[];
  shares?: { public?: Record<string, unknown>; private?: Record<string, unknown> };
}

const refuse = (reason: string): SharedCsv => ({ ok: false, reason });
const nameOf = (file: SlackFile): string => plainText(file.name ?? file.id ?? 'the file').slice(0, 80);

const isCsv = (file: SlackFile): boolean =>
  file.filetype === 'csv' || /\.csv$/i.test(file.name ?? '') || file.mimetype === 'text/csv';

const sharedIn = (file: SlackFile, channel: string): boolean =>
  [file.channels, file.groups, file.ims].some((list) => list?.includes(channel)) ||
  Object.hasOwn(file.shares?.public ?? {}, channel) ||
  Object.hasOwn(file.shares?.private ?? {}, channel);

/** The bot token is sent to Slack's hosts only (and to the configured Web API's origin). */
function downloadable(url: string, apiUrl: string): boolean {
  try {
    const target = new URL(url);
    if (target.origin === new URL(apiUrl).origin) return true;
    return target.protocol === 'https:' && (target.hostname === 'slack.com' || target.hostname.endsWith('.slack.com'));
  } catch {
    return false;
  }
}

/** The Web API's error code of a failed call (`file_not_found`...), or a short description. */
export const errorOf = (err: unknown): string =>
  typeof err === 'object' &&
  err !== null &&
  'data' in err &&
  typeof (err as { data?: { error?: unknown } }).data?.error === 'string'
    ? (err as { data: { error: string } }).data.error
    : err instanceof Error
      ? err.message
      : String(err);

async function find(o: SharedCsvOptions): Promise<SlackFile | SharedCsv> {
  const reference = o.reference.trim();
  if (/^latest$/i.test(reference)) {
    const listed = await o.client.files.list({ channel: o.channel, count: LISTED });
    const file = ((listed.files ?? []) as SlackFile[]).find(isCsv);
    return (
      file ??
      refuse(
        `No CSV file shared in this channel is visible to the app (among its latest ${LISTED} files): share the file here (and invite the app, /invite @MoMo), then try again.`,
      )
    );
  }
  const id = /(?:^|[/\s])(F[A-Z0-9]{6,20})(?=$|[/\s?#])/.exec(reference)?.[1];
  if (!id)
    return refuse(
      "Type `latest` for the newest CSV file shared in this channel, or paste a file's link (its menu > Copy link).",
    );
  try {
    const info = await o.client.files.info({ file: id });
    return (info.file as SlackFile | undefined) ?? refuse('Slack did not describe that file.');
  } catch (err) {
    const code = errorOf(err);
    if (['file_not_found', 'file_deleted', 'not_visible', 'access_denied'].includes(code)) {
      return refuse(
        'That file is not one the app can see: it may be in another workspace, deleted, or not shared where the app is.',
      );
    }
    throw err;
  }
}

/** Reads the body up to `max` bytes; null past it. */
async function readBounded(body: ReadableStream<Uint8Array>, max: number): Promise<Uint8Array | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
}

async function read(o: SharedCsvOptions, signal: AbortSignal): Promise<SharedCsv> {
  const found = await find(o);
  if ('ok' in found) return found;
  const file = found;
  const name = nameOf(file);
  if (!sharedIn(file, o.channel))
    return refuse(`${name} is not shared in this channel: share it here, or run /momo payout where it is.`);
  if (!isCsv(file))
    return refuse(`${name} is not a CSV file (columns phone, amount, description; save the sheet as CSV).`);
  if ((file.size ?? 0) > CSV_BYTES_MAX)
    return refuse(`${name} is larger than ${CSV_BYTES_MAX / 1024} KB: split the payout into smaller files.`);
  const url = file.url_private_download ?? file.url_private;
  if (!url || !downloadable(url, o.apiUrl)) return refuse(`Slack gave no download address for ${name}.`);
  const res = await fetch(url, { headers: { authorization: `Bearer ${o.botToken}` }, signal });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    return refuse(`${name} could not be downloaded (Slack answered ${res.status}): try again.`);
  }
  // Without files:read Slack answers the download with its sign-in page, not the file.
  if (/text\/html/i.test(res.headers.get('content-type') ?? '')) {
    await res.body.cancel();
    return refuse(`Slack did not give the app ${name} (does the app have the files:read scope?).`);
  }
  const bytes = await readBounded(res.body, CSV_BYTES_MAX);
  if (!bytes) return refuse(`${name} is larger than ${CSV_BYTES_MAX / 1024} KB: split the payout into smaller files.`);
  try {
    return { ok: true, name, text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return refuse(`${name} is not UTF-8 text: save it as "CSV UTF-8".`);
  }
}

/** The file's text, or why it cannot be used; never throws, never takes longer than `timeoutMs`. */
export async function readSharedCsv(o: SharedCsvOptions): Promise<SharedCsv> {
  const timeoutMs = o.timeoutMs ?? CSV_READ_MS;
  const abort = new AbortController();
  const work = read(o, abort.signal).catch((err: unknown): SharedCsv =>
    refuse(`The file could not be read (${plainText(errorOf(err)).slice(0, 100)}): try again, or paste the rows.`),
  );
  const result = await within(work, timeoutMs);
  if (result) return result;
  abort.abort();
  return refuse(`The file was not read within ${timeoutMs / 1000} s: try again, or paste the rows.`);
}
