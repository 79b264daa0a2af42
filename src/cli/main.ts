#!/usr/bin/env node
/** `sluice` (the package's bin): see program.ts. */
import { runCli } from './program';

void runCli(process.argv).then((code) => {
  process.exitCode = code;
});
