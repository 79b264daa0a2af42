-- Issue 39: the builds list narrowed by status (db/sessions.ts listSessions) walks one of these
-- instead of every build newer than the page: by status across the installation, and by
-- status within each suite of an organization or repository. Without them a year of builds made
-- "a repository's failed builds" take seconds.
CREATE INDEX sessions_status_idx ON sessions (status, id DESC);
CREATE INDEX sessions_suite_status_idx ON sessions (suite_id, status, id DESC);
