/** How a test is known across builds (muted, its history): its classname and name, as its reports give them. */
export const testKey = (test: { classname: string; name: string }): string => `${test.classname}\u0000${test.name}`;
