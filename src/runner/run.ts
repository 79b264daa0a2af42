// Placeholder so the runner's entry point compiles; the real runner replaces this file.
import type { Config } from '../config';

export async function runRunner(config: Config, options?: { buildQueues?: string[] }): Promise<{ name: string; shutdown(): Promise<void> }> {
  void config;
  void options;
  throw new Error('not yet');
}
