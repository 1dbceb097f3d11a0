import { makeFastifyApp } from './fastify-app.js';
import { defineConformance } from './suite.js';

defineConformance('fastify 5', makeFastifyApp);
