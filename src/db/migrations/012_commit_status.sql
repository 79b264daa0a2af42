-- Commit statuses on the hosting site (issue 13): `pending` while a build runs its tests, its
-- outcome when it ends, posted through the provider's status API with a token of the
-- repository's own.

ALTER TABLE repos
  -- Whose status API: NULL posts nothing.
  ADD COLUMN status_provider     text CHECK (status_provider IN ('github', 'gitlab', 'gitea', 'bitbucket')),
  -- The API's base URL (a self-hosted instance's); NULL: the provider's public one.
  ADD COLUMN status_api_url      text,
  -- The repository's path on the host: `owner/name`, or GitLab's project path or id.
  ADD COLUMN status_repo         text,
  -- The API token, sealed with SLUICE_SECRET_KEY like the other secrets; never shown again.
  ADD COLUMN status_token_sealed text;

-- Every attempt to post a status, like the webhook delivery log. Never the token nor the
-- Authorization header: what was sent is the URL (no credentials in it), state and context.
CREATE TABLE commit_status_attempts (
  id           bigserial PRIMARY KEY,
  session_id   bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  repo_id      bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  provider     text NOT NULL,
  commit_id    text NOT NULL,
  context      text NOT NULL,
  -- The provider's own name of the state sent (`pending`, `running`, `SUCCESSFUL`, ...).
  state        text NOT NULL,
  url          text NOT NULL,
  attempt      integer NOT NULL,
  status_code  integer,
  outcome      text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'gave_up', 'dropped')),
  error        text,
  duration_ms  integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX commit_status_attempts_repo_idx ON commit_status_attempts (repo_id, id);
CREATE INDEX commit_status_attempts_session_idx ON commit_status_attempts (session_id, id);
