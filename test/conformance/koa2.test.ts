import Koa2 from 'koa2';
import { makeKoaApp } from './koa-app.js';
import { definePlansConformance } from './plans-suite.js';
import { defineConformance } from './suite.js';

defineConformance('koa 2', makeKoaApp(Koa2));
definePlansConformance('koa 2', makeKoaApp(Koa2));
