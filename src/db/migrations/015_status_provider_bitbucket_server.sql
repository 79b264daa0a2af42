-- Commit statuses to Bitbucket Server / Data Center (`bitbucket-server`): one more provider
-- in 012's list. The check is named as PostgreSQL named 012's column check.

ALTER TABLE repos DROP CONSTRAINT repos_status_provider_check;
ALTER TABLE repos ADD CONSTRAINT repos_status_provider_check
  CHECK (status_provider IN ('github', 'gitlab', 'gitea', 'bitbucket', 'bitbucket-server'));
