/** Whether a change in the terminal's DOM touched one of xterm's `<style>` elements. */
const touchesStyle = (mutation: MutationRecord) =>
  mutation.target.nodeName === 'STYLE' ||
  mutation.target.parentNode?.nodeName === 'STYLE' ||
  [...mutation.addedNodes].some((node) => node.nodeName === 'STYLE');

/**
 * xterm's DOM renderer writes its rules (the theme's colours, the 256-colour palette, the cursor,
 * the selection, its rows' layout) into `<style>` elements inside the terminal. The console's
 * Content-Security-Policy (`style-src 'self'`) refuses inline `<style>`, which would leave the
 * terminal's text unstyled. The same rules are applied here as a constructed stylesheet, which
 * the policy does not govern: they are xterm's own, made from the console's theme and from the
 * colours a program sets (which xterm parses into rgb values), never text the sandbox chose.
 * Kept in step as xterm rewrites them; the returned function takes the sheet away.
 */
export function adoptXtermStyles(terminalRoot: HTMLElement): () => void {
  const document = terminalRoot.ownerDocument;
  const sheet = new CSSStyleSheet();
  const copy = () => sheet.replaceSync([...terminalRoot.querySelectorAll('style')].map((style) => style.textContent).join('\n'));
  copy();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  const observer = new MutationObserver((mutations) => mutations.some(touchesStyle) && copy());
  observer.observe(terminalRoot, { subtree: true, childList: true, characterData: true });
  return () => {
    observer.disconnect();
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((adopted) => adopted !== sheet);
  };
}
