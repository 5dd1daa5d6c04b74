/**
 * The flow diagrams (src/ops/diagrams.ts): the committed docs/flows/<flow>.md and docs/flows/README.md are what
 * the machines give now (so `npm run diagrams` on a fresh clone changes nothing), each is valid Mermaid that
 * draws in a real browser (mermaid from its npm package in headless Chromium: its parser needs a DOM), and a
 * diagram shows what the machine holds.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { flows } from '../../flows/index.js';
import type { FlowModule } from '../../flows/types.js';
import { diagrams, generatedFiles, mermaidOf } from '../../src/ops/diagrams.js';
import { flowGraph, stepNames } from '../../src/ops/flow-graph.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../adapters/ussd/chromium.js';

const root = join(import.meta.dirname, '..', '..');

/** A machine with a nested state, which no flow has yet. */
const nested = setup({}).createMachine({
  id: 'nested',
  initial: 'outer',
  states: {
    outer: { initial: 'a', states: { a: { on: { GO: 'b' } }, b: { type: 'final' } }, onDone: 'end' },
    end: { type: 'final' },
  },
});
const committed = (path: string) => readFileSync(join(root, path), 'utf8');

describe('the committed diagrams', () => {
  it('are exactly what the machines give: run `npm run diagrams` after changing a flow', () => {
    const files = generatedFiles();
    expect([...files.keys()].sort()).toEqual([
      'docs/flows/README.md',
      'docs/flows/changePin.md',
      'docs/flows/check.md',
      'docs/flows/data.md',
      'docs/flows/link.md',
      'docs/flows/menu.md',
      'docs/flows/pay.md',
      'docs/flows/pin.md',
      'docs/flows/request.md',
    ]);
    for (const [path, content] of files)
      expect(committed(path), `${path} is stale: run npm run diagrams`).toBe(content);
  });

  it('differ from a changed machine: a step added to pay would show', () => {
    const pay = flows.pay!;
    const changed = pay.machine.config.states as Record<string, unknown>;
    const extra = setup({}).createMachine({
      ...pay.machine.config,
      states: { ...changed, auditing: { type: 'final' } },
    } as never);
    const files = generatedFiles({ ...flows, pay: { ...pay, machine: extra } as unknown as FlowModule });
    expect(files.get('docs/flows/pay.md')).not.toBe(committed('docs/flows/pay.md'));
    expect(files.get('docs/flows/pay.md')).toContain('auditing --> [*]');
  });
});

describe('a diagram', () => {
  const pay = diagrams().find((d) => d.flow === 'pay')!.mermaid;

  it('has every step of the machine, its start and its ends', () => {
    for (const step of stepNames(flowGraph(flows.pay!.machine))) expect(pay).toMatch(new RegExp(`\\b${step}\\b`));
    expect(pay).toMatch(/^stateDiagram-v2\n/);
    expect(pay).toContain('[*] --> loadingPayees');
    expect(pay).toContain('done --> [*]');
  });

  it('labels moves with their event and guard, and names the service call of a busy step', () => {
    expect(pay).toContain('awaitingAmount --> choosingCurrency : ANSWERED [isValidAnswer(amount)]');
    expect(pay).toContain('awaitingAmount --> checkingAmount : ANSWERED [isValidAnswer(amount) and hasOneCurrency]');
    expect(pay).toContain('state "submitting<br/>calls createPayment" as submitting');
    expect(pay).toContain('submitting --> done : done');
    expect(pay).toContain('submitting --> done : error');
    expect(pay).toMatch(/class [\w,]*\bsubmitting\b[\w,]* call/);
  });

  it('draws nested states inside their parent', () => {
    const text = mermaidOf(flowGraph(nested));
    expect(text).toContain('state outer {\n    [*] --> outer_a\n');
    expect(text).toContain('outer_a --> outer_b : GO');
    expect(text).toContain('outer --> end : done');
  });

  it('is the same every time', () => {
    expect(diagrams().map((d) => d.mermaid)).toEqual(diagrams().map((d) => d.mermaid));
  });
});

describe('every diagram in Chromium', () => {
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
    page = await browser.newPage();
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('mermaid/dist/mermaid.min.js') });
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Renders Mermaid text in the page; the SVG, or the parser's error. */
  const render = (source: string, id: string) =>
    page.evaluate(
      async ({ source, id }) => {
        const mermaid = (
          window as unknown as {
            mermaid: { initialize(o: object): void; render(id: string, text: string): Promise<{ svg: string }> };
          }
        ).mermaid;
        mermaid.initialize({ startOnLoad: false });
        try {
          return { svg: (await mermaid.render(id, source)).svg };
        } catch (error) {
          return { error: String(error) };
        }
      },
      { source, id },
    );

  it.each(diagrams().map((d) => [d.flow, d.mermaid]))('draws %s as an SVG without an error', async (flow, source) => {
    const drawn = await render(source, `diagram-${flow}`);
    expect(drawn.error).toBeUndefined();
    expect(drawn.svg).toMatch(/^<svg/);
    expect(drawn.svg).not.toMatch(/Syntax error/i);
    for (const step of stepNames(flowGraph(flows[flow]!.machine))) expect(drawn.svg).toContain(`>${step}<`);
  });

  it('draws a nested state inside its parent', async () => {
    const drawn = await render(mermaidOf(flowGraph(nested)), 'nested');
    expect(drawn.error).toBeUndefined();
    expect(drawn.svg).toContain('>outer<');
  });

  it('refuses broken Mermaid (the check can fail)', async () => {
    const drawn = await render('stateDiagram-v2\n  a --> : nowhere\n  [*] -- b', 'broken');
    expect(drawn.error).toMatch(/Parse error/);
  });
});
