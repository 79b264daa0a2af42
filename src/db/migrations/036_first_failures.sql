-- Issue 49: the first failure first. A build's list puts the files likeliest to fail ahead of
-- the timing history's order (core/firstFailures.ts); this says why, for the build page and the
-- API ("changed", "affected by lib/a.js", "failed in 2 of the last 10 builds"). NULL: the file
-- kept its usual place.
ALTER TABLE test_queue ADD COLUMN first_reason text;
