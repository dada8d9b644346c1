import { describe, expect, it } from 'vitest';
import { compile, ExpressionError, parse, tokenize } from '../src/expression';
import type { Value } from '../src/types';

type Row = Record<string, Value>;
const resolve = (row: Row, name: string): Value | undefined =>
  Object.prototype.hasOwnProperty.call(row, name) ? row[name] : undefined;
const run = (src: string, row: Row): boolean => compile(src, resolve)(row);

function errorOf(src: string): ExpressionError {
  try {
    parse(src);
  } catch (e) {
    expect(e).toBeInstanceOf(ExpressionError);
    return e as ExpressionError;
  }
  throw new Error(`'${src}' parsed`);
}

describe('tokenize', () => {
  it('reads numbers with exponents and signs', () => {
    const values = tokenize('1e-3 2.5E+4 .5 -3 12').map(t => t.value);
    expect(values.slice(0, 5)).toEqual([0.001, 25000, 0.5, -3, 12]);
  });
  it('reads strings with escapes', () => {
    const [t] = tokenize(String.raw`"a \"q\" \\ \n \u0041 'x'"`);
    expect(t.value).toBe('a "q" \\ \n A \'x\'');
    expect(tokenize(String.raw`'it\'s'`)[0].value).toBe("it's");
  });
  it('reads dotted and backquoted names and keywords in any case', () => {
    const kinds = tokenize('params.lr AND `my-param` Or NOT x').map(t => t.kind);
    expect(kinds).toEqual(['ident', 'and', 'ident', 'or', 'not', 'ident', 'eof']);
  });
});

describe('evaluate', () => {
  const row: Row = { metric: 0.3, harness: 'openai', lr: 0.002, adopted: false, status: 'ok', n: 3 };
  it('compares numbers and strings', () => {
    expect(run('metric < 0.5 and harness == "openai"', row)).toBe(true);
    expect(run('metric >= 0.5', row)).toBe(false);
    expect(run('lr >= 1e-3 or not adopted', row)).toBe(true);
    expect(run('status != "ok"', row)).toBe(false);
    expect(run("harness = 'openai'", row)).toBe(true);
    expect(run('harness > "a"', row)).toBe(true);
    expect(run('n > -1', row)).toBe(true);
  });
  it('binds and tighter than or, not tighter than and', () => {
    // false and false or true -> true ; false and (false or true) -> false
    expect(run('adopted and adopted or n == 3', row)).toBe(true);
    expect(run('adopted and (adopted or n == 3)', row)).toBe(false);
    expect(run('not adopted and n == 3', row)).toBe(true);
    expect(run('not (adopted or n == 3)', row)).toBe(false);
    expect(run('((n == 3))', row)).toBe(true);
  });
  it('never equates values of different types and orders only like with like', () => {
    expect(run('n == "3"', row)).toBe(false);
    expect(run('n != "3"', row)).toBe(true);
    expect(run('harness < 5', row)).toBe(false);
    expect(run('harness > 5', row)).toBe(false);
    expect(run('adopted == false', row)).toBe(true);
    expect(run('adopted == 0', row)).toBe(false);
  });
  it('treats missing columns as null', () => {
    expect(run('missing == null', row)).toBe(true);
    expect(run('missing < 1', row)).toBe(false);
    expect(run('missing > 1', row)).toBe(false);
    expect(run('not missing', row)).toBe(true);
    expect(run('metric != null', row)).toBe(true);
  });
  it('executes no code: prototype names are missing columns', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(run(`${name} == null`, row)).toBe(true);
      expect(run(name, row)).toBe(false);
    }
    expect(run('constructor.constructor == null', row)).toBe(true);
  });
  it('passes every row for an empty filter', () => {
    expect(run('   ', row)).toBe(true);
  });
});

describe('errors', () => {
  it('gives positions', () => {
    expect(errorOf('metric <').position).toBe(8);
    expect(errorOf('metric < 0.5 and').position).toBe(16);
    expect(errorOf('(metric < 1').position).toBe(0);
    expect(errorOf('metric < 1)').position).toBe(10);
    expect(errorOf('"abc').position).toBe(0);
    expect(errorOf('a # b').position).toBe(2);
    expect(errorOf('a & b').position).toBe(2);
    expect(errorOf('1e').position).toBe(1);
    expect(errorOf('"\\q"').position).toBe(1);
    expect(errorOf('a < b < c').position).toBe(6);
    expect(errorOf('a b').position).toBe(2);
    expect(errorOf('== 3').position).toBe(0);
    expect(errorOf('params.').position).toBe(0);
    expect(errorOf('eval("x")').position).toBe(4);
  });
  it('says where in the message', () => {
    expect(errorOf('metric <').message).toMatch(/position 9/);
  });
});
