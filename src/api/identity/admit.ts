/**
 * Who may come in (issue 25), once a provider vouched for a person: someone known already (by
 * this provider's id of them, or by an address this provider and another both verified),
 * someone an admin invited (a verified address), someone a membership rule names, or the very
 * first person to sign in at all (who becomes an installation administrator: nobody else could
 * make them one; the last one cannot be removed, so this happens once). Anyone else is refused,
 * with the address to give an administrator. Memberships from invitations and rules are
 * brought up to date in the same transaction.
 */
import type { Pool } from 'pg';
import { strongest, type Role } from '../../core/access';
import {
  dropRuleMemberships,
  insertUser,
  linkIdentity,
  listMembershipRules,
  noUsersYet,
  setMember,
  takeInvitations,
  touchUser,
  userByIdentity,
  userByVerifiedEmail,
  type MembershipRuleRow,
  type UserRow,
} from '../../db/people';
import { uniqueViolation, withTransaction } from '../../db/transaction';
import { SignInError, type Identity } from './types';

/** The role each rule-matching organization gives this person (the strongest, where several match). */
export function rolesFromRules(rules: MembershipRuleRow[], provider: string, who: Identity): Map<number, Role> {
  const domain = who.emailVerified ? who.email.split('@').pop()!.toLowerCase() : undefined;
  const byOrg = new Map<number, Role[]>();
  for (const rule of rules) {
    if (rule.provider !== provider) continue;
    // Case does not matter: GitHub's organization and team names ignore it, and a rule's author may not know a provider's.
    const matches = rule.claim === 'group' ? who.groups.some((g) => g.toLowerCase() === rule.value.toLowerCase()) : domain !== undefined && rule.value.toLowerCase() === domain;
    if (matches) byOrg.set(rule.org_id, [...(byOrg.get(rule.org_id) ?? []), rule.role]);
  }
  return new Map([...byOrg].map(([org, roles]) => [org, strongest(roles)!]));
}

export async function admit(pool: Pool, provider: string, who: Identity): Promise<UserRow> {
  try {
    return await withTransaction(pool, async (db) => {
      let user = await userByIdentity(db, provider, who.subject);
      // Another provider's sign-in is the same person only by an address both verified.
      if (!user && who.emailVerified) {
        user = await userByVerifiedEmail(db, who.email);
        if (user) await linkIdentity(db, provider, who.subject, user.id);
      }
      const invitations = who.emailVerified ? await takeInvitations(db, who.email) : [];
      const fromRules = rolesFromRules(await listMembershipRules(db, null), provider, who);
      if (!user) {
        const first = await noUsersYet(db);
        if (!first && invitations.length === 0 && fromRules.size === 0) {
          throw new SignInError(`${who.email} is not a member of any organization here: ask an administrator to invite that address`);
        }
        user = await insertUser(db, { name: who.name, email: who.email, emailVerified: who.emailVerified, installationAdmin: first });
        await linkIdentity(db, provider, who.subject, user.id);
      } else {
        user = await touchUser(db, user.id, { name: who.name, email: who.email, emailVerified: who.emailVerified });
      }
      for (const inv of invitations) await setMember(db, inv.org_id, user.id, inv.role, 'invitation');
      for (const [org, role] of fromRules) await setMember(db, org, user.id, role, { ruleOf: provider });
      await dropRuleMemberships(db, user.id, provider, [...fromRules.keys()]);
      return user;
    });
  } catch (err) {
    // Someone else here holds this verified address (or the same person signed in twice at once).
    if (uniqueViolation(err) !== undefined) throw new SignInError(`${who.email} is already the address of someone else here; ask an administrator`);
    throw err;
  }
}
