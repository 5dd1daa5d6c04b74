/**
 * A setup file of the `processes` project (vitest.config.ts): its file takes the turn (turn.ts) before its own
 * hooks and tests, and gives it back after them, so that no two of these files start and kill processes at once.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Socket } from 'node:net';
import { takeTurn } from './turn.js';

let turn: Socket | undefined;
// Bounded by the whole run: the file waits for the others' turns, the longest of them minutes.
beforeAll(async () => {
  turn = await takeTurn();
}, 30 * 60_000);
afterAll(() => {
  turn?.destroy();
});
