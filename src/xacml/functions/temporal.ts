/**
 * Date and time arithmetic (XACML 2.0 A.3.7).
 *
 * @module
 */
import type { FunctionSpec } from './types.js';
import { F1, fixed, one } from './define.js';
import {
  addDayTimeDuration,
  addYearMonthDuration,
  type DayTimeDuration,
  type XsDateTime,
  type YearMonthDuration,
} from '../datatypes/temporal.js';
import * as T from '../datatypes/uris.js';

/**
 * `dateTime-add-dayTimeDuration`, `dateTime-add-yearMonthDuration`,
 * `dateTime-subtract-dayTimeDuration`, `dateTime-subtract-yearMonthDuration`,
 * `date-add-yearMonthDuration`, `date-subtract-yearMonthDuration` (XQuery semantics: adding
 * months clamps the day to the end of the month; the timezone is kept).
 */
export function temporalFunctions(): FunctionSpec[] {
  const dt = one(T.DATE_TIME);
  const d = one(T.DATE);
  const dtd = one(T.DAY_TIME_DURATION);
  const ymd = one(T.YEAR_MONTH_DURATION);
  const dtdOp = (sign: 1 | -1) => (a: readonly unknown[]) => addDayTimeDuration(a[0] as XsDateTime, a[1] as DayTimeDuration, sign);
  const ymdOp = (sign: 1 | -1) => (a: readonly unknown[]) => addYearMonthDuration(a[0] as XsDateTime, a[1] as YearMonthDuration, sign);
  return [
    fixed(`${F1}dateTime-add-dayTimeDuration`, [dt, dtd], dt, dtdOp(1)),
    fixed(`${F1}dateTime-add-yearMonthDuration`, [dt, ymd], dt, ymdOp(1)),
    fixed(`${F1}dateTime-subtract-dayTimeDuration`, [dt, dtd], dt, dtdOp(-1)),
    fixed(`${F1}dateTime-subtract-yearMonthDuration`, [dt, ymd], dt, ymdOp(-1)),
    fixed(`${F1}date-add-yearMonthDuration`, [d, ymd], d, ymdOp(1)),
    fixed(`${F1}date-subtract-yearMonthDuration`, [d, ymd], d, ymdOp(-1)),
  ];
}
