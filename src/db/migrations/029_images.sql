-- Issue 35: a build brings its own toolchain. `image:` names an OCI image whose root filesystem
-- every hook and test of the build runs in (steps/image/).

-- A suite's own image (sluice.yml's top-level `image:`, and a profile's, win over it); NULL: none.
-- A named profile's image lives in its entry of `profiles` (jsonb).
ALTER TABLE suites ADD COLUMN image text;

-- The image a session ran in: the reference as Sluice read it (`docker.io/library/node:22`) and
-- the digest it was resolved to when the build started; every worker on every runner ran that
-- digest, and a rebuild runs it again unless asked to resolve anew.
ALTER TABLE sessions ADD COLUMN image text;
ALTER TABLE sessions ADD COLUMN image_digest text;

-- Getting the image is a step of each worker's setup, shown like a hook: `command` is the
-- reference with its digest, `detail` whether the runner's store had it and what a pull took.
ALTER TABLE session_hooks DROP CONSTRAINT session_hooks_name_check;
ALTER TABLE session_hooks ADD CONSTRAINT session_hooks_name_check
  CHECK (name IN ('image', 'pre_setup', 'package_setup', 'worker_setup', 'post_setup', 'post_worker', 'post_build'));

-- Registry logins of a repository, one per registry host (Woodpecker's "registries"): given to
-- the builds that may have the repository's secrets, to pull private images. The password is
-- sealed with SLUICE_SECRET_KEY like the secrets, and never shown again.
CREATE TABLE registry_logins (
  repo_id          bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  host             text NOT NULL,
  username         text NOT NULL,
  password_sealed  text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo_id, host)
);
