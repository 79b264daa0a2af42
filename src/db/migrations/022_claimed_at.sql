-- Issue 22: when a lane took the files it holds, so the next lane to size a batch knows how much
-- of the batches still running is left to do (core/batches.ts batchBudgetMs), not only what
-- nobody has taken. A renewal of the lease leaves it as it is.
ALTER TABLE test_queue ADD COLUMN claimed_at timestamptz;
