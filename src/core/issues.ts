import type { z } from 'zod';

/**
 * Turns a zod failure into the one thing an HTTP client needs: which field is wrong and why,
 * in plain words (`{"field":"force","message":"expected boolean"}`). Only the first issue is
 * reported: fixing one field at a time is how people work through a 400 anyway, and a short
 * answer never echoes large or secret input back.
 *
 * Parse with `{ reportInput: true }` so a missing field reads "required" rather than
 * "expected string".
 */
export interface FieldProblem {
  field: string;
  message: string;
}

export function firstProblem(error: { issues: readonly z.core.$ZodIssue[] }, root = 'body'): FieldProblem {
  const issue = error.issues[0];
  if (!issue) return { field: root, message: 'invalid' };
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return { field: [...path, issue.keys[0] ?? ''].join('.'), message: 'unknown field' };
  }
  return { field: path.length > 0 ? path.join('.') : root, message: describe(issue) };
}

function describe(issue: z.core.$ZodIssue): string {
  // With reportInput the issue carries the input; a missing key has none.
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_value') && 'input' in issue && issue.input === undefined) return 'required';
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${issue.expected}`;
    case 'invalid_value':
      return issue.values.length === 1
        ? `expected ${JSON.stringify(issue.values[0])}`
        : `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      if (issue.origin === 'string') return Number(issue.minimum) <= 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_format':
      if (issue.format === 'email') return 'expected an email address';
      if (issue.format === 'url') return 'expected a URL';
      // A pattern check carries its own human message (see the schemas that use .regex).
      if (issue.format === 'regex') return issue.message;
      return `expected ${issue.format}`;
    default:
      return issue.message;
  }
}
