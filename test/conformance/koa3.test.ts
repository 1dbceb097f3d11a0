import Koa from 'koa';
import { makeKoaApp } from './koa-app.js';
import { definePlansConformance } from './plans-suite.js';
import { defineConformance } from './suite.js';

defineConformance('koa 3', makeKoaApp(Koa));
definePlansConformance('koa 3', makeKoaApp(Koa));
