import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (deploy/dev-setup.sh installs it; Playwright's own download cannot work here). */
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((file) => existsSync(file));

/** A headless Chromium; as root it needs `--no-sandbox` (the sandbox needs user namespaces it would not get). */
export async function launchBrowser(): Promise<Browser> {
  if (!CHROMIUM) throw new Error('no chromium at /usr/bin/chromium: run deploy/dev-setup.sh (apt-get install chromium)');
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
}
