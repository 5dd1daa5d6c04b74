/**
 * The receiver's verification snippet of docs/webhooks-out.md, as written there (the first ```js block that
 * defines verifyMomoSignature), made into a function: the tests check deliveries with the very code the docs
 * give receivers.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export type Verify = (
  secret: string,
  rawBody: string | Buffer,
  header: string | undefined,
  toleranceSeconds?: number,
  nowSeconds?: number,
) => boolean;

export function documentedVerify(): Verify {
  const doc = readFileSync(new URL('../../docs/webhooks-out.md', import.meta.url), 'utf8');
  const block = [...doc.matchAll(/```js\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((b) => /function verifyMomoSignature/.test(b));
  if (!block) throw new Error('docs/webhooks-out.md has no verifyMomoSignature snippet');
  return new Function('require', `${block}\nreturn verifyMomoSignature;`)(createRequire(import.meta.url)) as Verify;
}
