/**
 * `npm start`: reads the environment, starts the product, prints where everything is, and shuts down
 * gracefully on SIGTERM/SIGINT (stop taking requests, finish those in flight and the queued jobs held).
 * A refused start (src/config.ts, src/start-checks.ts, a REDIS_URL database the server lacks: src/app.ts)
 * prints one line naming the setting and exits 2.
 */
import { ConfigError, loadConfig, WHATSAPP_SETTINGS, whatsappOn } from './config.js';
import { createLogger } from './log.js';
import { checkStart, ussdRoutesOff } from './start-checks.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // A refused start refuses before the product's modules load: the operator reads the line at once.
  // (startApp checks again, for those who start it in-process.)
  checkStart(config);
  const { startApp } = await import('./app.js');
  const { WEBHOOK_PATH: WHATSAPP_WEBHOOK_PATH } = await import('../adapters/whatsapp/index.js');
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
    // Whatever holds the stop (a Redis that does not answer, a run waiting on the service), the process ends
    // within its grace period: an orchestrator would SIGKILL it soon after anyway, with no line said.
    setTimeout(() => {
      logger.error(
        { graceSeconds: config.SHUTDOWN_GRACE_SECONDS },
        'shutdown: grace period over, exiting with work unfinished',
      );
      process.exit(1);
    }, config.SHUTDOWN_GRACE_SECONDS * 1000).unref();
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
  const gateways = '(also hubtel, arkesel, nalo, beem)';
  const lines = [`momo-chat listening on ${local}`];
  const off = ussdRoutesOff(config);
  if (off) lines.push(`  USSD:                    off: ${off}`);
  if (config.USSD_CALLBACK_TOKEN) {
    lines.push(`  USSD (Africa's Talking): POST ${local}/ussd/africastalking/<USSD_CALLBACK_TOKEN>   ${gateways}`);
  }
  if (config.embeddedSandbox || (config.USSD_ALLOWED_IPS && !config.USSD_CALLBACK_TOKEN)) {
    lines.push(`  USSD (Africa's Talking): POST ${local}/ussd/africastalking   ${gateways}`);
  }
  lines.push(`  Notifications receiver:  POST ${local}/notifications/momo`);
  lines.push(
    `  Operator page:           ${
      config.OPS_USER
        ? `${local}/ops   (Basic auth: OPS_USER)`
        : config.embeddedSandbox
          ? `${local}/ops   (open: demo)`
          : 'off (set OPS_USER and OPS_PASSWORD)'
    }`,
  );
  if (running.sandbox) {
    lines.push(
      `  USSD simulator:          ${local}/simulator   (dial ${config.USSD_SERVICE_CODE})`,
      `  Channel preview:         ${local}/preview   (USSD, Telegram, Slack, WhatsApp)`,
      `  Embedded sandbox:        ${local}/api   (API key: ${config.SANDBOX_API_KEY})`,
      `  Sandbox vending group:   ${local}/vending   (key: ${config.SANDBOX_VENDING_API_KEY})`,
      `  Demo PIN for USSD users: 1234 (docs/security.md, "Access policy")`,
    );
  } else {
    lines.push(`  Service:                 ${config.MOMO_BASE_URL}`);
  }
  lines.push(`  Telegram: ${config.TELEGRAM_BOT_TOKEN ? 'on' : 'off (set TELEGRAM_BOT_TOKEN)'}`);
  lines.push(
    `  Slack:    ${config.SLACK_SIGNING_SECRET && config.SLACK_BOT_TOKEN ? 'on' : 'off (set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN)'}`,
  );
  const whatsappWebhook = `${config.PUBLIC_URL?.replace(/\/+$/, '') ?? local}${WHATSAPP_WEBHOOK_PATH}`;
  lines.push(
    `  WhatsApp: ${whatsappOn(config) ? `on (Meta's webhook: ${whatsappWebhook})` : `off (set ${WHATSAPP_SETTINGS.join(', ')})`}`,
  );
  const redisMode = { server: 'Redis', sentinel: 'Redis through Sentinel', cluster: 'Redis Cluster' };
  lines.push(
    `  Sessions: ${config.redis ? redisMode[config.redis.mode] : 'memory (set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES for Redis)'}`,
  );
  console.log(lines.join('\n'));
}

main().catch((err: unknown) => {
  // A refused start: the one line that names the setting to fix, and exit 2.
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
