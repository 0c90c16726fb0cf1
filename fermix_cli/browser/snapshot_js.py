"""The JavaScript that builds a snapshot inside the page, and the one that finds a ref again.

Chromium's own accessibility tree (`Accessibility.getFullAXTree`) is built from scratch for every new
DevTools session, and a CLI call is a new session: on a 1 000-element page that cost most of a second.
This walker computes roles and names the way the ARIA/HTML-AAM mappings do for common markup (explicit
`role`, implicit roles by element, names from `aria-labelledby`, `aria-label`, `<label>`, `alt`, content,
`title`) in one pass, and keeps each ref as a WeakRef on the document itself: a ref dies with its
document (navigation), its node (a single-page-app swap) or the next snapshot that does not show it,
and can never point at anything else (an element keeps its ref across snapshots; new ones get new
numbers).
"""

SNAPSHOT = r"""
((opts) => {
  const KEY = Symbol.for('fermix.refs');
  const INTERACTIVE = new Set(['button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox',
    'listbox', 'option', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'switch', 'slider',
    'spinbutton', 'treeitem']);
  const FROM_CONTENT = new Set(['button', 'link', 'heading', 'label', 'option', 'cell', 'columnheader',
    'rowheader', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem', 'switch', 'tooltip',
    'legend', 'summary']);
  const STRUCTURE = new Set(['list', 'listitem', 'paragraph', 'group', 'region', 'row', 'cell', 'table',
    'form', 'navigation', 'main', 'banner', 'contentinfo', 'complementary', 'article', 'blockquote']);
  const FIELDS = new Set(['textbox', 'searchbox', 'spinbutton', 'combobox', 'listbox', 'slider']);
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title', 'svg']);
  const TAGS = {a: 'link', area: 'link', button: 'button', textarea: 'textbox', option: 'option',
    h1: 'heading', h2: 'heading', h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading',
    label: 'label', form: 'form', nav: 'navigation', main: 'main', header: 'banner', footer: 'contentinfo',
    aside: 'complementary', ul: 'list', ol: 'list', menu: 'list', li: 'listitem', table: 'table',
    tr: 'row', td: 'cell', th: 'columnheader', p: 'paragraph', dialog: 'dialog', details: 'group',
    summary: 'summary', fieldset: 'group', legend: 'legend', canvas: 'canvas', iframe: 'iframe',
    video: 'video', audio: 'audio', hr: 'separator', progress: 'progressbar', meter: 'meter',
    blockquote: 'blockquote', article: 'article', img: 'img'};
  const INPUTS = {button: 'button', submit: 'button', reset: 'button', image: 'button', file: 'button',
    checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox'};
  const squash = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const clip = (s) => s.length > 200 ? s.slice(0, 199) + '\u2026' : s;
  const quote = (s) => '"' + clip(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';

  const roleOf = (el) => {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit) return explicit === 'presentation' ? 'none' : explicit;
    const tag = el.localName;
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      return type === 'hidden' ? 'none' : (INPUTS[type] || 'textbox');
    }
    if (tag === 'select') return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
    if ((tag === 'a' || tag === 'area') && !el.hasAttribute('href')) return '';
    if (tag === 'img' && el.getAttribute('alt') === '') return 'none';
    if (tag === 'section') return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : '';
    if (TAGS[tag]) return TAGS[tag];
    if (el.isContentEditable && el.hasAttribute('contenteditable')) return 'textbox';
    return '';
  };
  const byIds = (ids) => squash(ids.split(/\s+/).map((id) => {
    const target = document.getElementById(id);
    return target ? target.textContent : '';
  }).join(' '));
  const nameOf = (el, role) => {
    const labelledby = el.getAttribute('aria-labelledby');
    if (labelledby) { const named = byIds(labelledby); if (named) return named; }
    const aria = squash(el.getAttribute('aria-label'));
    if (aria) return aria;
    const tag = el.localName;
    if (tag === 'input' || tag === 'textarea' || tag === 'select') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (['button', 'submit', 'reset'].includes(type)) return squash(el.value) || (type === 'reset' ? 'Reset' : 'Submit');
      if (type === 'image') return squash(el.getAttribute('alt')) || 'Submit';
      const labels = el.labels ? [...el.labels].map((l) => l.textContent).join(' ') : '';
      if (squash(labels)) return squash(labels);
      return squash(el.getAttribute('placeholder') || el.getAttribute('title'));
    }
    if (tag === 'img' || tag === 'area') return squash(el.getAttribute('alt') || el.getAttribute('title'));
    if (FROM_CONTENT.has(role)) { const text = squash(el.textContent); if (text) return text; }
    if (tag === 'fieldset') { const legend = el.querySelector(':scope > legend'); if (legend) return squash(legend.textContent); }
    return squash(el.getAttribute('title'));
  };
  const states = (el, role) => {
    const out = [];
    const aria = (name) => el.getAttribute('aria-' + name);
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox') {
      const checked = 'checked' in el && el.localName === 'input' ? el.checked : aria('checked') === 'true';
      if (checked) out.push('[checked]');
    }
    if (el.disabled || aria('disabled') === 'true') out.push('[disabled]');
    if (aria('expanded') === 'true') out.push('[expanded]');
    if ((role === 'option' && el.selected) || aria('selected') === 'true') out.push('[selected]');
    if (aria('pressed') === 'true') out.push('[pressed]');
    if (el.required || aria('required') === 'true') out.push('[required]');
    if (role === 'heading') out.push('[level=' + (aria('level') || el.localName.slice(1) || '2') + ']');
    if (el === document.activeElement && el !== document.body) out.push('[focused]');
    return out;
  };

  // An element keeps its ref from one snapshot of a document to the next; a new one gets a new number,
  // so a ref from an older snapshot never names a different element.
  const previous = document[KEY];
  const known = previous ? previous.byElement : new WeakMap();
  let counter = previous ? previous.next : 1;
  const refs = new Map();
  const lines = [];
  let truncated = false;
  const emit = (line) => {
    if (lines.length >= opts.maxLines) { truncated = true; return false; }
    lines.push(line);
    return true;
  };
  const walk = (node, level, covered) => {
    if (truncated) return;
    for (const child of node.childNodes) {
      if (truncated) return;
      if (child.nodeType === 3) {
        if (opts.interactive || covered) continue;
        const text = squash(child.textContent);
        if (text) emit('  '.repeat(level) + '- text ' + quote(text));
        continue;
      }
      if (child.nodeType !== 1) continue;
      const el = child;
      if (SKIP.has(el.localName) || el.getAttribute('aria-hidden') === 'true') continue;
      if (el.checkVisibility && !el.checkVisibility()) continue;  // display:none here or above
      const role = roleOf(el);
      const hidden = getComputedStyle(el).visibility === 'hidden';
      let shown = false;
      let name = '';
      if (!hidden && role && role !== 'none') {
        name = nameOf(el, role);
        if (opts.interactive) shown = INTERACTIVE.has(role) || (el.tabIndex >= 0 && el.hasAttribute('tabindex'));
        else shown = !(opts.compact && STRUCTURE.has(role) && !name);
      } else if (opts.interactive && !hidden && el.hasAttribute('tabindex') && el.tabIndex >= 0) {
        shown = true;
      }
      let next = level;
      if (shown) {
        if (opts.depth !== null && level > opts.depth) continue;
        let ref = known.get(el);
        if (!ref) { ref = 'e' + counter++; known.set(el, ref); }
        refs.set(ref, new WeakRef(el));
        let line = '  '.repeat(opts.interactive ? 0 : level) + '- ' + (role || 'generic');
        if (name) line += ' ' + quote(name);
        line += ' [ref=' + ref + ']';
        const extra = states(el, role);
        if (extra.length) line += ' ' + extra.join(' ');
        if (FIELDS.has(role) && 'value' in el && el.value !== '' && el.localName !== 'select') line += ' value=' + quote(String(el.value));
        else if (role === 'combobox' && el.localName === 'select' && el.selectedOptions.length) line += ' value=' + quote(squash(el.selectedOptions[0].textContent));
        if (opts.includeUrls && role === 'link' && el.href) line += ' url=' + el.href;
        if (!emit(line)) return;
        next = level + 1;
      }
      const coveredBelow = covered || (shown && (FROM_CONTENT.has(role) || FIELDS.has(role)) && !!name) || FIELDS.has(role);
      walk(el, next, coveredBelow);
      if (el.shadowRoot) walk(el.shadowRoot, next, coveredBelow);
    }
  };
  walk(document.body || document.documentElement, 0, false);
  document[KEY] = {token: opts.token, refs, byElement: known, next: counter};
  return {snapshot: lines.join('\n'), refs: refs.size, truncated, url: location.href,
          title: document.title, ready_state: document.readyState};
})
"""

# Returns the element a ref names, or a string saying why it cannot.
RESOLVE = r"""
((token, ref) => {
  const saved = document[Symbol.for('fermix.refs')];
  if (!saved || saved.token !== token) return 'document';
  const weak = saved.refs.get(ref);
  if (!weak) return 'missing';
  const el = weak.deref();
  return el && el.isConnected ? el : 'removed';
})
"""
