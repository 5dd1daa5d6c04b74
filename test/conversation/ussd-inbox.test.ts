/** The USSD inbox (ussd-inbox.ts): the order notes show in, and notes dropped once seen. */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { addPending, afterShown, dropSeen, storedNotes } from '../../src/conversation/channels/ussd-inbox.js';
import { keys } from '../../src/store/keys.js';
import type { Address } from '../../src/conversation/types.js';

const address: Address = { channel: 'ussd', conversationId: '+256772000123' };
/** The notes as a dial shows them: newest first. */
async function shown(store: MemoryStore): Promise<string[]> {
  return storedNotes((await store.get(keys.pending(address)))?.snapshot)
    .map((n) => n.text)
    .reverse();
}

describe('pending notes', () => {
  it("show outcomes first, newest first, then runs' own answers, the latest attempt's first", async () => {
    const store = new MemoryStore();
    await addPending(store, address, 'Done: payment 1');
    await addPending(store, address, 'Nothing was sent: something went wrong on our side. Please start again.', {
      interim: true,
    });
    await addPending(store, address, 'Your payment was already submitted earlier.', { interim: true });
    expect(await shown(store)).toEqual([
      'Done: payment 1',
      'Your payment was already submitted earlier.',
      'Nothing was sent: something went wrong on our side. Please start again.',
    ]);
    // An outcome makes the runs' own answers redundant.
    await addPending(store, address, 'Done: payment 2');
    expect(await shown(store)).toEqual(['Done: payment 2', 'Done: payment 1']);
  });

  it('drops the notes a dial showed once they were seen, keeping those added since', async () => {
    const store = new MemoryStore();
    await addPending(store, address, 'Done: payment 1');
    const stored = await store.get(keys.pending(address));
    await store.set(keys.pending(address), afterShown(storedNotes(stored?.snapshot)), stored!.version, 60);
    await addPending(store, address, 'Done: payment 2');
    await dropSeen(store, address);
    expect(await shown(store)).toEqual(['Done: payment 2']);
    const version = (await store.get(keys.pending(address)))?.version;
    // Nothing seen to drop: nothing written.
    await dropSeen(store, address);
    expect((await store.get(keys.pending(address)))?.version).toBe(version);
  });
});
