import { describe, expect, it } from 'vitest';
import { bodyRefusal } from '../../src/http/body.js';

describe('bodyRefusal', () => {
  it("answers each of the body reader's refusals with a 4xx and its reason, and leaves any other error alone", () => {
    const refused = (type: string) => bodyRefusal(Object.assign(new Error('x'), { type }));
    expect(refused('entity.parse.failed')).toEqual({ status: 400, reason: 'body is not valid JSON' });
    expect(refused('entity.too.large')).toEqual({ status: 413, reason: 'body too large' });
    for (const type of ['charset.unsupported', 'encoding.unsupported'])
      expect(refused(type)).toEqual({ status: 415, reason: 'body must be utf-8, uncompressed or gzip, deflate or br' });
    for (const type of ['encoding.invalid', 'request.aborted', 'request.size.invalid'])
      expect(refused(type)).toEqual({ status: 400, reason: 'body could not be read' });
    for (const other of [new Error('a bug'), null, undefined, 'text', { type: 7 }])
      expect(bodyRefusal(other)).toBeUndefined();
  });
});
