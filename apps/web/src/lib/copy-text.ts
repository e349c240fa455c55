/** Copies to the clipboard; where the Clipboard API is missing (plain http), through a selection. */
export async function copyText(element: HTMLElement, text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(element);
    window.getSelection()?.removeAllRanges();
    window.getSelection()?.addRange(range);
    return document.execCommand('copy');
  }
}
