import { Redis } from 'ioredis';
import { oursApp } from '/work/wt/engine/bench/ussd/ours.ts';
const url = 'redis://127.0.0.1:6380';
const app = oursApp(url, 'bytes:');
const server = app.listen(0);
await new Promise(r => server.once('listening', r));
const port = (server.address() as any).port;
const redis = new Redis(url);
const sessionId = 'ab-bytes-' + Date.now();
const phone = '256772' + String(Math.floor(Math.random()*1e6)).padStart(6,'0');
for (const text of ['', '1', '1*0772123456', '1*0772123456*5000']) {
  await fetch(`http://127.0.0.1:${port}/ussd/africastalking`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ sessionId, serviceCode: '*384*123#', phoneNumber: phone, networkCode: '63902', text }) });
}
for (const key of await redis.keys('bytes:*')) {
  const v = await redis.get(key).catch(() => '(non-string)');
  console.log(key, await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'), String(v).length);
  console.log(v);
}
await redis.del(...await redis.keys('bytes:*'));
redis.disconnect(); server.close(); process.exit(0);
