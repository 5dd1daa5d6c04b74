/**
 * Bolt and its Web API client log through our pino logger. Their debug lines carry whole request and
 * message bodies (personal data), so debug is not forwarded whatever the level.
 */
import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { Logger } from '../../src/log.js';

export function boltLogger(logger: Logger): BoltLogger {
  const log = logger.child({ module: 'slack' });
  const line = (msgs: unknown[]) => msgs.map((m) => (typeof m === 'string' ? m : String(m))).join(' ');
  return {
    debug: () => {},
    info: (...msgs) => log.info(line(msgs)),
    warn: (...msgs) => log.warn(line(msgs)),
    error: (...msgs) => log.error(line(msgs)),
    setLevel: () => {},
    getLevel: () => LogLevel.INFO,
    setName: () => {},
  };
}
