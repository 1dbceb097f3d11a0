import express4 from 'express4';
import { makeExpressApp } from './express-app.js';
import { defineConformance } from './suite.js';

defineConformance('express 4', makeExpressApp(express4));
