/**
 * Who may come in (issue 25), once a provider vouched for a person: someone known already (by
 * this provider's id of them, or by a verified address another provider gave), someone an
 * admin invited, someone a membership rule names, or the very first person (who becomes an
 * installation administrator: nobody else could make them one). Anyone else is refused,
 * with the address to give an administrator. Memberships from invitations and rules are
 * brought up to date in the same transaction.
 */
import type { Pool } from 'pg';
import { strongest, type Role } from '../../core/access';
import {
  dropRuleMemberships,
  hasInstallationAdmin,
  insertUser,
  linkIdentity,
  listMembershipRules,
  setMember,
  takeInvitations,
  touchUser,
  userByEmail,
  userByIdentity,
  type MembershipRuleRow,
  type UserRow,
} from '../../db/people';
import { withTransaction } from '../../db/transaction';
import { SignInError, type Identity } from './types';

/** The role each rule-matching organization gives this person (the strongest, where several match). */
export function rolesFromRules(rules: MembershipRuleRow[], provider: string, who: Identity): Map<number, Role> {
  const domain = who.emailVerified ? who.email.split('@').pop()!.toLowerCase() : undefined;
  const byOrg = new Map<number, Role[]>();
  for (const rule of rules) {
    if (rule.provider !== provider) continue;
    const matches = rule.claim === 'group' ? who.groups.includes(rule.value) : domain !== undefined && rule.value.toLowerCase() === domain;
    if (matches) byOrg.set(rule.org_id, [...(byOrg.get(rule.org_id) ?? []), rule.role]);
  }
  return new Map([...byOrg].map(([org, roles]) => [org, strongest(roles)!]));
}

export async function admit(pool: Pool, provider: string, who: Identity): Promise<UserRow> {
  return withTransaction(pool, async (db) => {
    let user = await userByIdentity(db, provider, who.subject);
    if (!user && who.emailVerified) {
      user = await userByEmail(db, who.email);
      if (user) await linkIdentity(db, provider, who.subject, user.id);
    }
    const invitations = who.emailVerified ? await takeInvitations(db, who.email) : [];
    const fromRules = rolesFromRules(await listMembershipRules(db, null), provider, who);
    if (!user) {
      if ((await hasInstallationAdmin(db)) && invitations.length === 0 && fromRules.size === 0) {
        throw new SignInError(`${who.email} is not a member of any organization here: ask an administrator to invite that address`);
      }
      // An address someone else holds, unverified here: not the same person, as far as anyone knows.
      if (await userByEmail(db, who.email)) throw new SignInError(`${who.email} belongs to someone else here, and your provider has not verified it is yours`);
      user = await insertUser(db, { name: who.name, email: who.email });
      await linkIdentity(db, provider, who.subject, user.id);
    } else {
      user = await touchUser(db, user.id, { name: who.name, email: who.emailVerified ? who.email : user.email });
    }
    for (const inv of invitations) await setMember(db, inv.org_id, user.id, inv.role, 'invitation');
    for (const [org, role] of fromRules) await setMember(db, org, user.id, role, 'rule');
    await dropRuleMemberships(db, user.id, [...fromRules.keys()]);
    return user;
  });
}
