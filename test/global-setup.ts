/**
 * vitest's globalSetup: once per run, before any test file, dist/ is built if it is stale, so that every test
 * that starts the product as a process runs the compiled JavaScript (test/product.ts).
 */
import { buildProduct } from './product.js';

export default function setup(): void {
  buildProduct();
}
