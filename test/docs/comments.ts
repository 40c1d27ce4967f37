/**
 * The comments of a TypeScript or JavaScript file, found by TypeScript's scanner, so that a `//` inside a
 * string, a template or a regular expression is not taken for one. Scanning without parsing is several times
 * faster over the whole repository; the two places where the scanner needs the parser's context are handled
 * here: whether a `/` starts a regular expression (it does where an operand is expected), and whether a `}`
 * closes a template's `${…}`.
 */
import ts from 'typescript';

/** One comment with the 1-based line it starts on. */
export interface Comment {
  readonly line: number;
  readonly text: string;
}

/** Tokens after which a `/` divides: they end an operand. After anything else it starts a regular expression. */
const ENDS_OPERAND: ReadonlySet<ts.SyntaxKind> = new Set([
  ts.SyntaxKind.Identifier,
  ts.SyntaxKind.PrivateIdentifier,
  ts.SyntaxKind.NumericLiteral,
  ts.SyntaxKind.BigIntLiteral,
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateTail,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.CloseParenToken,
  ts.SyntaxKind.CloseBracketToken,
  ts.SyntaxKind.CloseBraceToken,
  ts.SyntaxKind.PlusPlusToken,
  ts.SyntaxKind.MinusMinusToken,
  ts.SyntaxKind.ThisKeyword,
  ts.SyntaxKind.SuperKeyword,
  ts.SyntaxKind.TrueKeyword,
  ts.SyntaxKind.FalseKeyword,
  ts.SyntaxKind.NullKeyword,
]);

/** Every comment of `source`, in file order. */
export function comments(source: string): Comment[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, source);
  const found: Comment[] = [];
  // Open braces inside each enclosing template substitution, innermost last.
  const templates: number[] = [];
  let previous: ts.SyntaxKind | undefined;
  let line = 1;
  let counted = 0;
  const lineAt = (pos: number): number => {
    for (; counted < pos; counted++) if (source.charCodeAt(counted) === 10) line++;
    return line;
  };
  for (let token = scanner.scan(); token !== ts.SyntaxKind.EndOfFileToken; token = scanner.scan()) {
    switch (token) {
      case ts.SyntaxKind.SingleLineCommentTrivia:
      case ts.SyntaxKind.MultiLineCommentTrivia:
        found.push({ line: lineAt(scanner.getTokenStart()), text: scanner.getTokenText() });
        continue;
      case ts.SyntaxKind.WhitespaceTrivia:
      case ts.SyntaxKind.NewLineTrivia:
      case ts.SyntaxKind.ShebangTrivia:
        continue;
      case ts.SyntaxKind.SlashToken:
      case ts.SyntaxKind.SlashEqualsToken:
        if (previous === undefined || !ENDS_OPERAND.has(previous)) token = scanner.reScanSlashToken();
        break;
      case ts.SyntaxKind.TemplateHead:
        templates.push(0);
        break;
      case ts.SyntaxKind.OpenBraceToken:
        if (templates.length > 0) templates[templates.length - 1]!++;
        break;
      case ts.SyntaxKind.CloseBraceToken:
        if (templates.length === 0) break;
        if (templates[templates.length - 1] === 0) {
          token = scanner.reScanTemplateToken(false);
          if (token === ts.SyntaxKind.TemplateTail) templates.pop();
        } else {
          templates[templates.length - 1]!--;
        }
        break;
    }
    previous = token;
  }
  return found;
}
