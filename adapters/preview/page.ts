/**
 * The `/preview` page: four panes drawn as each channel looks (a phone's USSD screen, a Telegram chat with its
 * inline keyboard, a Slack message with its buttons and answer modal, a WhatsApp chat with its reply buttons
 * and list), from the renderings `POST /preview/turn` answers (render.ts). The script draws every value with
 * `textContent`, never as markup, and the page loads nothing but its own script and style (index.ts's
 * Content-Security-Policy). `body[data-turn]` counts the answers drawn and `body[data-state]` is
 * idle | busy | ready (tests wait on them).
 */
import { LANGS } from '../../flows/types.js';
import { render } from '../../src/conversation/flow/render.js';
import { escapeHtml } from '../../src/ops/html.js';

/** The page, carrying the CSRF token `token` and starting with `phone`. */
export function previewPage(token: string, phone: string): string {
  const languages = LANGS.map(
    (lang) => `<option value="${lang}">${escapeHtml(render({ key: `menu.lang.${lang}` }, lang))}</option>`,
  ).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf" content="${escapeHtml(token)}">
<title>Preview: one conversation on every channel</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/preview/preview.css">
<script src="/preview/preview.js" defer></script>
</head>
<body data-state="idle" data-turn="0">
<header>
  <h1>One conversation, four channels</h1>
  <div class="who">
    <label>Phone <input id="phone" type="tel" value="${escapeHtml(phone)}" autocomplete="off"></label>
    <label>Language <select id="lang"><option value="">as remembered</option>${languages}</select></label>
    <button id="dial" type="button">Dial again</button>
    <span id="status" role="status"></span>
  </div>
  <p class="note">The demo's sandbox, no real money. The conversation is the preview's own (<code>preview:</code> and
  the number), never a real user's. The flows run as on USSD: a PIN is asked (the demo's is 1234), which the chats
  never ask. Type or press in any pane: every pane shows the answer as its channel's adapter renders it.</p>
</header>
<main class="panes">
  <section class="pane ussd" id="ussd" aria-label="USSD">
    <h2>USSD</h2>
    <div class="handset">
      <pre class="screen" id="ussd-screen"></pre>
      <div class="meta" id="ussd-meta"></div>
      <form id="ussd-form" class="row"><input id="ussd-answer" aria-label="USSD answer" autocomplete="off"><button type="submit">Send</button></form>
    </div>
    <div class="said" id="ussd-said"></div>
    <details><summary>As the gateway gets it</summary><pre class="raw" id="ussd-raw"></pre></details>
  </section>
  <section class="pane telegram" id="telegram" aria-label="Telegram">
    <h2>Telegram</h2>
    <div class="chat" id="telegram-chat"></div>
    <form id="telegram-form" class="row composer"><input id="telegram-text" aria-label="Telegram message" placeholder="Message" autocomplete="off"><button type="submit">Send</button></form>
    <details><summary>sendMessage</summary><pre class="raw" id="telegram-raw"></pre></details>
  </section>
  <section class="pane slack" id="slack" aria-label="Slack">
    <h2>Slack</h2>
    <div class="chat" id="slack-chat"></div>
    <form id="slack-modal" class="modal" hidden>
      <div class="modal-title" id="slack-modal-title"></div>
      <label><span id="slack-modal-label"></span><input id="slack-modal-input" autocomplete="off"></label>
      <div class="row"><button type="button" id="slack-modal-close"></button><button type="submit" id="slack-modal-submit"></button></div>
    </form>
    <form id="slack-form" class="row composer"><input id="slack-text" aria-label="Slack message" placeholder="Message MoMo" autocomplete="off"><button type="submit">Send</button></form>
    <details><summary>Block Kit</summary><pre class="raw" id="slack-raw"></pre></details>
  </section>
  <section class="pane whatsapp" id="whatsapp" aria-label="WhatsApp">
    <h2>WhatsApp</h2>
    <div class="chat" id="whatsapp-chat"></div>
    <div class="sheet" id="whatsapp-list" hidden></div>
    <form id="whatsapp-form" class="row composer"><input id="whatsapp-text" aria-label="WhatsApp message" placeholder="Message" autocomplete="off"><button type="submit">Send</button></form>
    <details><summary>Graph API messages</summary><pre class="raw" id="whatsapp-raw"></pre></details>
  </section>
</main>
<details class="prompt"><summary>The engine's Prompt</summary><pre class="raw" id="prompt-raw"></pre></details>
</body>
</html>
`;
}

export const PREVIEW_CSS = `
* { box-sizing: border-box; }
body { margin: 0; padding: 12px 16px 24px; background: #eef0f3; font: 14px/1.4 system-ui, sans-serif; color: #1d232a; }
h1 { margin: 0 0 8px; font-size: 20px; }
h2 { margin: 0 0 8px; font-size: 15px; }
.who { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }
.who input, .who select { padding: 5px 8px; font-size: 14px; }
.note { margin: 8px 0 12px; color: #4b5563; max-width: 70em; }
#status { color: #b42318; }
.panes { display: grid; grid-template-columns: repeat(4, minmax(240px, 1fr)); gap: 12px; align-items: start; }
@media (max-width: 1100px) { .panes { grid-template-columns: repeat(2, minmax(240px, 1fr)); } }
.pane { position: relative; padding: 10px; border-radius: 12px; background: #fff; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
.row { display: flex; gap: 6px; margin-top: 8px; }
.row input { flex: 1; min-width: 0; padding: 6px 8px; font-size: 14px; border: 1px solid #c5cbd3; border-radius: 8px; }
button { padding: 6px 10px; font-size: 13px; border: 0; border-radius: 8px; background: #3a4048; color: #fff; cursor: pointer; }
button:disabled { opacity: .45; cursor: default; }
.raw { max-height: 240px; overflow: auto; font-size: 11px; background: #f6f7f9; padding: 6px; white-space: pre-wrap; word-break: break-word; }
details { margin-top: 8px; }
.said { white-space: pre-wrap; font-size: 12px; color: #7a4b00; }
.said:not(:empty) { margin-top: 8px; padding: 6px 8px; border-radius: 8px; background: #fff4d6; }
.handset { padding: 14px 12px; border-radius: 26px; background: #22262b; }
.screen { height: 230px; margin: 0; overflow-y: auto; padding: 8px; border-radius: 8px; border: 3px solid #101214; background: #cfe3c8;
  color: #13210f; font: 13px ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
.handset .meta { margin-top: 4px; color: #aeb6bf; font-size: 11px; }
.chat { min-height: 260px; max-height: 460px; overflow-y: auto; padding: 8px; border-radius: 8px; }
.bubble { margin: 0 0 6px; padding: 7px 9px; border-radius: 10px; white-space: pre-wrap; word-break: break-word; max-width: 95%; }
.telegram .chat { background: #cfdfe9; }
.telegram .bubble { background: #fff; }
.telegram .keyboard { display: grid; gap: 4px; margin-bottom: 6px; }
.telegram .keyboard .krow { display: flex; gap: 4px; }
.telegram .keyboard button { flex: 1; background: rgba(36,60,80,.55); }
.slack .chat { background: #fff; border: 1px solid #e1e4e8; }
.slack .sender { font-weight: 700; margin-bottom: 2px; }
.slack .section { white-space: pre-wrap; word-break: break-word; margin-bottom: 6px; }
.slack .actions { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 6px; }
.slack .actions button { background: #fff; color: #1d1c1d; border: 1px solid #c4c4c4; }
.slack .actions button.primary { background: #007a5a; color: #fff; border-color: #007a5a; }
.slack .actions button.danger { background: #fff; color: #e01e5a; border-color: #e01e5a; }
.modal { position: absolute; left: 14px; right: 14px; top: 70px; z-index: 2; padding: 12px; border-radius: 10px; background: #fff;
  box-shadow: 0 8px 24px rgba(0,0,0,.3); }
.modal label { display: grid; gap: 4px; }
.modal input { padding: 6px 8px; font-size: 14px; }
.modal-title { font-weight: 700; margin-bottom: 8px; }
.whatsapp .chat { background: #efe7dc; }
.whatsapp .bubble { background: #fff; }
.whatsapp .footer { margin-top: 4px; color: #667781; font-size: 12px; }
.whatsapp .buttons { display: grid; gap: 4px; margin: -2px 0 6px; }
.whatsapp .buttons button { background: #fff; color: #008069; }
.sheet { position: absolute; left: 14px; right: 14px; bottom: 90px; z-index: 2; max-height: 360px; overflow-y: auto; padding: 8px;
  border-radius: 10px; background: #fff; box-shadow: 0 8px 24px rgba(0,0,0,.3); }
.sheet .section-title { color: #008069; font-size: 12px; margin: 4px 0; }
.sheet button { display: block; width: 100%; margin: 0 0 4px; text-align: left; background: #f6f7f9; color: #1d232a; }
.sheet .description { display: block; color: #667781; font-size: 12px; }
`;

/** The page's script (see the file comment); written without template literals, as it lives in one. */
export const PREVIEW_JS = String.raw`
(() => {
  const $ = (id) => document.getElementById(id);
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const preset = new URLSearchParams(location.search).get('phone');
  if (preset) $('phone').value = preset;
  let busy = false;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function button(label, onClick, className) {
    const node = el('button', className, label);
    node.type = 'button';
    node.addEventListener('click', onClick);
    return node;
  }
  const raw = (id, value) => { $(id).textContent = JSON.stringify(value, null, 2); };

  async function act(action, withLang) {
    if (busy) return;
    busy = true;
    document.body.dataset.state = 'busy';
    $('status').textContent = '';
    try {
      const body = { phone: $('phone').value.trim(), action };
      if (withLang && $('lang').value) body.lang = $('lang').value;
      const res = await fetch('/preview/turn', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify(body),
      });
      const answer = await res.json().catch(() => ({ detail: 'Unreadable answer (HTTP ' + res.status + ').' }));
      if (!res.ok) $('status').textContent = answer.detail || 'HTTP ' + res.status;
      else draw(answer);
    } catch (err) {
      $('status').textContent = 'Network error: ' + err.message;
    } finally {
      busy = false;
      document.body.dataset.state = 'ready';
    }
  }

  function draw(answer) {
    drawUssd(answer.ussd);
    drawTelegram(answer.telegram);
    drawSlack(answer.slack);
    drawWhatsApp(answer.whatsapp);
    for (const pane of ['ussd', 'telegram', 'slack', 'whatsapp']) {
      const said = answer.said && answer.said.pane === pane ? answer.said.text : '';
      const where = pane === 'ussd' ? $('ussd-said') : $(pane + '-chat');
      if (pane === 'ussd') where.textContent = said;
      else if (said) where.appendChild(el('div', 'bubble said', said));
    }
    raw('prompt-raw', answer.prompt);
    document.body.dataset.turn = String(Number(document.body.dataset.turn) + 1);
  }

  function drawUssd(screen) {
    $('ussd-screen').textContent = screen.text;
    $('ussd-meta').textContent = (screen.final ? 'END' : 'CON') + ' · ' + Array.from(screen.text).length + '/' + screen.limit +
      (screen.pageCount > 1 ? ' · page ' + (screen.page + 1) + ' of ' + screen.pageCount : '');
    $('ussd-answer').disabled = screen.final;
    raw('ussd-raw', (screen.final ? 'END ' : 'CON ') + screen.text);
  }

  function drawTelegram(message) {
    const chat = $('telegram-chat');
    chat.replaceChildren(el('div', 'bubble', message.text));
    if (message.reply_markup) {
      const keyboard = el('div', 'keyboard');
      for (const row of message.reply_markup.inline_keyboard) {
        const line = el('div', 'krow');
        for (const key of row) line.appendChild(button(key.text, () => act({ kind: 'telegram-press', data: key.callback_data })));
        keyboard.appendChild(line);
      }
      chat.appendChild(keyboard);
    }
    raw('telegram-raw', message);
  }

  function drawSlack(message) {
    const chat = $('slack-chat');
    chat.replaceChildren(el('div', 'sender', 'MoMo'));
    $('slack-modal').hidden = true;
    for (const block of message.blocks) {
      if (block.type === 'section') chat.appendChild(el('div', 'section', block.text.text));
      if (block.type !== 'actions') continue;
      const row = el('div', 'actions');
      for (const element of block.elements) {
        const onClick = element.action_id === 'momo_answer'
          ? () => openModal(message.modal)
          : () => act({ kind: 'slack-click', actionId: element.action_id, value: element.value || '' });
        row.appendChild(button(element.text.text, onClick, element.style || ''));
      }
      chat.appendChild(row);
    }
    raw('slack-raw', message);
  }

  function openModal(modal) {
    if (!modal) return;
    const input = modal.blocks[0];
    $('slack-modal-title').textContent = modal.title.text;
    $('slack-modal-label').textContent = input.label.text;
    $('slack-modal-close').textContent = modal.close.text;
    $('slack-modal-submit').textContent = modal.submit.text;
    $('slack-modal-input').value = '';
    $('slack-modal-input').maxLength = input.element.max_length || 500;
    $('slack-modal').hidden = false;
    $('slack-modal-input').focus();
  }

  function drawWhatsApp(messages) {
    const chat = $('whatsapp-chat');
    chat.replaceChildren();
    $('whatsapp-list').hidden = true;
    for (const message of messages) {
      if (message.type === 'text') { chat.appendChild(el('div', 'bubble', message.text.body)); continue; }
      if (message.type !== 'interactive') continue;
      const interactive = message.interactive;
      const bubble = el('div', 'bubble', interactive.body.text);
      if (interactive.footer) bubble.appendChild(el('div', 'footer', interactive.footer.text));
      chat.appendChild(bubble);
      const buttons = el('div', 'buttons');
      if (interactive.type === 'button') {
        for (const reply of interactive.action.buttons)
          buttons.appendChild(button(reply.reply.title, () => act({ kind: 'whatsapp-tap', id: reply.reply.id })));
      } else if (interactive.type === 'list') {
        buttons.appendChild(button('\u2630 ' + interactive.action.button, () => openList(interactive.action)));
      }
      chat.appendChild(buttons);
    }
    raw('whatsapp-raw', messages);
  }

  function openList(action) {
    const sheet = $('whatsapp-list');
    sheet.replaceChildren();
    for (const section of action.sections) {
      sheet.appendChild(el('div', 'section-title', section.title));
      for (const row of section.rows) {
        const choose = button(row.title, () => { sheet.hidden = true; act({ kind: 'whatsapp-tap', id: row.id }); });
        if (row.description) choose.appendChild(el('span', 'description', row.description));
        sheet.appendChild(choose);
      }
    }
    sheet.hidden = false;
  }

  function onSubmit(form, input, kind) {
    $(form).addEventListener('submit', (event) => {
      event.preventDefault();
      const text = $(input).value;
      if (kind !== 'ussd' && text.trim() === '') return;
      $(input).value = '';
      act({ kind, text });
    });
  }
  onSubmit('ussd-form', 'ussd-answer', 'ussd');
  onSubmit('telegram-form', 'telegram-text', 'telegram-text');
  onSubmit('slack-form', 'slack-text', 'slack-text');
  onSubmit('whatsapp-form', 'whatsapp-text', 'whatsapp-text');
  $('slack-modal').addEventListener('submit', (event) => {
    event.preventDefault();
    $('slack-modal').hidden = true;
    act({ kind: 'slack-answer', text: $('slack-modal-input').value });
  });
  $('slack-modal-close').addEventListener('click', () => { $('slack-modal').hidden = true; });
  $('dial').addEventListener('click', () => act({ kind: 'dial' }, true));
  $('lang').addEventListener('change', () => act({ kind: 'dial' }, true));
  $('phone').addEventListener('change', () => act({ kind: 'show' }));
  act({ kind: 'show' });
})();
`;
