import Koa from 'koa';
import { makeKoaApp } from './koa-app.js';
import { defineConformance } from './suite.js';

defineConformance('koa 3', makeKoaApp(Koa));
