/**
 * Extra rspack options merged into @jupyter/builder's config.
 *
 * Named module and chunk ids are relative paths, so the committed prebuilt
 * output in ../oi_kernel/labextension is byte-identical wherever the repo is
 * checked out, and `build.sh --check` can prove it is up to date.
 */
module.exports = {
  optimization: { moduleIds: 'named', chunkIds: 'named' }
};
