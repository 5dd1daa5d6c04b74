/**
 * `npm start`: reads the environment, starts the product, prints where everything is, and shuts down
 * gracefully on SIGTERM/SIGINT (stop taking requests, finish those in flight and the queued jobs held).
 */
import { ConfigError, loadConfig } from './config.js';
import { startApp } from './app.js';
import { createLogger } from './log.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL);
  const starting = startApp(config, { logger });
  // The signals are taken before the start: one that comes while the product starts stops it once started,
  // and one that comes right after it printed that it listens (an orchestrator replacing it) finds this
  // handler, not Node's default, which ends the process at once with whatever it holds.
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    starting
      .then((running) => running.stop())
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err: String(err) }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const running = await starting;
  const local = `http://localhost:${new URL(running.url).port}`;
  const lines = [
    `momo-chat listening on ${local}`,
    `  USSD (Africa's Talking): POST ${local}/ussd/africastalking   (also /ussd/hubtel, /ussd/arkesel, /ussd/nalo, /ussd/beem)`,
    `  USSD simulator:          ${local}/simulator   (dial ${config.USSD_SERVICE_CODE})`,
    `  Notifications receiver:  POST ${local}/notifications/momo`,
  ];
  if (running.sandbox) {
    lines.push(
      `  Embedded sandbox:        ${local}/api   (API key: ${config.SANDBOX_API_KEY})`,
      `  Sandbox vending group:   ${local}/vending   (key: ${config.SANDBOX_VENDING_API_KEY})`,
      `  Demo PIN for USSD users: 1234 (see README, "Access policy")`,
    );
  } else {
    lines.push(`  Service:                 ${config.MOMO_BASE_URL}`);
  }
  lines.push(`  Telegram: ${config.TELEGRAM_BOT_TOKEN ? 'on' : 'off (set TELEGRAM_BOT_TOKEN)'}`);
  lines.push(`  Slack:    ${config.SLACK_SIGNING_SECRET && config.SLACK_BOT_TOKEN ? 'on' : 'off (set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN)'}`);
  lines.push(`  Sessions: ${config.REDIS_URL ? 'Redis' : 'memory (set REDIS_URL for Redis)'}`);
  console.log(lines.join('\n'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
