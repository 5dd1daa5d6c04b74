import { createWriteStream } from 'node:fs';
import { runChaos } from './run.js';
for (let i = 1; i <= 25; i++) {
  const file = `/tmp/chaoslog-${i}.log`;
  const log = createWriteStream(file);
  process.env.CHAOS_LOG_LEVEL = 'info';
  const result = await runChaos({ conversations: 30, concurrency: 15, faultEveryMs: 2000, redisUrl: 'redis://127.0.0.1:6380/11', productLog: (line) => log.write(line) });
  log.end();
  const bad = result.failures.length > 0 || result.problems.length > 0 || result.crashes.length > 0 || result.payments !== result.confirmed || result.told !== result.confirmed;
  console.log(`run ${i}: ${result.line} failures=${result.failures.length} problems=${result.problems.length}`);
  if (bad) {
    console.log([...result.failures, ...result.problems].join('\n').slice(0, 20000));
  }
}
process.exit(0);
