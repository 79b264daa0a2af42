/**
 * The build queue of an organization's own runners: where the build activities of a suite with
 * `own_runners` go, whatever the trigger's `queue` says. No keyed runner serves it; the workers'
 * gateway serves it for the organization's token runners, and only they take its jobs.
 */
export const ownRunnersQueue = (buildQueue: string, orgId: number): string => `${buildQueue}-org-${orgId}`;

/**
 * The presence queue of a build queue: runners poll it only to be seen there (temporal/presence.ts),
 * so a worker can ask Temporal whether anyone serves a build queue (activities/liveness.ts).
 */
export const presenceQueue = (buildQueue: string): string => `${buildQueue}-presence`;
