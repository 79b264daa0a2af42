// Copy buttons: `<button type="button" data-copy="#id">Copy</button>` copies the text of the
// element it names (an input's value, or its text) and says so for a moment. Without
// JavaScript or clipboard access the text stays selectable by hand.
(() => {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const label = button.textContent;
    button.addEventListener('click', async () => {
      const source = document.querySelector(button.dataset.copy);
      if (!source) return;
      const text = 'value' in source ? source.value : source.textContent;
      try {
        await navigator.clipboard.writeText(text.trim());
        button.textContent = 'Copied';
      } catch {
        if ('select' in source) source.select();
        button.textContent = 'Press Ctrl+C';
      }
      setTimeout(() => (button.textContent = label), 2000);
    });
  }
})();
