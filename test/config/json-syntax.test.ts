/**
 * The place and cause of a JSON syntax error, as the configuration and users files report it.
 */
import { expect } from 'chai';
import { JsonSyntaxError, parseJsonText } from '../../src/config/json-syntax.js';

function problem(text: string): string {
  try {
    parseJsonText(text);
  } catch (err) {
    expect(err).to.be.instanceOf(JsonSyntaxError);
    return (err as Error).message;
  }
  throw new Error(`${JSON.stringify(text)} parsed`);
}

describe('parseJsonText', () => {
  it('parses JSON as JSON.parse does', () => {
    expect(parseJsonText('{"a": [1, -2.5e3, "\\u00e9\\n", true, null]}')).to.deep.equal({ a: [1, -2500, 'é\n', true, null] });
  });

  it('names the line, the column and the problem', () => {
    const cases: Array<[string, string]> = [
      ['', 'at line 1, column 1: the file is empty'],
      ['{\n  "apis": [\n   }\n', 'at line 3, column 4: "}" where a value or "]" was expected'],
      ['{\n  "a": 1,\n}', 'at line 3, column 1: "}" after a comma, which JSON does not allow (remove the comma)'],
      ['{"a" 1}', 'at line 1, column 6: "1" where ":" was expected'],
      ["{'a': 1}", `at line 1, column 2: "'" where a property name in double quotes or "}" was expected`],
      ['{"a": 01}', 'at line 1, column 7: "01" is not a JSON number'],
      ['{"a": "x\ny"}', 'at line 1, column 9: a line break inside a string (write it \\n)'],
      ['{"a": "\\q"}', 'at line 1, column 8: "\\q" is not a JSON escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)'],
      ['{"a": 1} x', 'at line 1, column 10: "x" after the end of the document'],
      ['{"é": "ü", "b": x}', 'at line 1, column 17: "x" where a value was expected'],
      ['{"a": "abc', 'at line 1, column 11: the file ends inside a string'],
      ['\uFEFF{}', 'at line 1, column 1: the file starts with a byte order mark (U+FEFF): save it as UTF-8 without one'],
    ];
    for (const [text, message] of cases) expect(problem(text), JSON.stringify(text)).to.equal(message);
  });

  it('a million open brackets: the place, without exhausting the stack', () => {
    expect(problem('['.repeat(1_000_000))).to.equal('at line 1, column 1000001: the file ends where a value or "]" was expected');
  });
});
