-- Issue 38: connect a hosting site once, then add its repositories with one click.

-- An organization's connection to a hosting site's API (GitHub, GitLab, Gitea or Forgejo, Bitbucket Cloud,
-- Bitbucket Server): where
-- the API is, the access token an admin gave (sealed with SLUICE_SECRET_KEY, never shown again,
-- never sent to build code) and the site account it belongs to, as the site said when the
-- connection was made. The site checks that account's rights on every change Sluice asks for.
CREATE TABLE site_connections (
  id            bigserial PRIMARY KEY,
  org_id        bigint NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  site          text NOT NULL CHECK (site IN ('github', 'gitlab', 'gitea', 'bitbucket', 'stash')),
  api_url       text NOT NULL,
  token_sealed  text NOT NULL,
  account       text NOT NULL,
  created_by    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, site, api_url, account)
);

-- A Sluice repository activated from a site: which of the site's repositories it is, by the
-- site's stable id (so renames and transfers follow), and the webhook and deploy key Sluice
-- made there (null: none now, as after a deactivation; `repair` makes them again). A repository
-- outlives its link: deleting a connection keeps its repositories and their builds.
CREATE TABLE repo_links (
  repo_id        bigint PRIMARY KEY REFERENCES repos(id) ON DELETE CASCADE,
  connection_id  bigint NOT NULL REFERENCES site_connections(id) ON DELETE CASCADE,
  site_repo_id   text NOT NULL,
  site_name      text NOT NULL,
  hook_id        text,
  -- SHA-256 of the secret the hook was made with: a secret changed since means repair makes the
  -- hook again (sites never show a hook's secret).
  hook_secret_sha256 bytea,
  deploy_key_id  text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (connection_id, site_repo_id)
);

-- When a repository's hooks last arrived, and how many were refused for a signature that did
-- not verify. The API counts in memory and writes the sums every few seconds (api/hookHealth.ts),
-- so a burst of triggers is not a burst of writes to one row; any repository has a row once a
-- hook reached it, connected or not. Not in `repos`: a change there makes every API process read
-- what triggers are decided from again.
CREATE TABLE repo_hook_health (
  repo_id          bigint PRIMARY KEY REFERENCES repos(id) ON DELETE CASCADE,
  last_hook_at     timestamptz,
  refused          bigint NOT NULL DEFAULT 0,
  last_refused_at  timestamptz
);
