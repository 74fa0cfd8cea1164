// koa 2 is installed under the alias `koa2` and ships no types; its API is the one @types/koa describes.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
