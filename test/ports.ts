/**
 * TCP ports on 127.0.0.1 that the OS has free now, for a process that must be told its port before it
 * listens (the product's PUBLIC_URL, a redis-server). Another process may take one first: whoever listens on
 * it checks that it got it.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';

const listen = (port: number): Promise<Server | undefined> =>
  new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(undefined));
    probe.listen(port, '127.0.0.1', () => resolve(probe));
  });

const close = (probe: Server): Promise<void> => new Promise((resolve) => probe.close(() => resolve()));

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * `n` distinct free ports, each held until all are found so that none is given twice. With `bus: true`, each
 * port's Redis Cluster bus port (the port + 10000) is free too.
 */
export async function freePorts(n: number, options: { bus?: boolean } = {}): Promise<number[]> {
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    while (ports.length < n) {
      const probe = await listen(0);
      if (!probe) continue;
      held.push(probe);
      const { port } = probe.address() as AddressInfo;
      if (options.bus) {
        const bus = port + 10_000 <= 65_535 ? await listen(port + 10_000) : undefined;
        if (!bus) continue;
        held.push(bus);
      }
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map(close));
  }
}
