/**
 * Loaded into the product by the soak benchmark (`node --expose-gc --import ./bench/dist/bench/soak/probe.js dist/src/main.js`):
 * answers a `memory` message on the IPC channel with the process's memory after a full garbage collection.
 * It changes nothing else; the channel does not keep the process alive.
 */
export interface MemoryReport {
  rss: number;
  heapUsed: number;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (process.send && gc) {
  process.on('message', (message) => {
    if (message !== 'memory') return;
    gc();
    const { rss, heapUsed } = process.memoryUsage();
    process.send!({ rss, heapUsed } satisfies MemoryReport);
  });
  process.channel?.unref();
}
