-- Issue 38: Sluice as a GitHub App, made by an organization admin with GitHub's manifest flow.

-- The app GitHub made from Sluice's manifest, the organization's that made it: its id and the
-- secrets GitHub gave once (private key, webhook secret, OAuth client secret), sealed with
-- SLUICE_SECRET_KEY, never shown again, never sent to build code. `web_url`/`api_url`: GitHub.com,
-- or a GitHub Enterprise Server.
CREATE TABLE github_apps (
  id                     bigserial PRIMARY KEY,
  org_id                 bigint NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  web_url                text NOT NULL,
  api_url                text NOT NULL,
  app_id                 bigint NOT NULL,
  slug                   text NOT NULL,
  name                   text NOT NULL,
  owner                  text,
  html_url               text NOT NULL,
  client_id              text NOT NULL,
  client_secret_sealed   text NOT NULL,
  private_key_sealed     text NOT NULL,
  webhook_secret_sealed  text NOT NULL,
  -- The last part of the app's webhook URL (`/api/v1/github-apps/hooks/<hook_token>`): GitHub needs the URL in
  -- the manifest, before the app (and its id here) exists.
  hook_token             text NOT NULL UNIQUE,
  created_by             text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  UNIQUE (api_url, app_id)
);

-- The app's installations and their repositories, as the `installation` and
-- `installation_repositories` events said (the app's webhook keeps them current).
CREATE TABLE github_installations (
  app_id           bigint NOT NULL REFERENCES github_apps(id) ON DELETE CASCADE,
  installation_id  bigint NOT NULL,
  account          text NOT NULL,
  suspended        boolean NOT NULL DEFAULT false,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, installation_id)
);

CREATE TABLE github_installation_repos (
  app_id           bigint NOT NULL,
  installation_id  bigint NOT NULL,
  site_repo_id     bigint NOT NULL,
  full_name        text NOT NULL,
  private          boolean NOT NULL DEFAULT true,
  PRIMARY KEY (app_id, installation_id, site_repo_id),
  FOREIGN KEY (app_id, installation_id) REFERENCES github_installations(app_id, installation_id) ON DELETE CASCADE
);

-- A Sluice repository that builds through the app: which installation and which GitHub
-- repository (by its stable id: renames and transfers follow). No FK to the installation: a
-- link outlives an uninstall (the repository and its builds stay; checkouts then say why they
-- cannot mint a token).
CREATE TABLE repo_app_links (
  repo_id          bigint PRIMARY KEY REFERENCES repos(id) ON DELETE CASCADE,
  app_id           bigint NOT NULL REFERENCES github_apps(id) ON DELETE CASCADE,
  installation_id  bigint NOT NULL,
  site_repo_id     bigint NOT NULL,
  full_name        text NOT NULL,
  UNIQUE (app_id, site_repo_id)
);

-- The check run each session's status context made (one per suite's session, GitHub's id), so
-- the outcome updates the run its `running` made.
CREATE TABLE session_check_runs (
  session_id    bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  context       text NOT NULL,
  check_run_id  bigint NOT NULL,
  PRIMARY KEY (session_id, context)
);
