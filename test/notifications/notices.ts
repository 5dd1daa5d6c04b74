/** Notices as the receiver queues them, for the queue tests. */
import { notificationBody, parseNotice, type Notice } from '../../src/notifications/events.js';

/** A notice of payment `id` reaching `processed`, as the receiver queues it. */
export function processed(id: number): Notice {
  const parsed = parseNotice(
    notificationBody.parse({
      hook: { id: 1, event: 'payment.status.changed', target: 'https://bot.test/notifications/momo' },
      data: { id, state: 'processed', amount: '2500', currency: 'UGX', metadata: { ref: `ref-${id}` } },
    }),
  );
  if (!parsed.ok || !parsed.notice) throw new Error('unreadable test notification');
  return parsed.notice;
}
