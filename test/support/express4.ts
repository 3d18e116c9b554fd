/**
 * Express 4 for tests (installed as the `express4` alias of `express@4`). The alias has no type
 * declarations, so it is loaded with `require` and typed with Express's own types, which describe
 * the parts the tests use (app, routing, listen) the same way in both majors.
 */
import { createRequire } from 'node:module';
import type express from 'express';

const require = createRequire(import.meta.url);

/** The `express` function of Express 4. */
export const express4 = require('express4') as typeof express;
