-- Profiles and build plans configured on a suite (a repository's sluice.yml may add to or
-- override them). profiles: [{name, test_pattern, test_command?, env?, workers?, junit_pattern?}];
-- plan: profile names built as one multi-session build, NULL for none.
ALTER TABLE suites ADD COLUMN profiles jsonb NOT NULL DEFAULT '[]';
ALTER TABLE suites ADD COLUMN plan text[];
