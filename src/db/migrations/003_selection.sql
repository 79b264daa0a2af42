-- Issue 3: provider hooks and commit selection. Branch rows (toggles, hiding) and the selection
-- settings already live in 001; this adds the optional per-repository webhook secret.

-- When set (sealed with SLUICE_SECRET_KEY), every trigger of the repository must prove it
-- knows it: an HMAC-SHA256 signature of the body (X-Hub-Signature-256 and its kin) or
-- GitLab's X-Gitlab-Token. NULL: the URL key alone authorizes (spec §5).
ALTER TABLE repos ADD COLUMN webhook_secret_sealed text;
