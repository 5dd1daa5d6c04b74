/**
 * Banks for bank payments (`bank` is an id from this list). The spec does not show the shape of
 * /api/banks: the sandbox answers the usual list envelope of `{id, name, country, currency}`, filterable
 * by `country` and `currency`.
 */
import { Router } from 'express';
import { methodNotAllowed } from './errors.js';
import { exact, list, type Filters } from './listing.js';
import type { Currency } from './state.js';

export interface Bank {
  id: number;
  name: string;
  country: string;
  currency: Exclude<Currency, 'BXC'>;
}

export const BANKS: readonly Bank[] = [
  { id: 1, name: 'Stanbic Bank Uganda', country: 'UG', currency: 'UGX' },
  { id: 2, name: 'Centenary Bank', country: 'UG', currency: 'UGX' },
  { id: 3, name: 'dfcu Bank', country: 'UG', currency: 'UGX' },
  { id: 4, name: 'Equity Bank Uganda', country: 'UG', currency: 'UGX' },
  { id: 5, name: 'KCB Bank Kenya', country: 'KE', currency: 'KES' },
  { id: 6, name: 'Equity Bank Kenya', country: 'KE', currency: 'KES' },
  { id: 7, name: 'Co-operative Bank of Kenya', country: 'KE', currency: 'KES' },
];

export const bankFilters: Filters<Bank> = { country: exact((b) => b.country), currency: exact((b) => b.currency) };

export function banksRouter(): Router {
  const router = Router();
  router
    .route('/banks')
    .get((req, res) => {
      res.json(list(req, [...BANKS], bankFilters, (b) => ({ ...b })));
    })
    .all(methodNotAllowed('GET'));
  return router;
}
