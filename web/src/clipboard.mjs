// Copies text for a copy button: "Copied" on the button for a moment, or a prompt to copy by
// hand where the clipboard is refused (file://, permissions).
export async function copyText(text, button) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    window.prompt('Copy:', text);
  }
  setTimeout(() => { button.textContent = label; }, 1200);
}
