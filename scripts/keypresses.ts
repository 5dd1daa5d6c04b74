/**
 * Counts what each USSD flow costs a person: the round trips (screens answered after the dial) and the keys
 * pressed (every character typed, plus one Send per answer), by walking each flow through the product's
 * Africa's Talking gateway route as a person would: each screen is read and answered by the first rule whose
 * words match it (a choice is picked by its label, never by a remembered number), so the same walk runs
 * against any version of the product whose screens use these English words.
 *
 *   npx tsx scripts/keypresses.ts            # starts the demo product in this process (embedded sandbox)
 *   npx tsx scripts/keypresses.ts <url>      # walks a product already running at <url>
 *   CURRENCIES=UGX npx tsx scripts/keypresses.ts   # the demo offering one currency (none is asked)
 *
 * Prints one Markdown table row per walk. docs/ux.md has the figures before and after issue 36.
 */
import { loadConfig } from '../src/config.js';
import { startApp } from '../src/app.js';
import { createLogger } from '../src/log.js';

/** What a person answers on a screen: typed text, or the choice whose label matches. */
type Answer = { type: string } | { pick: RegExp };
type Rule = [RegExp, Answer];

interface Walk {
  name: string;
  phone: string;
  rules: Rule[];
  /** The walk is over when the screen matches (an END always ends it). */
  until?: RegExp;
}

const PIN = '1234';
/** The screens of paying Sarah Nakato `amount` UGX, in the words of every version walked. */
const paying = (amount: string, whom: RegExp = /Someone new|Mobile money/): Rule[] => [
  [/What would you like to do\?/, { pick: /^Pay someone$/ }],
  [/second payment/i, { pick: /send again/i }],
  [/Send [\d,]+ UGX/, { pick: /^Confirm$/ }],
  [/Pay whom\?/, { pick: whom }],
  [/What do you want to send/, { pick: /^Mobile money$/ }],
  [/phone number of the person/i, { type: '0772000001' }],
  [/The network knows .+ as/, { pick: /^Pay / }],
  [/first name/i, { type: 'Sarah' }],
  [/last name/i, { type: 'Nakato' }],
  [/Enter the amount/i, { type: amount }],
  [/currency/i, { pick: /^UGX$/ }],
  [/description|note for the recipient/i, { type: 'Lunch' }],
  [/Enter your PIN/, { type: PIN }],
];

const WALKS: Walk[] = [
  { name: 'Pay a new number (mobile money)', phone: '+256772123456', rules: paying('5000') },
  // Another amount: the same amount again would be asked whether it is a second payment.
  { name: 'Pay someone paid before', phone: '+256772123456', rules: paying('7000', /^Sarah Nakato$/) },
  {
    name: 'Pay over the limit: until told the figure',
    phone: '+256772123457',
    rules: paying('90000000'),
    until: /more than your limit|at most [\d,]+ UGX/,
  },
  {
    name: 'Request money',
    phone: '+256772123458',
    rules: [
      [/What would you like to do\?/, { pick: /^Request money$/ }],
      [/Ask [^\n]* to pay|Request [\d,]+ UGX|[\d,]+ UGX from/, { pick: /^(Confirm|Send request)$/ }],
      [/phone number/i, { type: '0772000001' }],
      [/Enter the amount/i, { type: '3000' }],
      [/currency/i, { pick: /^UGX$/ }],
      [/reason|what is it for/i, { type: 'Dinner' }],
      [/instructions|send them/i, { pick: /^Yes/ }],
      [/Enter your PIN/, { type: PIN }],
    ],
  },
  {
    name: 'Buy data (Nigerian number)',
    phone: '+2348031400002',
    rules: [
      [/What would you like to do\?/, { pick: /^Buy data$/ }],
      [/Enter your PIN/, { type: PIN }],
      [/Buy [^\n]* for /, { pick: /^Confirm$/ }],
      [/Choose the network/i, { pick: /MTN/i }],
      [/bundle/i, { pick: /1GB/ }],
      [/Send the data to/i, { pick: /\+234|my number|this number/i }],
    ],
  },
];

/** The number of the choice whose label matches, from lines `N. label`. */
function choose(screen: string, label: RegExp): string {
  for (const line of screen.split('\n')) {
    const match = /^(\d+)\. (.*)$/.exec(line.trim());
    if (match && label.test(match[2]!)) return match[1]!;
  }
  throw new Error(`no choice ${label} on the screen:\n${screen}`);
}

async function walk(url: string, w: Walk, session: string) {
  const answers: string[] = [];
  const post = async (): Promise<string> => {
    const res = await fetch(`${url}/ussd/africastalking`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        sessionId: session,
        serviceCode: '*384*123#',
        phoneNumber: w.phone,
        networkCode: '63902',
        text: answers.join('*'),
      }),
    });
    if (res.status !== 200) throw new Error(`USSD answered ${res.status}`);
    return res.text();
  };
  let screen = await post();
  const typed: string[] = [];
  for (let step = 0; step < 30 && screen.startsWith('CON ') && !(w.until?.test(screen) ?? false); step++) {
    const body = screen.slice(4);
    // A note kept for this dial opens the first screen: the menu below it is answered.
    const rule = w.rules.find(([words]) => words.test(body));
    if (!rule) throw new Error(`${w.name}: no rule for the screen:\n${body}`);
    const answer = 'type' in rule[1] ? rule[1].type : choose(body, rule[1].pick);
    if (typed.length >= 3 && typed.slice(-3).every((a) => a === answer)) throw new Error(`stuck on:\n${body}`);
    typed.push(answer);
    answers.push(answer);
    screen = await post();
  }
  const keys = typed.reduce((n, a) => n + a.length + 1, 0);
  return { trips: typed.length, keys, typed, last: screen.split('\n')[0]!.slice(0, 70) };
}

async function main(): Promise<void> {
  const given = process.argv[2];
  const running = given
    ? undefined
    : await startApp(
        loadConfig({
          DATA_DIR: 'memory://',
          PORT: '0',
          ...(process.env.CURRENCIES ? { CURRENCIES: process.env.CURRENCIES } : {}),
        }),
        { logger: createLogger('silent') },
      );
  const url = given ?? running!.url;
  try {
    console.log('| Flow | Round trips after the dial | Keys pressed (characters + Send) | Answers |');
    console.log('| --- | --- | --- | --- |');
    let n = 0;
    for (const w of WALKS) {
      try {
        const { trips, keys, typed, last } = await walk(url, w, `keys-${process.pid}-${++n}`);
        console.log(`| ${w.name} | ${trips} | ${keys} | ${typed.join(' ')} → ${last.replace(/\|/g, '/')} |`);
      } catch (error) {
        // A version whose words no rule knows: said in the table, not guessed.
        console.log(`| ${w.name} | - | - | not walked: ${String(error).split('\n').slice(0, 2).join(' ')} |`);
      }
    }
  } finally {
    await running?.stop();
  }
}

await main();
