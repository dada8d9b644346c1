// Merged into @jupyterlab/builder's webpack config (package.json: jupyterlab.webpackConfig).
// Plotly's dist is already minified: re-minifying its 4.6 MB took about two minutes of the
// build, so terser skips the lazily loaded plotly chunk (named chunk ids let it tell which).
const TerserPlugin = require('terser-webpack-plugin');

module.exports = {
  optimization: {
    chunkIds: 'named',
    minimizer: [new TerserPlugin({ exclude: /plotly/ })]
  }
};
