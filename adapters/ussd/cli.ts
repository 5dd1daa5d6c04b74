/**
 * The USSD simulator in a terminal: `npm run ussd -- --phone +256772123456 [--url http://localhost:3000]
 * [--code *384*123#] [--token <USSD_CALLBACK_TOKEN>]`. Dials, shows each screen, reads each answer, stops at END.
 */
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { createDialer } from './dialer.js';

const { values } = parseArgs({
  options: {
    phone: { type: 'string' },
    url: { type: 'string', default: 'http://localhost:3000' },
    code: { type: 'string', default: process.env.USSD_SERVICE_CODE ?? '*384*123#' },
    token: { type: 'string', default: process.env.USSD_CALLBACK_TOKEN },
  },
});

if (!values.phone) {
  process.stderr.write(
    'usage: npm run ussd -- --phone +256772123456 [--url http://localhost:3000] [--code *384*123#] [--token <USSD_CALLBACK_TOKEN>]\n',
  );
  process.exit(2);
}

const dialer = createDialer({ url: values.url, phone: values.phone, serviceCode: values.code, token: values.token });
const rl = createInterface({ input: process.stdin, terminal: false });
// Created before the first await so that piped answers are buffered, not lost.
const answers = rl[Symbol.asyncIterator]();

try {
  process.stdout.write(`Dialling ${values.code} as ${values.phone}\n`);
  let screen = await dialer.dial();
  while (true) {
    process.stdout.write(`\n${screen.text}\n`);
    if (screen.final) break;
    process.stdout.write('> ');
    const answer = await answers.next();
    if (answer.done) break;
    screen = await dialer.answer(answer.value);
  }
  process.stdout.write('[session ended]\n');
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  rl.close();
}
