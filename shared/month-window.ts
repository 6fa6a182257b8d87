// The calendar month an instant falls in, in a time zone: its label and the instants it begins
// and ends. A schedule's monthly budget counts the runs started in it (machines/schedule-budget.ts).

export interface MonthWindow {
  /** `YYYY-MM` in the zone. */
  month: string;
  /** Midnight of the month's first day in the zone. */
  start: Date;
  /** Midnight of the next month's first day in the zone. */
  end: Date;
}

/** The zone's wall-clock fields of an instant. */
function wallClock(at: number, timeZone: string): { year: number; month: number; day: number; hour: number; minute: number; second: number } {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }).formatToParts(new Date(at));
  const field = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value);
  return { year: field('year'), month: field('month'), day: field('day'), hour: field('hour'), minute: field('minute'), second: field('second') };
}

/** The zone's offset from UTC at an instant, in ms (positive east of Greenwich). */
function offsetAt(at: number, timeZone: string): number {
  const w = wallClock(at, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - Math.floor(at / 1000) * 1000;
}

/** The instant of a wall-clock midnight in the zone (a midnight skipped by a clock change: the first instant after it). */
function midnight(year: number, month: number, timeZone: string): Date {
  const local = Date.UTC(year, month - 1, 1);
  // The offset can differ either side of a change: take it at the guess, then check once more.
  let at = local - offsetAt(local, timeZone);
  at = local - offsetAt(at, timeZone);
  return new Date(at);
}

export function monthWindow(at: Date | number, timeZone: string): MonthWindow {
  const instant = typeof at === 'number' ? at : at.getTime();
  const { year, month } = wallClock(instant, timeZone);
  const next = month === 12 ? { year: year + 1, month: 1 } : { year, month: month + 1 };
  return { month: `${year}-${String(month).padStart(2, '0')}`, start: midnight(year, month, timeZone), end: midnight(next.year, next.month, timeZone) };
}
