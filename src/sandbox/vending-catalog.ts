/**
 * What the vending group sells in the sandbox. Prices are in naira (the group serves Nigerian networks and
 * exams). Product codes (the `product_code` of name validation and pin purchases) are listed by the pin
 * bundles of each service, in an added `product_code` field:
 *   jamb: `utme` (UTME registration PIN), `de` (Direct Entry PIN)
 *   waec: `result-checker` (result checker PIN), `gce` (GCE registration PIN)
 *   mtn, glo, airtel, 9mobile, spectranet: `<service>-<amount>` airtime/recharge PINs, e.g. `mtn-500`.
 */
export interface PinProduct {
  product_code: string;
  description: string;
  amount: number;
  available: number;
}

export interface DataBundle {
  datacode: number;
  name: string;
  allowance: string;
  price: number;
  validity: string;
}

export interface Candidate {
  service_type: 'jamb' | 'waec';
  /** The confirmation code the candidate got from the exam board. */
  account_number: string;
  firstName: string;
  middleName: string;
  lastName: string;
  /** The candidate's phone number: purchases must send it as gsmNo. */
  gsmNo: string;
}

/** Exam services: their purchases need name validation first. */
export const EXAM_SERVICES = ['jamb', 'waec'] as const;
export const NETWORKS = ['mtn', 'airtel', '9mobile', 'glo', 'spectranet'] as const;

const networkPins = (network: string, amounts: number[]): PinProduct[] =>
  amounts.map((amount) => ({
    product_code: `${network}-${amount}`,
    description: `${network.toUpperCase()} ${amount} recharge PIN`,
    amount,
    available: 1000,
  }));

export const PIN_PRODUCTS: Record<string, PinProduct[]> = {
  jamb: [
    { product_code: 'utme', description: 'JAMB UTME registration PIN', amount: 6200, available: 500 },
    { product_code: 'de', description: 'JAMB Direct Entry registration PIN', amount: 6200, available: 200 },
  ],
  waec: [
    { product_code: 'result-checker', description: 'WAEC result checker PIN', amount: 3900, available: 1000 },
    { product_code: 'gce', description: 'WAEC GCE registration PIN', amount: 29950, available: 100 },
  ],
  mtn: networkPins('mtn', [100, 200, 500, 1000]),
  airtel: networkPins('airtel', [100, 200, 500, 1000]),
  '9mobile': networkPins('9mobile', [100, 200, 500, 1000]),
  glo: networkPins('glo', [100, 200, 500, 1000]),
  spectranet: networkPins('spectranet', [1000, 2000, 5000]),
};

export const DATA_BUNDLES: Record<(typeof NETWORKS)[number], DataBundle[]> = {
  mtn: [
    { datacode: 1001, name: 'MTN 1GB Daily', allowance: '1GB', price: 350, validity: '1 day' },
    { datacode: 1002, name: 'MTN 2GB Weekly', allowance: '2GB', price: 1000, validity: '7 days' },
    { datacode: 1003, name: 'MTN 10GB Monthly', allowance: '10GB', price: 4500, validity: '30 days' },
  ],
  airtel: [
    { datacode: 2001, name: 'Airtel 750MB Daily', allowance: '750MB', price: 300, validity: '1 day' },
    { datacode: 2002, name: 'Airtel 6GB Monthly', allowance: '6GB', price: 2500, validity: '30 days' },
  ],
  '9mobile': [
    { datacode: 3001, name: '9mobile 1GB Weekly', allowance: '1GB', price: 500, validity: '7 days' },
    { datacode: 3002, name: '9mobile 4.5GB Monthly', allowance: '4.5GB', price: 2000, validity: '30 days' },
  ],
  glo: [
    { datacode: 4001, name: 'Glo 1.35GB Weekly', allowance: '1.35GB', price: 500, validity: '14 days' },
    { datacode: 4002, name: 'Glo 10GB Monthly', allowance: '10GB', price: 3000, validity: '30 days' },
  ],
  spectranet: [
    { datacode: 5001, name: 'Spectranet 15GB', allowance: '15GB', price: 5000, validity: '30 days' },
    { datacode: 5002, name: 'Spectranet 40GB', allowance: '40GB', price: 10000, validity: '30 days' },
  ],
};

/** Confirmation codes name validation knows; any other code is an error. */
export const CANDIDATES: readonly Candidate[] = [
  {
    service_type: 'jamb',
    account_number: '1234567890',
    firstName: 'ADEBAYO',
    middleName: 'OLUWASEUN',
    lastName: 'TUNDE',
    gsmNo: '08031234567',
  },
  {
    service_type: 'jamb',
    account_number: '2345678901',
    firstName: 'CHIOMA',
    middleName: 'NGOZI',
    lastName: 'EZE',
    gsmNo: '08051234567',
  },
  {
    service_type: 'waec',
    account_number: '4250123456',
    firstName: 'IBRAHIM',
    middleName: 'MUSA',
    lastName: 'BELLO',
    gsmNo: '08061234567',
  },
];
