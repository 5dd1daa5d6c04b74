/**
 * What the stores write: a value's JSON, made once. A writer that already holds an object's JSON (a
 * conversation record built from parts serialised on earlier writes, ledger.ts) attaches it with
 * {@link withJson}; the store takes it from there instead of serialising the object again. Attached by
 * identity in a WeakMap, so the object itself is what the store and anything wrapping it see.
 */
const attached = new WeakMap<object, string>();

/** `value` with its JSON attached (the caller vouches that `json` is `JSON.stringify(value)`). */
export function withJson<T extends object>(value: T, json: string): T {
  attached.set(value, json);
  return value;
}

/** The JSON of a value to store: the attached one, or JSON.stringify. */
export function jsonOf(value: unknown): string {
  return (typeof value === 'object' && value !== null && attached.get(value)) || JSON.stringify(value);
}
