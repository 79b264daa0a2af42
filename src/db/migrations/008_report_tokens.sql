-- Report pages are reached by an unguessable URL: each session gets a random token (122 random
-- bits) that the payloads' `url` carries; a session number alone no longer opens its report.
ALTER TABLE sessions ADD COLUMN report_token text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '');
