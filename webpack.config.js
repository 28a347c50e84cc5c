// Bundles the demo page (www/). The package (pkg/: the loader and its four wasm builds) is not
// bundled: scripts/build-web.sh copies it to www/dist/pkg/ and the page loads it at run time
// (www/webtensor.js), so each build and its thread-pool workers load from their own URLs.
const path = require('path');
const HtmlWebpackPlugin = require('html-webpack-plugin');

module.exports = {
  entry: './www/bootstrap.js',
  output: {
    path: path.resolve(__dirname, 'www/dist'),
    filename: '[name].[contenthash].js',
    clean: true,
  },
  // `webpack serve` (webpack-dev-server, if installed): cross-origin isolated like
  // scripts/serve.mjs, so the threaded build runs.
  devServer: {
    static: path.resolve(__dirname, 'www/dist'),
    headers: {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
    },
  },
  performance: { hints: false },
  plugins: [new HtmlWebpackPlugin({ template: './www/index.html' })],
};
