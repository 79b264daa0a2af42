-- Pull requests are untrusted by default (README "Security model"): no repository secrets, never
-- pushed. A repository may trust those whose source branch lives in the repository itself
-- (never a fork's): they then get the secrets; they are still never pushed.
ALTER TABLE repos ADD COLUMN trust_same_repo_pull_requests boolean NOT NULL DEFAULT false;
