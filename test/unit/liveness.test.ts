import { workflowGone } from '../../src/activities/liveness';

describe("whether a session's workflow is gone", () => {
  it.each(['NOT_FOUND', 'COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT'])('%s: gone, it will never say it is done', (state) => {
    expect(workflowGone(state)).toBe(true);
  });

  it.each(['RUNNING', 'PAUSED', 'UNKNOWN', 'UNSPECIFIED', 'SOMETHING_NEWER'])('%s: not gone, its build may go on', (state) => {
    expect(workflowGone(state)).toBe(false);
  });
});
