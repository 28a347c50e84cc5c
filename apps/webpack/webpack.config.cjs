// A webpack 5 app as its user would write it: nothing webtensor-specific. webpack finds the
// package's worker (new Worker(new URL(...))) and wasm files (new URL(..., import.meta.url))
// and emits them.
const path = require('path');

module.exports = {
  mode: 'production',
  context: __dirname,
  entry: './main.js',
  output: { path: path.resolve(__dirname, '../../target/apps/webpack'), clean: true },
  performance: { hints: false },
};
