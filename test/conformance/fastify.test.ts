import { makeFastifyApp } from './fastify-app.js';
import { definePlansConformance } from './plans-suite.js';
import { defineConformance } from './suite.js';

defineConformance('fastify 5', makeFastifyApp);
definePlansConformance('fastify 5', makeFastifyApp);
