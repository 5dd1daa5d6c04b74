/**
 * Each flow's steps in words an operations lead reads on `/ops`'s funnel ("Amount asked", not
 * `awaitingAmount`): one map per flow, beside the machines, keyed by the step's name as the funnel counts it
 * (src/ops/flow-graph.ts, `parent.child` when nested). test/ops/step-labels.test.ts holds every step of every
 * registered flow to a label here, so a new state cannot reach the page unnamed. English only: the page is
 * English.
 */
import type { FlowId } from './types.js';

/** The purchase steps data and pin share (flows/purchase.ts). */
const PURCHASE = {
  confirming: 'Summary shown',
  verifyingPin: 'Checking the PIN',
  reserving: 'Checking limits',
  purchasing: 'Buying',
  done: 'Bought',
  submittedBefore: 'Already bought',
  unconfirmed: 'Not confirmed yet',
  failed: 'Not bought',
  left: 'Left to the menu',
} as const;

/** Each flow's name on the page. */
export const FLOW_LABELS: Record<FlowId, string> = {
  menu: 'Main menu',
  pay: 'Pay someone',
  request: 'Request money',
  check: 'Check a payment received',
  data: 'Buy data',
  pin: 'Buy an exam pin',
  changePin: 'Change PIN',
  link: 'Link an app',
};

/** The label of each step, by flow. */
export const STEP_LABELS: Record<FlowId, Record<string, string>> = {
  menu: {
    choosing: 'Main menu',
    choosingLanguage: 'Language asked',
    flowChosen: 'Service chosen',
    languageChosen: 'Language chosen',
  },
  pay: {
    loadingPayees: 'Loading recent payees',
    choosingKind: 'Payee or kind asked',
    loadingBanks: 'Loading banks',
    choosingBank: 'Bank asked',
    awaitingAccountNumber: 'Account number asked',
    awaitingAccountName: 'Account name asked',
    awaitingEmail: 'Email asked (optional)',
    awaitingPhone: 'Phone number asked',
    lookingUpContact: 'Looking up the number',
    awaitingFirstName: 'First name asked',
    awaitingLastName: 'Last name asked',
    awaitingAmount: 'Amount asked',
    choosingCurrency: 'Currency asked',
    checkingAmount: 'Checking the amount',
    awaitingDescription: 'Note asked',
    verifyingContact: 'Checking the name with the network',
    notRegistered: 'Number not registered',
    confirmingName: 'Network name differs',
    confirming: 'Summary shown',
    checkingRepeat: 'Checking for a repeat',
    confirmingRepeat: 'Repeat payment asked',
    awaitingPin: 'PIN asked',
    verifyingPin: 'Checking the PIN',
    reserving: 'Checking limits',
    submitting: 'Sending the payment',
    done: 'Outcome shown',
  },
  request: {
    starting: 'Started',
    awaitingPhone: 'Phone number asked',
    awaitingAmount: 'Amount asked',
    choosingCurrency: 'Currency asked',
    awaitingReason: 'Reason asked',
    choosingInstructions: 'Payer instructions asked',
    confirming: 'Summary shown',
    submitting: 'Sending the request',
    done: 'Outcome shown',
  },
  check: {
    choosingMode: 'Latest or find asked',
    loadingLatest: 'Loading latest payments',
    choosingCollection: 'Payment picked',
    awaitingAmount: 'Amount asked',
    awaitingTransactionId: 'Transaction id asked',
    awaitingPhone: "Sender's number asked",
    claiming: 'Searching',
    done: 'Outcome shown',
  },
  data: {
    choosingNetwork: 'Network asked',
    awaitingAccount: 'Account number asked',
    loadingBundles: 'Loading bundles',
    choosingBundle: 'Bundle asked',
    choosingPhone: 'Which phone asked',
    awaitingPhone: 'Phone number asked',
    ...PURCHASE,
  },
  pin: {
    choosingService: 'Exam asked',
    loadingBundles: 'Loading pins',
    choosingBundle: 'Pin type asked',
    choosingQuantity: 'Quantity asked',
    choosingCandidate: 'Candidate asked',
    awaitingCode: 'Candidate code asked',
    validating: 'Checking the candidate',
    ...PURCHASE,
  },
  changePin: {
    awaitingSecret: 'Current PIN or code asked',
    checkingSecret: 'Checking it',
    awaitingNew: 'New PIN asked',
    drafting: 'Checking the new PIN',
    awaitingRepeat: 'New PIN repeated',
    saving: 'Saving',
    done: 'Outcome shown',
    left: 'Left to the menu',
  },
  link: {
    making: 'Making a code',
    shown: 'Code shown',
    refused: 'Refused',
  },
};

/** The label of `step` of `flow`; a step without one (never, by the test) reads as its words split. */
export function stepLabel(flow: FlowId, step: string): string {
  const label = STEP_LABELS[flow]?.[step];
  if (label) return label;
  const words = step
    .replace(/\./g, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
