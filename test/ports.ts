/**
 * A TCP port on 127.0.0.1 that the OS has free now, for a process that must be told its port before it
 * listens (the product's PUBLIC_URL, a redis-server). Another process may take it first: whoever listens on
 * it checks that it got it.
 */
import { createServer, type AddressInfo } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
