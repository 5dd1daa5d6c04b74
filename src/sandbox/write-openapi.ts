/**
 * `npm run openapi [file]`: writes the sandbox's OpenAPI 3.1 document (openapi.ts) to docs/openapi.json, or
 * to the file named. The suite fails when the committed file differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { openApiDocument } from './openapi.js';

/** The document as the committed file holds it: two-space JSON and a final newline. */
export const openApiText = (): string => `${JSON.stringify(openApiDocument(), null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2] ?? 'docs/openapi.json';
  writeFileSync(file, openApiText());
  process.stdout.write(`OpenAPI document written to ${file}\n`);
}
