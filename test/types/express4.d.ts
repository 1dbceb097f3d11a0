/**
 * @module Types for the `express4` npm alias (express@4) the conformance suite uses to run on Express 4: the
 * middleware only touches the API both majors share, so Express 5's types describe it.
 */
declare module 'express4' {
  import express from 'express';
  export default express;
}
