import Koa2 from 'koa2';
import { makeKoaApp } from './koa-app.js';
import { defineConformance } from './suite.js';

defineConformance('koa 2', makeKoaApp(Koa2));
