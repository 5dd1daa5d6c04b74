/**
 * A process that opens the embedded PGlite under a DATA_DIR, for data-dir-lock.test.ts: `node --import tsx
 * test/journal/hold-data-dir.ts <dir> [write <ref> | read <ref>]`. It opens and migrates the database, writes
 * an intent of `ref` or reads one, prints `held <amount read, or ->` and stays until stdin closes (its parent
 * ended) or it is killed. Refused, it prints `refused <the error's line>` and exits 3.
 */
import { ConfigError } from '../../src/config.js';
import { openDatabase } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';

const [dir, action, ref] = process.argv.slice(2);
try {
  const database = await openDatabase({ dataDir: dir! });
  await migrate(database.db);
  const journal = new Journal(database.db);
  let read = '-';
  if (action === 'write') {
    await journal.intend({
      ref: ref!,
      kind: 'payment',
      amount: '1500.50',
      currency: 'UGX',
      payee: '+256772000001',
      channel: 'ussd',
      channelUser: '+256772999001',
      chat: 'ussd:+256772999001',
      role: 'staff',
      flow: 'pay',
    });
  } else if (action === 'read') {
    read = (await journal.byRef(ref!))?.amount ?? 'missing';
  }
  process.stdout.write(`held ${read}\n`);
  process.stdin.resume();
  process.stdin.once('end', () => void database.close().then(() => process.exit(0)));
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stdout.write(`refused ${error.message}\n`);
  process.exit(3);
}
