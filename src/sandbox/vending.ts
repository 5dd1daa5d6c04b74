/**
 * The vending group, mounted at /vending (its own JSON parser, auth and error handler).
 *
 * Auth: name validation needs `x-api-key: <vending key>`; bundle listings and purchases need
 * `Authorization: Token <vending key>` (`Bearer <key>` accepted). `Provider-Date` may be left out; when
 * present it must be a date (RFC 7231 or ISO), else 400.
 * Answers: `{status: 'success', message, code: 200, data}`. Errors (the spec does not show them) use the
 * same envelope: `{status: 'error', message, code: <the HTTP status>, data}`, data holding the field ->
 * messages map for a 400 on the body, else null.
 * Purchases (paths VENDING_PATHS in src/momo/assumptions.ts and shapes agreed with the client, not in the
 * spec), each with Duplicate-Check-Key (409):
 *   POST /services/epin/purchase {service_type, product_code, account_number, gsmNo, amount, quantity, reference?}
 *     -> {reference, status: 'successful', amount, quantity, pins: [{pin, serial}]}
 *     amount is the price of one pin; exam services (jamb, waec) refuse a gsmNo other than the one name
 *     validation returns for the account_number (400).
 *   POST /services/databundle/purchase {service_type, datacode, phonenumber, amount, account_number?, reference?}
 *     -> {reference, status: 'successful', datacode, phonenumber, amount}; SPECTRANET needs account_number.
 */
import { Decimal } from 'decimal.js';
import { VENDING_PATHS } from '../momo/assumptions.js';
import { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import { jsonBody } from './body.js';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { z } from 'zod';
import type { SandboxContext } from './context.js';
import type { DuplicateKeys } from './duplicates.js';
import { faultGate } from './faults.js';
import { detailError, fieldError, methodNotAllowed, toApiError, validate } from './errors.js';
import { code, integer, optionalText, REQUIRED, text } from './fields.js';
import type { Organization } from './state.js';
import { CANDIDATES, DATA_BUNDLES, EXAM_SERVICES, NETWORKS, PIN_PRODUCTS, type Candidate } from './vending-catalog.js';

export interface VendingPurchase {
  kind: 'epin' | 'databundle';
  organization: number;
  reference: string;
  request: Record<string, unknown>;
  data: Record<string, unknown>;
}

const ok = (message: string, data: unknown) => ({ status: 'success', message, code: 200, data });

const serviceType = (allowed: readonly string[]) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? v.trim().toLowerCase() : v),
    z.enum(allowed as [string, ...string[]], {
      error: (i) => (i.input === undefined ? REQUIRED : `"${String(i.input)}" is not one of ${allowed.join(', ')}.`),
    }),
  );

/** A price as a string or a number, compared with the catalogue's. */
const price = code.transform((v, ctx) => {
  try {
    return new Decimal(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'A valid number is required.' });
    return z.NEVER;
  }
});

/** Nigerian numbers in local (`0803...`) or international form, as E.164. */
const nationalNumber = (v: string) => {
  const parsed = parsePhoneNumberFromString(v.trim(), 'NG');
  return parsed?.isValid() ? parsed.number : undefined;
};

const PIN_SERVICES = [...EXAM_SERVICES, ...NETWORKS];

export const nameQuery = z.object({
  service_type: serviceType(EXAM_SERVICES),
  account_number: code,
  product_code: text(50),
});
export const dataBundlesQuery = z.object({ service_type: serviceType(NETWORKS), account_number: optionalText(50) });
export const pinBundlesQuery = z.object({ service_type: serviceType(PIN_SERVICES) });
export const pinPurchase = z.object({
  service_type: serviceType(PIN_SERVICES),
  product_code: text(50),
  account_number: code,
  gsmNo: code,
  amount: price,
  quantity: integer,
  reference: optionalText(100),
});
export const dataPurchase = z.object({
  service_type: serviceType(NETWORKS),
  datacode: code,
  phonenumber: code,
  amount: price,
  account_number: optionalText(50),
  reference: optionalText(100),
});

function productOf(service: string, productCode: string) {
  const product = PIN_PRODUCTS[service]?.find((p) => p.product_code === productCode.trim().toLowerCase());
  if (!product) {
    throw fieldError(
      'product_code',
      `Unknown product code for ${service}: use one of ${PIN_PRODUCTS[service]!.map((p) => p.product_code).join(', ')}.`,
    );
  }
  return product;
}

function candidateOf(service: string, accountNumber: string): Candidate {
  const candidate = CANDIDATES.find((c) => c.service_type === service && c.account_number === accountNumber.trim());
  if (!candidate) throw detailError(404, `No ${service} candidate has the confirmation code ${accountNumber}.`);
  return candidate;
}

const needsAccount = (service: string, accountNumber: string | undefined) => {
  if (service === 'spectranet' && !accountNumber)
    throw fieldError('account_number', 'Required for SPECTRANET: the account number.');
};

const vendingOrg = (res: Response) => res.locals.vendingOrg as Organization;

function authenticate(ctx: SandboxContext, header: 'x-api-key' | 'authorization'): RequestHandler {
  return (req, res, next) => {
    const raw = req.get(header) ?? '';
    const key = header === 'x-api-key' ? raw.trim() : (/^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(raw)?.[1] ?? '');
    const org = key ? ctx.state.organizationByVendingKey(key) : undefined;
    if (!org)
      throw detailError(
        401,
        header === 'x-api-key' ? 'Invalid or missing x-api-key.' : 'Invalid or missing Authorization.',
      );
    res.locals.vendingOrg = org;
    next();
  };
}

const providerDate: RequestHandler = (req, _res, next) => {
  const date = req.get('provider-date');
  if (date !== undefined && Number.isNaN(Date.parse(date)))
    throw fieldError('Provider-Date', 'Send the current date (RFC 7231).');
  next();
};

const envelopeErrors =
  (ctx: SandboxContext): ErrorRequestHandler =>
  (err, _req, res, _next) => {
    const e = toApiError(err, ctx.log);
    const detail = e.body.detail;
    const fields = typeof detail === 'string' ? null : (e.body as Record<string, string[]>);
    const message = fields
      ? Object.entries(fields)
          .map(([k, v]) => `${k}: ${v.join(' ')}`)
          .join('; ')
      : String(detail);
    res.status(e.status).set(e.headers).json({ status: 'error', message, code: e.status, data: fields });
  };

export function vendingRouter(ctx: SandboxContext, duplicates: DuplicateKeys, purchases: VendingPurchase[]): Router {
  const router = Router();
  const token = authenticate(ctx, 'authorization');
  const guard = duplicates.guard((res) => `vending:${vendingOrg(res).id}`);
  const nextReference = () => `SBXV${String(purchases.length + 1).padStart(8, '0')}`;
  /** Keeps a purchase made (the organization's, as asked) and answers it. */
  const purchased = (
    req: Request,
    res: Response,
    kind: VendingPurchase['kind'],
    data: { reference: string } & Record<string, unknown>,
  ) => {
    purchases.push({
      kind,
      organization: vendingOrg(res).id,
      reference: data.reference,
      request: req.body as Record<string, unknown>,
      data,
    });
    res.json(ok('Purchase successful', data));
  };
  router.use(faultGate(ctx.faults), jsonBody);

  router
    .route(VENDING_PATHS.nameValidation)
    .post(authenticate(ctx, 'x-api-key'), (req, res) => {
      const q = validate(nameQuery, req.body);
      productOf(q.service_type, q.product_code);
      const c = candidateOf(q.service_type, q.account_number);
      const name = `${c.firstName} ${c.middleName} ${c.lastName}`;
      res.json(
        ok('Name validated', {
          user: {
            name,
            address: null,
            outstandingBalance: null,
            dueDate: null,
            district: null,
            accountNumber: null,
            minimumAmount: null,
            rawOutput: {
              firstName: c.firstName,
              lastName: c.lastName,
              middleName: c.middleName,
              gsmNo: c.gsmNo,
              error: null,
            },
            errorMessage: null,
          },
        }),
      );
    })
    .all(methodNotAllowed('POST'));

  router
    .route(VENDING_PATHS.dataBundles)
    .post(token, providerDate, (req, res) => {
      const q = validate(dataBundlesQuery, req.body);
      needsAccount(q.service_type, q.account_number);
      res.json(ok('Bundles fetched', DATA_BUNDLES[q.service_type as (typeof NETWORKS)[number]]));
    })
    .all(methodNotAllowed('POST'));

  router
    .route(VENDING_PATHS.pinBundles)
    .post(token, providerDate, (req, res) => {
      const q = validate(pinBundlesQuery, req.body);
      res.json(ok('Bundles fetched', PIN_PRODUCTS[q.service_type]));
    })
    .all(methodNotAllowed('POST'));

  router
    .route(VENDING_PATHS.pinPurchase)
    .post(token, providerDate, guard, (req, res) => {
      const q = validate(pinPurchase, req.body);
      const product = productOf(q.service_type, q.product_code);
      if (!q.amount.eq(product.amount))
        throw fieldError('amount', `The price of one ${product.product_code} pin is ${product.amount}.`);
      if (q.quantity < 1 || q.quantity > product.available)
        throw fieldError('quantity', `Buy between 1 and ${product.available}.`);
      if ((EXAM_SERVICES as readonly string[]).includes(q.service_type)) {
        const c = candidateOf(q.service_type, q.account_number);
        if (nationalNumber(q.gsmNo) !== nationalNumber(c.gsmNo)) {
          throw fieldError('gsmNo', 'Not the gsmNo name validation returned for this account_number.');
        }
      }
      const reference = q.reference ?? nextReference();
      const serial = purchases.length + 1;
      const pins = Array.from({ length: q.quantity }, (_, i) => ({
        pin: String((serial * 7_919 + i * 104_729) % 1e12).padStart(12, '0'),
        serial: `SBX${String(serial).padStart(6, '0')}${String(i + 1).padStart(3, '0')}`,
      }));
      purchased(req, res, 'epin', {
        reference,
        status: 'successful',
        amount: product.amount,
        quantity: q.quantity,
        pins,
      });
    })
    .all(methodNotAllowed('POST'));

  router
    .route(VENDING_PATHS.dataPurchase)
    .post(token, providerDate, guard, (req, res) => {
      const q = validate(dataPurchase, req.body);
      needsAccount(q.service_type, q.account_number);
      const bundle = DATA_BUNDLES[q.service_type as (typeof NETWORKS)[number]].find(
        (b) => String(b.datacode) === q.datacode,
      );
      if (!bundle) throw fieldError('datacode', `Unknown datacode for ${q.service_type}: list the bundles first.`);
      if (!q.amount.eq(bundle.price))
        throw fieldError('amount', `The price of bundle ${bundle.datacode} is ${bundle.price}.`);
      if (!nationalNumber(q.phonenumber)) throw fieldError('phonenumber', 'Enter a valid phone number.');
      purchased(req, res, 'databundle', {
        reference: q.reference ?? nextReference(),
        status: 'successful',
        datacode: bundle.datacode,
        phonenumber: q.phonenumber,
        amount: bundle.price,
      });
    })
    .all(methodNotAllowed('POST'));

  router.use(() => {
    throw detailError(404, 'Not found.');
  });
  router.use(envelopeErrors(ctx));
  return router;
}
