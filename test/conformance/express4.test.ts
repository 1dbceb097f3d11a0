import express4 from 'express4';
import { makeExpressApp } from './express-app.js';
import { definePlansConformance } from './plans-suite.js';
import { defineConformance } from './suite.js';

defineConformance('express 4', makeExpressApp(express4));
definePlansConformance('express 4', makeExpressApp(express4));
