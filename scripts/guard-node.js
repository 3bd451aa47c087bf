// Fails fast when npm scripts fall back to the system Node (< 22): the `node@24`
// devDependency's install script was skipped (e.g. `npm ci --ignore-scripts`).
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(
    `oncely's tooling needs Node >= 22 but npm scripts are running Node ${process.versions.node}.\n` +
      'Run `npm ci` without --ignore-scripts so the node@24 devDependency installs, then retry.',
  );
  process.exit(1);
}
