// The Hugging Face Hub on request: one GET of a model's config.json from huggingface.co, only
// when the user asks, without credentials; a fetched config is remembered in this browser
// (localStorage), so it answers offline afterwards. Nothing else is ever sent.
export const HUB_ORIGIN = 'https://huggingface.co';

// A Hub repository id as the Hub accepts it: owner/name of letters, digits, '-', '_' and '.'.
export const isHubId = (text) => /^[A-Za-z0-9][\w.-]{0,95}\/[\w.-]{1,96}$/.test(text) && !text.includes('..');

export const hubConfigUrl = (id) => `${HUB_ORIGIN}/${id.split('/').map(encodeURIComponent).join('/')}/resolve/main/config.json`;

const KEY = 'gpumem.hub.';

function remembered(id) {
  try {
    const text = localStorage.getItem(KEY + id);
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

function remember(id, config) {
  try {
    localStorage.setItem(KEY + id, JSON.stringify(config));
  } catch {
    // A full or disabled storage only loses the offline copy.
  }
}

// The config.json of `id`: remembered, else fetched. Throws an Error whose message a person
// reads: gated, missing, not reachable, or not a config.json.
export async function hubConfig(id, { fetcher = fetch } = {}) {
  const kept = remembered(id);
  if (kept) return kept;
  let response;
  try {
    response = await fetcher(hubConfigUrl(id), { credentials: 'omit', referrerPolicy: 'no-referrer', cache: 'no-store' });
  } catch {
    throw new Error(`huggingface.co could not be reached for ${id}'s config.json: check the connection, or paste the config.json.`);
  }
  if (response.status === 401 || response.status === 403) {
    throw new Error(`${id} is gated on the Hub (or private): paste its config.json.`);
  }
  if (response.status === 404) throw new Error(`No such model on the Hub: ${id} (or it has no config.json).`);
  if (!response.ok) throw new Error(`The Hub answered ${response.status} for ${id}'s config.json: try again, or paste it.`);
  let config;
  try {
    config = await response.json();
  } catch {
    throw new Error(`${id}'s config.json on the Hub is not valid JSON.`);
  }
  if (!config || typeof config !== 'object' || Array.isArray(config)) {
    throw new Error(`${id}'s config.json on the Hub is not a JSON object.`);
  }
  remember(id, config);
  return config;
}
