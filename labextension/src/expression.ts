/**
 * The runs table's filter language: a small tokenizer, a recursive-descent parser into an AST,
 * and an evaluator over a row. Nothing is ever handed to `eval` or `Function`; identifiers are
 * looked up through a resolver the caller gives (column names), so `constructor` or
 * `__proto__` are only names of columns that do not exist.
 *
 *   expr    := or
 *   or      := and (("or" | "||") and)*
 *   and     := not (("and" | "&&") not)*
 *   not     := ("not" | "!") not | compare
 *   compare := operand (("==" | "=" | "!=" | "<" | "<=" | ">" | ">=") operand)?
 *   operand := NUMBER | STRING | "true" | "false" | "null" | IDENT | "(" expr ")"
 *
 * IDENT: letters, digits, `_` and dots (`params.lr`), or any text in backticks (`my-param`).
 * STRING: "..." or '...' with the escapes \" \' \\ \n \t \r and \uXXXX.
 * NUMBER: 12, -3, 0.5, .5, 1e-3, 2.5E+4 (a sign belongs to the number: there is no arithmetic).
 *
 * Semantics: a missing column is null. `==`/`!=` compare numbers as numbers, strings as strings,
 * booleans as booleans; values of different types are never equal (null equals only null).
 * Ordering (`<` ...) holds only between two numbers or two strings; otherwise it is false.
 * `and`/`or`/`not` take truthiness: null, false, 0, NaN and "" are false.
 */

import type { Value } from './types';

export class ExpressionError extends Error {
  /** Offset (0-based) in the source where the problem is. */
  readonly position: number;

  constructor(message: string, position: number) {
    super(`${message} (at position ${position + 1})`);
    this.name = 'ExpressionError';
    this.position = position;
  }
}

export type TokenKind =
  | 'number'
  | 'string'
  | 'ident'
  | 'op'
  | 'lparen'
  | 'rparen'
  | 'and'
  | 'or'
  | 'not'
  | 'true'
  | 'false'
  | 'null'
  | 'eof';

export interface Token {
  kind: TokenKind;
  text: string;
  /** The literal value of a number or string token; the name of an identifier. */
  value?: number | string;
  pos: number;
}

const KEYWORDS: Record<string, TokenKind> = {
  and: 'and',
  or: 'or',
  not: 'not',
  true: 'true',
  false: 'false',
  null: 'null',
  none: 'null'
};

const COMPARISONS = ['==', '!=', '<=', '>=', '<', '>', '='] as const;

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

function isIdentPart(c: string): boolean {
  return isIdentStart(c) || isDigit(c) || c === '.';
}

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = source.length;
  while (i < n) {
    const c = source[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    if (c === '(') {
      tokens.push({ kind: 'lparen', text: c, pos: start });
      i++;
      continue;
    }
    if (c === ')') {
      tokens.push({ kind: 'rparen', text: c, pos: start });
      i++;
      continue;
    }
    if (c === '&' || c === '|') {
      if (source[i + 1] !== c) {
        throw new ExpressionError(`'${c}' alone is not an operator: use '${c}${c}' or '${c === '&' ? 'and' : 'or'}'`, start);
      }
      tokens.push({ kind: c === '&' ? 'and' : 'or', text: c + c, pos: start });
      i += 2;
      continue;
    }
    if (c === '!' && source[i + 1] !== '=') {
      tokens.push({ kind: 'not', text: '!', pos: start });
      i++;
      continue;
    }
    const op = COMPARISONS.find(o => source.startsWith(o, i));
    if (op !== undefined) {
      tokens.push({ kind: 'op', text: op, pos: start });
      i += op.length;
      continue;
    }
    const unsigned = c === '-' || c === '+' ? i + 1 : i;
    const d0 = source[unsigned] ?? '';
    if (isDigit(d0) || (d0 === '.' && isDigit(source[unsigned + 1] ?? ''))) {
      i = unsigned;
      while (i < n && isDigit(source[i])) i++;
      if (source[i] === '.') {
        i++;
        while (i < n && isDigit(source[i])) i++;
      }
      if (source[i] === 'e' || source[i] === 'E') {
        let j = i + 1;
        if (source[j] === '+' || source[j] === '-') j++;
        if (!isDigit(source[j] ?? '')) {
          throw new ExpressionError('a number\'s exponent needs digits', i);
        }
        while (j < n && isDigit(source[j])) j++;
        i = j;
      }
      if (i < n && isIdentStart(source[i])) {
        throw new ExpressionError(`unexpected '${source[i]}' after a number`, i);
      }
      const text = source.slice(start, i);
      tokens.push({ kind: 'number', text, value: Number(text), pos: start });
      continue;
    }
    if (c === '"' || c === "'") {
      const quote = c;
      i++;
      let out = '';
      let closed = false;
      while (i < n) {
        const d = source[i];
        if (d === quote) {
          closed = true;
          i++;
          break;
        }
        if (d === '\\') {
          const e = source[i + 1];
          if (e === undefined) break;
          const simple: Record<string, string> = {
            '"': '"',
            "'": "'",
            '\\': '\\',
            n: '\n',
            t: '\t',
            r: '\r',
            '/': '/'
          };
          if (e in simple && Object.prototype.hasOwnProperty.call(simple, e)) {
            out += simple[e];
            i += 2;
            continue;
          }
          if (e === 'u') {
            const hex = source.slice(i + 2, i + 6);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
              throw new ExpressionError('\\u needs four hex digits', i);
            }
            out += String.fromCharCode(parseInt(hex, 16));
            i += 6;
            continue;
          }
          throw new ExpressionError(`unknown escape '\\${e}' in a string`, i);
        }
        out += d;
        i++;
      }
      if (!closed) {
        throw new ExpressionError('a string is not closed', start);
      }
      tokens.push({ kind: 'string', text: source.slice(start, i), value: out, pos: start });
      continue;
    }
    if (c === '`') {
      const end = source.indexOf('`', i + 1);
      if (end < 0) {
        throw new ExpressionError('a `quoted name` is not closed', start);
      }
      const name = source.slice(i + 1, end);
      if (name === '') {
        throw new ExpressionError('an empty `` name', start);
      }
      tokens.push({ kind: 'ident', text: source.slice(start, end + 1), value: name, pos: start });
      i = end + 1;
      continue;
    }
    if (isIdentStart(c)) {
      while (i < n && isIdentPart(source[i])) i++;
      const text = source.slice(start, i);
      if (text.endsWith('.') || text.includes('..')) {
        throw new ExpressionError(`'${text}' is not a column name`, start);
      }
      const keyword = Object.prototype.hasOwnProperty.call(KEYWORDS, text.toLowerCase())
        ? KEYWORDS[text.toLowerCase()]
        : undefined;
      if (keyword !== undefined) {
        tokens.push({ kind: keyword, text, pos: start });
      } else {
        tokens.push({ kind: 'ident', text, value: text, pos: start });
      }
      continue;
    }
    throw new ExpressionError(`unexpected '${c}'`, start);
  }
  tokens.push({ kind: 'eof', text: '', pos: n });
  return tokens;
}

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export type Expr =
  | { type: 'literal'; value: Value }
  | { type: 'column'; name: string }
  | { type: 'not'; operand: Expr }
  | { type: 'and'; left: Expr; right: Expr }
  | { type: 'or'; left: Expr; right: Expr }
  | { type: 'compare'; op: CompareOp; left: Expr; right: Expr };

class Parser {
  private index = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): Expr {
    const expr = this.or();
    const next = this.peek();
    if (next.kind !== 'eof') {
      throw new ExpressionError(
        next.kind === 'rparen' ? "a ')' without its '('" : `expected 'and', 'or' or the end, found '${next.text}'`,
        next.pos
      );
    }
    return expr;
  }

  private peek(): Token {
    return this.tokens[this.index];
  }

  private take(): Token {
    const t = this.tokens[this.index];
    if (t.kind !== 'eof') this.index++;
    return t;
  }

  private or(): Expr {
    let left = this.and();
    while (this.peek().kind === 'or') {
      this.take();
      left = { type: 'or', left, right: this.and() };
    }
    return left;
  }

  private and(): Expr {
    let left = this.not();
    while (this.peek().kind === 'and') {
      this.take();
      left = { type: 'and', left, right: this.not() };
    }
    return left;
  }

  private not(): Expr {
    if (this.peek().kind === 'not') {
      this.take();
      return { type: 'not', operand: this.not() };
    }
    return this.compare();
  }

  private compare(): Expr {
    const left = this.operand();
    const t = this.peek();
    if (t.kind !== 'op') return left;
    this.take();
    const op = (t.text === '=' ? '==' : t.text) as CompareOp;
    const right = this.operand();
    const after = this.peek();
    if (after.kind === 'op') {
      throw new ExpressionError(
        `comparisons do not chain: write 'a ${op} b and b ${after.text} c'`,
        after.pos
      );
    }
    return { type: 'compare', op, left, right };
  }

  private operand(): Expr {
    const t = this.take();
    switch (t.kind) {
      case 'number':
        return { type: 'literal', value: t.value as number };
      case 'string':
        return { type: 'literal', value: t.value as string };
      case 'true':
        return { type: 'literal', value: true };
      case 'false':
        return { type: 'literal', value: false };
      case 'null':
        return { type: 'literal', value: null };
      case 'ident':
        return { type: 'column', name: t.value as string };
      case 'op':
        throw new ExpressionError(`expected a value before '${t.text}'`, t.pos);
      case 'lparen': {
        const inner = this.or();
        const close = this.take();
        if (close.kind !== 'rparen') {
          throw new ExpressionError(
            close.kind === 'eof' ? "a '(' is not closed" : `expected ')', found '${close.text}'`,
            close.kind === 'eof' ? t.pos : close.pos
          );
        }
        return inner;
      }
      case 'eof':
        throw new ExpressionError('the filter ends where a value is expected', t.pos);
      default:
        break;
    }
    throw new ExpressionError(`expected a value, found '${t.text}'`, t.pos);
  }
}

/** Parses a filter; throws ExpressionError (with a position) when it is malformed. */
export function parse(source: string): Expr {
  return new Parser(tokenize(source)).parse();
}

/** A column lookup: undefined when the row has no such column. */
export type Resolver<R> = (row: R, name: string) => Value | undefined;

export function truthy(v: Value | undefined): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (typeof v === 'string') return v !== '';
  return v;
}

function kindOf(v: Value): string {
  return v === null ? 'null' : typeof v;
}

export function compareValues(op: CompareOp, a: Value, b: Value): boolean {
  if (op === '==' || op === '!=') {
    const equal = kindOf(a) === kindOf(b) && a === b;
    return op === '==' ? equal : !equal;
  }
  const bothNumbers = typeof a === 'number' && typeof b === 'number';
  const bothStrings = typeof a === 'string' && typeof b === 'string';
  if (!bothNumbers && !bothStrings) return false;
  const x = a as number | string;
  const y = b as number | string;
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
  }
  return false;
}

function value<R>(expr: Expr, row: R, resolve: Resolver<R>): Value {
  switch (expr.type) {
    case 'literal':
      return expr.value;
    case 'column': {
      const v = resolve(row, expr.name);
      return v === undefined ? null : v;
    }
    default:
      return evaluate(expr, row, resolve);
  }
}

/** Evaluates an expression over a row: true when the row passes the filter. */
export function evaluate<R>(expr: Expr, row: R, resolve: Resolver<R>): boolean {
  switch (expr.type) {
    case 'literal':
      return truthy(expr.value);
    case 'column':
      return truthy(resolve(row, expr.name));
    case 'not':
      return !evaluate(expr.operand, row, resolve);
    case 'and':
      return evaluate(expr.left, row, resolve) && evaluate(expr.right, row, resolve);
    case 'or':
      return evaluate(expr.left, row, resolve) || evaluate(expr.right, row, resolve);
    case 'compare':
      return compareValues(expr.op, value(expr.left, row, resolve), value(expr.right, row, resolve));
  }
}

/** The column names an expression reads (to warn about unknown ones). */
export function columnsOf(expr: Expr, out: Set<string> = new Set()): Set<string> {
  switch (expr.type) {
    case 'column':
      out.add(expr.name);
      break;
    case 'not':
      columnsOf(expr.operand, out);
      break;
    case 'and':
    case 'or':
    case 'compare':
      columnsOf(expr.left, out);
      columnsOf(expr.right, out);
      break;
    default:
      break;
  }
  return out;
}

/** Parses and returns a predicate; an empty or blank source passes every row. */
export function compile<R>(source: string, resolve: Resolver<R>): (row: R) => boolean {
  if (source.trim() === '') return () => true;
  const expr = parse(source);
  return (row: R) => evaluate(expr, row, resolve);
}
