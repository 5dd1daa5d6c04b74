/**
 * `npm run sandbox`: the sandbox alone on SANDBOX_PORT (default 4000), printing what a new user needs.
 * Keys come from SANDBOX_API_KEY and SANDBOX_VENDING_API_KEY (src/config.ts). Being a tool for a
 * developer's machine, it accepts http webhook targets on localhost (allowHttpWebhooks).
 */
import { z } from 'zod';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { CANDIDATES, createSandbox, TEST_NUMBERS } from './index.js';

const port = z.coerce
  .number()
  .int()
  .min(0)
  .max(65535)
  .default(4000)
  .parse(process.env.SANDBOX_PORT || undefined);
const config = loadConfig();
const sandbox = createSandbox({
  apiKey: config.SANDBOX_API_KEY,
  vendingApiKey: config.SANDBOX_VENDING_API_KEY,
  allowHttpWebhooks: true,
  logger: createLogger(config.LOG_LEVEL),
});

const server = sandbox.app.listen(port, () => {
  const base = `http://localhost:${port}`;
  const lines = [
    'Mobile-money sandbox',
    `  Base URL      ${base}   (main API under ${base}/api)`,
    `  API key       ${config.SANDBOX_API_KEY}   (Authorization: Token <key>)`,
    `  Vending URL   ${base}/vending`,
    `  Vending key   ${config.SANDBOX_VENDING_API_KEY}   (x-api-key: <key> on namefinder; Authorization: Token <key> elsewhere)`,
    `  OpenAPI       ${base}/sandbox/openapi.json   (no key needed)`,
    `  Controls      (Authorization: Token <key>, acting on that key's organization)`,
    `                POST ${base}/sandbox/collections {phonenumber, amount, currency, reference}   (a subscriber sends money)`,
    `                POST ${base}/sandbox/collections/{id}/reverse | /cash-out`,
    `                POST ${base}/sandbox/payments/{id}/approve | /reject {"reason"} | /cancel {"reason"}`,
    `                PATCH ${base}/sandbox/organization {"approvalRules": [{"currency": "UGX", "above": "1000000"}], "version": "v5", ...}`,
    `                POST ${base}/sandbox/faults {"maintenance": true|false, "latencyMs": N}`,
    `                POST ${base}/sandbox/clock/advance {"seconds": N}   GET ${base}/sandbox/clock`,
    `                GET  ${base}/sandbox/deliveries | /sms | /purchases | /balances`,
    '  Webhooks      https targets, or http on localhost (development)',
    '',
    'Test phone numbers (any other valid UG/KE/TZ/GH/CD/RW number is registered under a generated name):',
    ...TEST_NUMBERS.map((t) => `  ${t.phonenumber.padEnd(15)} ${t.description}`),
    '',
    'Exam confirmation codes (vending name validation):',
    ...CANDIDATES.map(
      (c) =>
        `  ${c.service_type.padEnd(5)} ${c.account_number}  ${c.firstName} ${c.middleName} ${c.lastName}, gsmNo ${c.gsmNo}`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
});

server.on('error', (err) => {
  process.stderr.write(`The sandbox cannot listen on port ${port}: ${err.message}\n`);
  process.exitCode = 1;
  closeSandbox();
});

const stop = () => {
  server.close();
  closeSandbox();
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

/** Stops the sandbox's clock and work; a failure to stop is said on stderr and sets a failing exit code. */
function closeSandbox(): void {
  sandbox.close().catch((err: unknown) => {
    process.stderr.write(`The sandbox did not stop cleanly: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
