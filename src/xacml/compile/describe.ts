/**
 * Short texts of policy expressions and target matches, for explanations: what a condition or a
 * target that failed says, readable by an operator (`string-at-least-one-member-of(subject
 * org:gateway:subject:token:clientId, string-bag("client1", "client2"))`).
 *
 * @module
 */
import type { XmlElement } from '../xml.js';

/** Longest text of one expression or target section. */
export const MAX_DESCRIPTION = 400;

const CATEGORIES: Record<string, string> = {
  SubjectAttributeDesignator: 'subject',
  ResourceAttributeDesignator: 'resource',
  ActionAttributeDesignator: 'action',
  EnvironmentAttributeDesignator: 'environment',
};

/** A function or match id without its URN prefix: `string-equal`. */
function shortId(id: string | undefined): string {
  if (id === undefined) return '?';
  const colon = id.lastIndexOf(':');
  return colon === -1 ? id : id.slice(colon + 1);
}

function text(el: XmlElement): string {
  switch (el.local) {
    case 'Apply':
    case 'Condition':
      if (el.attrs.has('FunctionId')) return `${shortId(el.attrs.get('FunctionId'))}(${args(el)})`;
      return args(el);
    case 'AttributeValue':
      return JSON.stringify(el.children.length > 0 ? '<xml>' : el.text.trim());
    case 'AttributeSelector':
      return `selector(${el.attrs.get('RequestContextPath') ?? '?'})`;
    case 'VariableReference':
      return `variable ${el.attrs.get('VariableId') ?? '?'}`;
    case 'Function':
      return shortId(el.attrs.get('FunctionId'));
    default: {
      const category = CATEGORIES[el.local];
      if (category !== undefined) return `${category} ${el.attrs.get('AttributeId') ?? '?'}`;
      if (el.attrs.has('MatchId')) return `${shortId(el.attrs.get('MatchId'))}(${args(el)})`;
      return `<${el.local}>`;
    }
  }
}

function args(el: XmlElement): string {
  return el.children
    .filter((c) => c.local !== 'Description')
    .map(text)
    .join(', ');
}

/**
 * The text of an expression (`Apply`, designator, value...) or of a target match, cut past
 * {@link MAX_DESCRIPTION} characters.
 */
export function describeElement(el: XmlElement): string {
  const out = text(el);
  return out.length > MAX_DESCRIPTION ? `${out.slice(0, MAX_DESCRIPTION)}…` : out;
}

/** The text of a target section's alternatives: matches joined by `and`, alternatives by `or`. */
export function describeAlternatives(alternatives: readonly (readonly XmlElement[])[]): string {
  const out = alternatives.map((matches) => matches.map(text).join(' and ')).join(' or ');
  return out.length > MAX_DESCRIPTION ? `${out.slice(0, MAX_DESCRIPTION)}…` : out;
}
