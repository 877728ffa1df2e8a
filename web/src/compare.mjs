// "Which GPU?": a heading and a button on the page; the comparison itself (compare_table.mjs) is
// the classic script compare.js, loaded the first time the button is pressed, so the first visit
// does not download it.
import { compareReader } from './classic_scripts.mjs';

export function compareSection(section, options) {
  let table = null;
  section.innerHTML = `<h2>Which GPU?</h2>
    <p class="hint">The same workload planned on every GPU preset at 1, 2, 4 and 8 GPUs per node (serving: the fewest GPUs that serve it).</p>
    <button type="button" class="compare-run" data-testid="compare-run">Compare every GPU</button>
    <span class="compare-progress" role="status"></span><div class="compare-body"></div>`;
  section.querySelector('.compare-run').addEventListener('click', async () => {
    try {
      table ??= (await compareReader()).compareTable(section, options);
    } catch (error) {
      section.querySelector('.compare-progress').textContent = `${error.message}: reload the page to compare GPUs.`;
      return;
    }
    table.run();
  });
  return {
    // The workload changed: the comparison no longer describes it.
    clear() {
      table?.clear();
    },
  };
}
