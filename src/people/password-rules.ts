/**
 * What makes an operator's password too easy to guess: fewer than {@link OPERATOR_PASSWORD_MIN} characters
 * (or more than 200), or a strength under {@link OPERATOR_PASSWORD_SCORE} of 4 as zxcvbn estimates it (common
 * passwords and words, keyboard walks, repeats like `aaaaaaaaaaaa`, dates, the operator's own name). Every place
 * an operator's password is chosen asks this one function.
 */
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as en from '@zxcvbn-ts/language-en';

/** Shortest password an operator may be given. */
export const OPERATOR_PASSWORD_MIN = 12;
/** zxcvbn's score a password needs: 3, "safely unguessable: moderate protection from offline slow-hash scenario". */
export const OPERATOR_PASSWORD_SCORE = 3;

let estimator: ZxcvbnFactory | undefined;
/** Built on first use: the dictionaries are a few megabytes a process that adds no operator never loads. */
const strength = (): ZxcvbnFactory =>
  (estimator ??= new ZxcvbnFactory({
    graphs: common.adjacencyGraphs,
    dictionary: { ...common.dictionary, ...en.dictionary },
    translations: en.translations,
  }));

/** Why `password` may not be an operator's, in one sentence; null when it may. */
export function passwordWeakness(password: string, name = ''): string | null {
  if (password.length < OPERATOR_PASSWORD_MIN || password.length > 200)
    return `a password is ${OPERATOR_PASSWORD_MIN} to 200 characters`;
  const result = strength().check(password, [name, 'momo', 'operator', 'ops'].filter(Boolean));
  if (result.score >= OPERATOR_PASSWORD_SCORE) return null;
  const why = result.feedback.warning ?? 'it is too easy to guess';
  return `this password is too easy to guess (${why.replace(/\.$/, '')}); use a longer phrase of unrelated words`;
}
