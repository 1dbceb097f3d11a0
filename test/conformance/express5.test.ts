import express from 'express';
import { makeExpressApp } from './express-app.js';
import { definePlansConformance } from './plans-suite.js';
import { defineConformance } from './suite.js';

defineConformance('express 5', makeExpressApp(express));
definePlansConformance('express 5', makeExpressApp(express));
