import AxeBuilder from '@axe-core/playwright';
import type { Page } from 'playwright-core';

/** The serious and critical violations axe finds on the page, each named with `where`. */
export async function seriousViolations(page: Page, where: string): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${where}: ${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}
