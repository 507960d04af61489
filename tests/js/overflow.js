// What scrolls sideways in Streamlit's main area (tests/test_browser_width.py): a list of short descriptions.
() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const block = main.querySelector('[data-testid="stMainBlockContainer"]') || main;
  const texts = [...main.querySelectorAll('h1, h2, h3, [data-testid=stMarkdownContainer], [data-testid=stCaptionContainer], summary')];
  const before = (el) => {  // the last text above the element: which table or note this is
    let last = '';
    for (const t of texts) {
      if (t.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING && !t.contains(el)) {
        const s = (t.innerText || '').trim();
        if (s) last = s;
      }
    }
    return last.replace(/\s+/g, ' ').slice(0, 70);
  };
  const name = (el) => {
    const box = el.closest('[data-testid]');
    const id = box ? box.dataset.testid : el.tagName.toLowerCase();
    return `${id}${el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : ''}` +
      ` after "${before(el)}"`;
  };
  const out = [];
  const shown = (el) => el.checkVisibility();
  for (const el of [main, ...main.querySelectorAll('*')]) {
    if (!shown(el)) continue;
    const cs = getComputedStyle(el);
    if (['auto', 'scroll'].includes(cs.overflowX) && el.scrollWidth > el.clientWidth + 1)
      out.push(`${name(el)} scrolls: ${el.scrollWidth} px inside ${el.clientWidth} px`);
  }
  for (const grid of main.querySelectorAll('[data-testid=stDataFrame]')) {
    const box = grid.querySelector('.dvn-scroller'), inner = grid.querySelector('.dvn-scroll-inner');
    if (box && inner && shown(box) && inner.scrollWidth > box.clientWidth + 1)
      out.push(`${name(grid)} grid columns: ${inner.scrollWidth} px inside ${box.clientWidth} px`);
  }
  const right = block.getBoundingClientRect().right;
  for (const el of main.querySelectorAll('[data-testid=stElementContainer]')) {
    const r = el.getBoundingClientRect();
    if (shown(el) && r.width > 0 && r.right > right + 1)
      out.push(`${name(el.firstElementChild || el)} sticks out of the main column by ${Math.round(r.right - right)} px`);
  }
  const page = document.scrollingElement;
  if (page.scrollWidth > page.clientWidth + 1) out.push(`the page scrolls: ${page.scrollWidth} px inside ${page.clientWidth} px`);
  return [...new Set(out)];
}
