/**
 * GET /__profile/start and /__profile/stop on a benchmark server when BENCH_PROFILE names a file: a CPU
 * profile of the hot path only (startup excluded), taken in-process with node:inspector.
 */
import type express from 'express';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

export function profileRoutes(app: express.Express): void {
  const file = process.env.BENCH_PROFILE;
  if (!file) return;
  const session = new Session();
  session.connect();
  app.get('/__profile/start', async (_req, res) => {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    res.json({ ok: true });
  });
  app.get('/__profile/stop', async (_req, res) => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    res.json({ ok: true, file });
  });
}
