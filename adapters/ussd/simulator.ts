/**
 * GET /simulator: one self-contained page (inline CSS and JS, nothing fetched from elsewhere) that looks
 * like a phone, dials the service code and posts to /ussd/africastalking exactly as Africa's Talking does:
 * form fields, a fresh sessionId per dial, `text` holding every answer so far joined by `*`.
 * The code field takes a dial string (`*384*123*1*1#`): its answers past the service code are the first
 * request's `text`, as Africa's Talking sends them. "Drop" ends the session as the network does (no END:
 * the next dial may take it up). The phone's SMS (the demo's outbox, `GET /simulator/sms?phone=`) show
 * under the screen. `?phone=+256...` presets the number. `body[data-state]` is idle | busy | open | ended
 * (tests wait on it).
 */
/** The number the simulator (and the preview, adapters/preview) starts with: a demo user. */
export const DEMO_PHONE = '+256772123456';

export function simulatorPage(serviceCode: string): string {
  const code = JSON.stringify(serviceCode).replace(/</g, '\\u003c');
  const shown = serviceCode.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>USSD simulator ${shown}</title>
<style>
  * { box-sizing: border-box; }
  body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center;
    background: #e8ebef; font-family: system-ui, sans-serif; }
  .phone { width: 300px; padding: 22px 18px 26px; border-radius: 36px; background: #22262b;
    box-shadow: 0 12px 30px rgba(0,0,0,.35); }
  .number { display: flex; gap: 6px; margin-bottom: 12px; }
  .number input { flex: 1; min-width: 0; padding: 6px 8px; border-radius: 8px; border: 0; font-size: 14px; }
  .number button { flex: none; padding: 8px 10px; font-size: 13px; white-space: nowrap; }
  .screen { height: 250px; overflow-y: auto; padding: 10px; border-radius: 10px; background: #cfe3c8;
    color: #13210f; font-family: ui-monospace, monospace; font-size: 13px; white-space: pre-wrap;
    word-break: break-word; border: 3px solid #101214; }
  .status { min-height: 18px; margin: 6px 2px; color: #aeb6bf; font-size: 12px; }
  .answer { width: 100%; padding: 8px; border-radius: 8px; border: 0; font-size: 16px; }
  .actions { display: flex; gap: 8px; margin: 10px 0; }
  .actions button { flex: 1; }
  .keypad { display: grid; grid-template-columns: repeat(3, 1fr); gap: 8px; }
  button { padding: 10px 0; border: 0; border-radius: 12px; background: #3a4048; color: #fff; font-size: 16px;
    cursor: pointer; }
  button:disabled { opacity: .45; cursor: default; }
  #dial, #send { background: #1f9d55; }
  #cancel, #drop { background: #c0392b; }
  .code { width: 100%; margin-bottom: 8px; padding: 6px 8px; border-radius: 8px; border: 0; font-size: 14px; }
  .sms { margin-top: 12px; max-height: 160px; overflow-y: auto; color: #e8ebef; font-size: 12px; }
  .sms h2 { margin: 0 0 6px; font-size: 13px; font-weight: 600; }
  .sms li { margin: 0 0 6px; padding: 6px 8px; border-radius: 8px; background: #3a4048; white-space: pre-wrap;
    list-style: none; }
  .sms ul { margin: 0; padding: 0; }
</style>
</head>
<body data-state="idle">
<main class="phone">
  <div class="number">
    <input id="phone" type="tel" aria-label="Phone number" value="${DEMO_PHONE}">
    <button id="dial" type="button">Dial</button>
  </div>
  <input id="code" class="code" aria-label="Code to dial" value="${shown}" autocomplete="off">
  <div id="screen" class="screen" role="status" aria-live="polite">Set your number and dial ${shown}.</div>
  <div id="status" class="status"></div>
  <input id="answer" class="answer" aria-label="Answer" autocomplete="off" disabled>
  <div class="actions">
    <button id="send" type="button" disabled>Send</button>
    <button id="cancel" type="button" disabled>Cancel</button>
    <button id="drop" type="button" disabled title="End the session as the network does, without an END">Drop</button>
  </div>
  <div class="keypad" id="keypad"></div>
  <section class="sms" aria-label="Messages">
    <h2>Messages</h2>
    <ul id="sms"></ul>
  </section>
</main>
<script>
(() => {
  const serviceCode = ${code};
  const $ = (id) => document.getElementById(id);
  const phone = $('phone'), screen = $('screen'), status = $('status'), answer = $('answer');
  const dial = $('dial'), send = $('send'), cancel = $('cancel'), keypad = $('keypad');
  const code = $('code'), drop = $('drop'), sms = $('sms');
  const preset = new URLSearchParams(location.search).get('phone');
  if (preset) phone.value = preset;
  let sessionId = null;
  let answers = [];

  function setState(state) {
    document.body.dataset.state = state;
    const open = state === 'open';
    answer.disabled = !open;
    send.disabled = !open;
    cancel.disabled = !(open || state === 'busy');
    drop.disabled = !open;
    dial.disabled = state === 'busy' || open;
    for (const key of keypad.children) key.disabled = !open;
    if (open) answer.focus();
  }

  function freshSessionId() {
    const bytes = new Uint8Array(10);
    crypto.getRandomValues(bytes);
    return 'SIM' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  async function post(text) {
    const mine = sessionId;
    setState('busy');
    status.textContent = 'Sending...';
    try {
      const body = new URLSearchParams({ sessionId: mine, serviceCode, phoneNumber: phone.value.trim(),
        networkCode: '99999', text });
      const res = await fetch('/ussd/africastalking', { method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body });
      const reply = await res.text();
      if (mine !== sessionId) return;
      if (!res.ok) return finish('Error ' + res.status + ': ' + reply);
      if (reply.startsWith('CON ')) {
        screen.textContent = reply.slice(4);
        status.textContent = '';
        setState('open');
      } else if (reply.startsWith('END ')) {
        screen.textContent = reply.slice(4);
        finish('Session ended.');
      } else {
        finish('Unexpected reply from the service.');
      }
    } catch (err) {
      if (mine === sessionId) finish('Network error: ' + err.message);
    }
  }

  function finish(message) {
    sessionId = null;
    status.textContent = message;
    setState('ended');
  }

  /** The parts of a code between its stars: '*384*123#' -> ['384', '123']. */
  function parts(text) {
    const trimmed = text.trim().replace(/^\\*/, '').replace(/#$/, '');
    return trimmed === '' ? [] : trimmed.split('*');
  }

  /** The answers a dialled code carries past the service code, or null when it is not the service's code. */
  function dialAnswers(dialled) {
    const ours = parts(serviceCode), all = parts(dialled);
    if (!/^\\*[0-9*]*#?$/.test(dialled.trim())) return null;
    if (all.length < ours.length || ours.some((part, i) => all[i] !== part)) return null;
    return all.slice(ours.length);
  }

  dial.addEventListener('click', () => {
    const dialled = code.value.trim() || serviceCode;
    const extra = dialAnswers(dialled);
    if (extra === null) {
      screen.textContent = 'Unknown service: dial ' + serviceCode + ' (answers may follow: ' + serviceCode.replace(/#$/, '') + '*1#).';
      return;
    }
    sessionId = freshSessionId();
    answers = extra;
    screen.textContent = 'Dialling ' + dialled + '...';
    post(answers.join('*'));
  });
  drop.addEventListener('click', () => {
    screen.textContent = 'Connection problem or invalid MMI code.';
    finish('Session dropped by the network.');
  });

  /** The phone's SMS, as the demo's outbox holds them: another number's never stay on screen. */
  let smsFor = null;
  async function readSms() {
    const number = phone.value.trim();
    try {
      const res = await fetch('/simulator/sms?phone=' + encodeURIComponent(number));
      // A number changed while this was asked: its answer is another phone's.
      if (number !== phone.value.trim()) return;
      const messages = res.ok ? (await res.json()).messages : [];
      if (number === smsFor && messages.length === sms.children.length) return;
      smsFor = number;
      sms.replaceChildren(...messages.map((m) => {
        const item = document.createElement('li');
        item.textContent = m.text;
        return item;
      }));
    } catch {
      // The next poll tries again.
    }
  }
  readSms();
  setInterval(readSms, 1500);
  send.addEventListener('click', () => {
    if (!sessionId) return;
    answers.push(answer.value);
    answer.value = '';
    post(answers.join('*'));
  });
  answer.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !send.disabled) send.click(); });
  cancel.addEventListener('click', () => {
    screen.textContent = 'Cancelled.';
    finish('Session cancelled.');
  });
  for (const key of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#']) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = key;
    button.disabled = true;
    button.addEventListener('click', () => { answer.value += key; answer.focus(); });
    keypad.appendChild(button);
  }
})();
</script>
</body>
</html>
`;
}
