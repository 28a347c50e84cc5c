// Bundles the demo page (www/) with the wasm-pack package (pkg/, imported as "webtensor").
const path = require('path');
const HtmlWebpackPlugin = require('html-webpack-plugin');

module.exports = {
  entry: './www/bootstrap.js',
  output: {
    path: path.resolve(__dirname, 'www/dist'),
    filename: '[name].[contenthash].js',
    clean: true,
  },
  // The package wasm-pack just built, imported as 'webtensor' (as an npm user would).
  resolve: { alias: { webtensor: path.resolve(__dirname, 'pkg') } },
  experiments: { asyncWebAssembly: true },
  performance: { hints: false },
  plugins: [new HtmlWebpackPlugin({ template: './www/index.html' })],
};
