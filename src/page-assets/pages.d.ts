/**
 * Types of the pages' browser scripts (each console's `page/*.js`), for tsconfig.pages.json only (the
 * other tsconfigs leave this file out: it needs the DOM library): the placeholders the server fills
 * (see files.ts), as the scripts see them, and the elements the scripts find by id.
 */

/** A page's message table (its `texts.json`): texts by language, then by key. */
declare const __TEXTS__: Readonly<Record<'it' | 'en', Readonly<Record<string, string>>>>;
/** The outcome catalogue's labels, by outcome code, then language. */
declare const __OUTCOME_LABELS__: Readonly<Record<string, Readonly<Record<'it' | 'en', string>>>>;
/** The outcome groups: the outcome codes of each group, by group name. */
declare const __OUTCOME_GROUPS__: Readonly<Record<string, readonly string[]>>;
/** The columns of the CSV export. */
declare const __EXPORT_COLUMNS__: readonly string[];
/** The CSV export's columns checked by default. */
declare const __DEFAULT_COLUMNS__: readonly string[];

/**
 * An element of a page found by its id (the `$` of the scripts), typed as any of the pages'
 * controls (an input, a select, a text area, a dialog, a form with its fields by name): the page's
 * HTML decides which it is.
 */
type Control = HTMLInputElement &
  HTMLSelectElement &
  HTMLTextAreaElement &
  HTMLDialogElement &
  Pick<HTMLFormElement, 'reset'> & { readonly elements: HTMLFormControlsCollection & Readonly<Record<string, Control>> };
