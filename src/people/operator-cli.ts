/**
 * `npm run operator -- add <name>`: asks for a new operator from the command line, for the deployment whose only
 * operator is the first (OPS_USER). It never adds one: it writes a pending `add-operator` request
 * (src/people/requests.ts), asked by `command line (<user>)`, which takes effect only once an active operator
 * approves it on /ops/people (the asker, not being an operator, cannot). The new operator types their password
 * at the prompt (not echoed), or pipes it on standard input; it must pass the strength rule and is kept only as
 * its hash. The request is in the operators' audit (`request.made`).
 *
 * Who may run it: whoever may run commands of the deployment with its DATABASE_URL (or the embedded PGlite
 * under DATA_DIR, with the product stopped). Exits 0 once the request is written (its id on standard output),
 * 1 when it is refused (a weak password, a name taken: one line saying why) or the database could not be
 * written, 2 on bad arguments.
 */
import { userInfo } from 'node:os';
import type { Kysely } from 'kysely';
import { loadConfig } from '../config.js';
import { openDatabase } from '../journal/database.js';
import { OperatorAudit } from '../ops/audit.js';
import { operatorPasswordHash, Operators } from './operators.js';
import { PeopleError } from './people.js';
import { OperatorRequests, REQUEST_HOURS, type OperatorRequest } from './requests.js';
import type { PeopleSchema } from './schema.js';

export const USAGE = 'usage: npm run operator -- add <name>   (the password is read from the prompt or standard input)';

/** The command, or why not. */
export function parseOperatorArgs(argv: readonly string[]): { add: string } | { error: string } {
  const [command, name, ...rest] = argv;
  if (command !== 'add') return { error: `unknown command ${JSON.stringify((command ?? '').slice(0, 40))}; ${USAGE}` };
  if (!name || name.startsWith('-')) return { error: `add needs the new operator's name; ${USAGE}` };
  if (rest.length > 0) return { error: `one name only (the password is never an argument); ${USAGE}` };
  return { add: name };
}

/** Who asked, as the request and the audit name them: never an operator's name, so any operator may approve. */
export function commandLineAsker(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No user name (a container without one): still the command line.
  }
  return `command line (${user})`;
}

/**
 * Writes the pending request to add operator `name` with `password` (checked and hashed here), asked by `by`.
 * Throws a PeopleError when the name is taken or the password weak.
 */
export async function askToAddOperator(
  db: Kysely<PeopleSchema>,
  o: { name: string; password: string; by: string; audit?: OperatorAudit },
): Promise<OperatorRequest> {
  const account = operatorPasswordHash(o.name, o.password);
  if (await new Operators(db).exists(account.name))
    throw new PeopleError(`there is already an operator ${account.name}`, 409);
  const asked = await new OperatorRequests(db).ask(o.by, 'add-operator', account.name, account);
  await o.audit?.record(o.by, 'request.made', {
    request: asked.id,
    change: 'add-operator',
    target: account.name,
    what: `add operator ${account.name}`,
  });
  return asked;
}

/** One line typed at a prompt that does not echo it (a terminal), or the first line of what was piped in. */
async function readPassword(prompt: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    let text = '';
    for await (const chunk of input) {
      text += String(chunk);
      if (text.includes('\n')) break;
    }
    return text.split(/\r?\n/)[0] ?? '';
  }
  // Not echoed from before the prompt shows: a password typed at once is never on the screen.
  input.setRawMode(true);
  input.setEncoding('utf8');
  process.stderr.write(prompt);
  try {
    let typed = '';
    for await (const chunk of input) {
      for (const ch of String(chunk)) {
        if (ch === '\u0003') throw new Error('cancelled');
        if (ch === '\r' || ch === '\n') return typed;
        typed = ch === '\u007f' || ch === '\b' ? typed.slice(0, -1) : typed + ch;
      }
    }
    return typed;
  } finally {
    input.setRawMode(false);
    input.pause();
    process.stderr.write('\n');
  }
}

async function main(): Promise<number> {
  const args = parseOperatorArgs(process.argv.slice(2));
  if ('error' in args) {
    process.stderr.write(`operator: ${args.error}\n`);
    return 2;
  }
  const password = await readPassword(`Password for operator ${args.add} (12 or more characters, not shown): `);
  const config = loadConfig();
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 2 });
  try {
    const asked = await askToAddOperator(database.db as unknown as Kysely<PeopleSchema>, {
      name: args.add,
      password,
      by: commandLineAsker(),
      audit: new OperatorAudit(database.db),
    });
    process.stdout.write(
      `asked: add operator ${args.add} (request ${asked.id}). It takes effect once an active operator approves it ` +
        `on /ops/people, within ${REQUEST_HOURS} hours.\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof PeopleError) {
      process.stderr.write(`operator: refused: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await database.close();
  }
}

if (process.argv[1] && /operator-cli\.[jt]s$/.test(process.argv[1])) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`operator failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
