-- Issue 25: people, not one shared token. People sign in through an identity provider (OpenID
-- Connect, or GitHub's OAuth); each organization has members with a role; people make tokens
-- of their own for scripts; every change is recorded with who made it.

-- A person, as their identity provider names them. `installation_admin`: everything, in every
-- organization (the very first person to sign in becomes one: nobody else could make them so).
-- Only an address a provider verified is theirs: it alone takes invitations and links another
-- provider's sign-in to them, and no two people hold the same verified address.
CREATE TABLE users (
  id                  bigserial PRIMARY KEY,
  name                text NOT NULL,
  email               text NOT NULL,
  email_verified      boolean NOT NULL DEFAULT false,
  installation_admin  boolean NOT NULL DEFAULT false,
  created_at          timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at     timestamptz
);
CREATE UNIQUE INDEX users_verified_email_idx ON users (lower(email)) WHERE email_verified;

-- Who a person is at each provider: `provider` is the id in SLUICE_SIGN_IN_PROVIDERS, `subject`
-- the provider's own id of them (OIDC `sub`, GitHub's numeric user id), never the e-mail.
CREATE TABLE user_identities (
  provider  text NOT NULL,
  subject   text NOT NULL,
  user_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  PRIMARY KEY (provider, subject)
);
CREATE INDEX user_identities_user_idx ON user_identities (user_id);

-- A member of an organization. `source`: `invitation` (an admin chose them; kept until removed)
-- or `rule` (a claim of `rule_provider` made them one; looked at again at each sign-in there).
CREATE TABLE memberships (
  org_id         bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  user_id        bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role           text NOT NULL CHECK (role IN ('admin', 'maintainer', 'viewer')),
  source         text NOT NULL DEFAULT 'invitation' CHECK (source IN ('invitation', 'rule')),
  rule_provider  text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

-- An e-mail address an admin invited: whoever signs in with it (verified by the provider) becomes
-- a member with that role.
CREATE TABLE invitations (
  id          bigserial PRIMARY KEY,
  org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  email       text NOT NULL,
  role        text NOT NULL CHECK (role IN ('admin', 'maintainer', 'viewer')),
  invited_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX invitations_org_email_idx ON invitations (org_id, lower(email));

-- Members from a provider's claim: everyone a provider says is in `group` (its `groups` claim)
-- or has a verified address at `domain` becomes a member with `role`.
CREATE TABLE membership_rules (
  id          bigserial PRIMARY KEY,
  org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  provider    text NOT NULL,
  claim       text NOT NULL CHECK (claim IN ('group', 'domain')),
  value       text NOT NULL,
  role        text NOT NULL CHECK (role IN ('admin', 'maintainer', 'viewer')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, provider, claim, value)
);

-- A signed-in browser. The cookie holds a random id; only its sha256 is kept. `user_id` NULL: a
-- sign-in with the admin token (bootstrap), as `name`. The provider's refresh token is sealed;
-- at `refresh_at` the provider is asked again whether the person is still theirs.
CREATE TABLE web_sessions (
  id_hash        bytea PRIMARY KEY,
  user_id        bigint REFERENCES users (id) ON DELETE CASCADE,
  name           text NOT NULL,
  provider       text,
  refresh_token  text,
  refresh_at     timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  ip             text
);
CREATE INDEX web_sessions_user_idx ON web_sessions (user_id);

-- A person's own API token, for scripts and the CLI: only its sha256 is kept. It acts as its
-- owner, within its scope: `read_only` (GET only) and `org_id` (that organization only).
CREATE TABLE api_tokens (
  id            bigserial PRIMARY KEY,
  user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name          text NOT NULL,
  token_hash    bytea NOT NULL UNIQUE,
  read_only     boolean NOT NULL DEFAULT false,
  org_id        bigint REFERENCES orgs (id) ON DELETE CASCADE,
  expires_at    timestamptz,
  last_used_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz,
  UNIQUE (user_id, name)
);

-- Every change and every stop and rebuild: who (a person, or the admin token), when, from where,
-- what. `org_id` is not a foreign key: an organization's trail outlives the organization.
CREATE TABLE audit_log (
  id          bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor       text NOT NULL,
  user_id     bigint,
  token_id    bigint,
  ip          text,
  org_id      bigint,
  action      text NOT NULL,
  target      text NOT NULL,
  details     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_org_idx ON audit_log (org_id, id);
