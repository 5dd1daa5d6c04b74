/** How the tests launch Debian's chromium headless (CI installs it too). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Which Chromium (CHROMIUM_PATH, test/services.ts). */
export { CHROMIUM_PATH } from '../../services.js';
