import type { ChangesetKind, Scm } from '../../core/types';

/** What the JSON and the form format yield before defaults: every field already type-checked. */
export interface GenericFields {
  branch?: string;
  /** Which field the branch came from, for error messages. */
  branchField?: string;
  head?: string;
  ref?: string;
  scm?: Scm;
  force?: boolean;
  queuePosition?: 'tail' | 'head';
  profileName?: string;
  full?: boolean;
  refspec?: string[];
  changeset?: { kind?: ChangesetKind; id?: string; url?: string };
  env?: unknown;
  queue?: string;
}

/** null, undefined and "" all mean "not given". */
export function given(v: string | null | undefined): string | undefined {
  return v === null || v === undefined || v === '' ? undefined : v;
}
