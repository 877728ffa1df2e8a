// The page's parts that run on a click, not in its first download: classic scripts of dist/
// (scripts/assemble_dist.mjs), each loaded once, the first time it is needed, each defining one
// global.
const loading = new Map();
function classicScript(src, global) {
  if (globalThis[global]) return Promise.resolve(globalThis[global]);
  if (!loading.has(src)) {
    loading.set(src, new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = src;
      script.onload = () => resolve(globalThis[global]);
      script.onerror = () => { loading.delete(src); reject(new Error(`${src} could not be loaded`)); };
      document.head.append(script);
    }));
  }
  return loading.get(src);
}

// npm's yaml, as the classic script yaml.js.
export const yaml = () => classicScript('yaml.js', 'gpumemYaml');

// The reader of a pasted launch file (launch_import.mjs), as the classic script launch_import.js.
export const launchReader = () => classicScript('launch_import.js', 'gpumemLaunchImport');

// The Hub's config.json fetch (hub.mjs hubConfig), as the classic script hub.js.
export const hubReader = () => classicScript('hub.js', 'gpumemHub');

// The "Which GPU?" table (compare_table.mjs compareTable), as the classic script compare.js.
export const compareReader = () => classicScript('compare.js', 'gpumemCompare');
