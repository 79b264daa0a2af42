/** The retention settings (SLUICE_RETENTION_DAYS, SLUICE_DELIVERY_RETENTION_DAYS) and the cleanup's schedule. */
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { loadConfig } from '../../src/config';
import { cleanupScheduleId, cleanupScheduleOptions } from '../../src/temporal/cleanupSchedule';

const base = { SLUICE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64') };

describe('retention settings', () => {
  it('default to 90 days for sessions and 30 for delivery attempts', () => {
    expect(loadConfig(base, 'worker')).toMatchObject({ retentionDays: 90, deliveryRetentionDays: 30 });
  });

  it('take whole days, 0 keeping everything', () => {
    expect(loadConfig({ ...base, SLUICE_RETENTION_DAYS: '0', SLUICE_DELIVERY_RETENTION_DAYS: '365' }, 'worker')).toMatchObject({
      retentionDays: 0,
      deliveryRetentionDays: 365,
    });
  });

  it.each(['-1', '1.5', 'a week', '36501'])('refuse %p, naming the variable', (value) => {
    expect(() => loadConfig({ ...base, SLUICE_RETENTION_DAYS: value }, 'worker')).toThrow(/SLUICE_RETENTION_DAYS/);
    expect(() => loadConfig({ ...base, SLUICE_DELIVERY_RETENTION_DAYS: value }, 'worker')).toThrow(/SLUICE_DELIVERY_RETENTION_DAYS/);
  });
});

describe('the cleanup schedule', () => {
  it('runs cleanupWorkflow daily at 03:17 UTC on the workers task queue, skipping a run while one goes on', () => {
    const options = cleanupScheduleOptions({ taskQueue: 'sluice' });
    expect(cleanupScheduleId('sluice')).toBe('sluice-cleanup');
    expect(options).toMatchObject({
      scheduleId: 'sluice-cleanup',
      spec: { calendars: [{ hour: 3, minute: 17 }] },
      action: { type: 'startWorkflow', workflowType: 'cleanupWorkflow', taskQueue: 'sluice', args: [] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
    expect(options.spec.timezone).toBeUndefined(); // UTC
  });
});
