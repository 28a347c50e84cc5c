// A Vite app as its user would write it: only where to build. Nothing webtensor-specific.
import { fileURLToPath } from 'node:url';

export default {
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  build: { outDir: fileURLToPath(new URL('../../target/apps/vite', import.meta.url)), emptyOutDir: true },
};
