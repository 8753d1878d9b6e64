#!/usr/bin/env node
import { CLI_NOT_IMPLEMENTED } from './index.js';

process.stderr.write(`${CLI_NOT_IMPLEMENTED}\n`);
process.exitCode = 2;
