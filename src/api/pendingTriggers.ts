/**
 * Triggers this API accepted whose records may not be written yet (issue 26: the suite's
 * workflow writes them a moment after the answer, or once PostgreSQL is back). The trigger's
 * `status_uri` answers from here until they are: the guid is known, its sessions not yet.
 * Bounded in count and age; another API process of the installation does not know them (its
 * status_uri answers 404 for that moment).
 */
export interface PendingTrigger {
  repo: number;
  provider: string;
  decision: 'build' | 'skip';
  reason: string | null;
  branch: string;
  acceptedAt: number;
}

export interface PendingTriggers {
  remember(guid: string, trigger: Omit<PendingTrigger, 'acceptedAt'>): void;
  find(guid: string): PendingTrigger | undefined;
}

export function pendingTriggers(opts: { max?: number; keepMs?: number } = {}): PendingTriggers {
  const max = opts.max ?? 10_000;
  const keepMs = opts.keepMs ?? 30 * 60_000;
  // Insertion order is acceptance order: the oldest go first.
  const byGuid = new Map<string, PendingTrigger>();
  return {
    remember(guid, trigger) {
      byGuid.set(guid, { ...trigger, acceptedAt: Date.now() });
      for (const [old, t] of byGuid) {
        if (byGuid.size <= max && Date.now() - t.acceptedAt <= keepMs) break;
        byGuid.delete(old);
      }
    },
    find(guid) {
      const t = byGuid.get(guid);
      return t && Date.now() - t.acceptedAt <= keepMs ? t : undefined;
    },
  };
}
