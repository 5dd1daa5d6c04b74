/**
 * A contact's name as a person would write it. The service names a contact it was given no name for with
 * its defaults, first name `Anonymous` and last name `Contact` (shared/spec/mobile-money-api.md, the
 * collection request's create body): those words say the name is unknown, and are never shown as a name
 * ("Received 5,000 UGX from +256772000001", not "from Anonymous Contact").
 */

/** The service's first name for a contact created without one. */
export const DEFAULT_FIRST_NAME = 'Anonymous';
/** The service's last name for a contact created without one. */
export const DEFAULT_LAST_NAME = 'Contact';

/** The contact's names without the service's defaults, joined; '' when none is known. */
export function contactName(first: string | null | undefined, last: string | null | undefined): string {
  const given = first?.trim() ?? '';
  const family = last?.trim() ?? '';
  return [given === DEFAULT_FIRST_NAME ? '' : given, family === DEFAULT_LAST_NAME ? '' : family]
    .filter(Boolean)
    .join(' ');
}
