/**
 * @module Types for the `koa2` npm alias (koa@2) the conformance suite uses to run on Koa 2: the middleware
 * only touches the API both majors share, so Koa 3's types describe it.
 */
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
