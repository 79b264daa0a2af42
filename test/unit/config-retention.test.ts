/** Settings read from the environment (retention, blank variables, the Temporal UI address) and the cleanup's schedule. */
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

describe('variables set to nothing', () => {
  it('mean unset, so their defaults: a blank line in an .env file keeps nothing for good and refuses nothing', () => {
    const blank = { SLUICE_RETENTION_DAYS: '', SLUICE_DELIVERY_RETENTION_DAYS: ' ', SLUICE_RUNNER_WAIT_MS: '', SLUICE_TEMPORAL_UI_URL: '', SMTP_URL: '' };
    expect(loadConfig({ ...base, ...blank }, 'worker')).toMatchObject({
      retentionDays: 90,
      deliveryRetentionDays: 30,
      runnerWaitMs: 10 * 60_000,
      temporalUiUrl: undefined,
      smtpUrl: undefined,
    });
  });
});

describe('the Temporal UI address', () => {
  it('is an http or https URL, without a trailing slash', () => {
    expect(loadConfig({ ...base, SLUICE_TEMPORAL_UI_URL: 'http://127.0.0.1:8233/' }, 'worker').temporalUiUrl).toBe('http://127.0.0.1:8233');
  });

  it.each(['localhost:8233', 'ftp://ui.example.test', 'not a url'])('refuses %p, naming the variable', (value) => {
    expect(() => loadConfig({ ...base, SLUICE_TEMPORAL_UI_URL: value }, 'worker')).toThrow(/SLUICE_TEMPORAL_UI_URL/);
  });
});
