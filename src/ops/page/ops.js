// The operator page (/ops): reads /ops/funnel.json, /ops/money.json and /ops/status.json, draws them with Chart.js, and does it
// again every few seconds. Everything shown is put in the page as text (textContent) or drawn on a canvas:
// nothing from the data is ever parsed as HTML.
'use strict';

(() => {
  const STEP_SERIES = [
    { key: 'movedOn', label: 'moved on', color: '#2f855a' },
    { key: 'abandoned', label: 'abandoned', color: '#dd6b20' },
    { key: 'failed', label: 'failed', color: '#c53030' },
    { key: 'open', label: 'still there', color: '#a0aec0' },
    { key: 'ended', label: 'ended here', color: '#3182ce' },
  ];
  const OUTCOMES = [
    // The conversation ended with the service accepting the payment; whether it was paid is the journal's
    // word (the Money section).
    { key: 'paid', label: 'accepted by the service', color: '#2f855a' },
    { key: 'done', label: 'done', color: '#68d391' },
    { key: 'processing', label: 'still processing', color: '#d69e2e' },
    { key: 'refused', label: 'refused by policy', color: '#805ad5' },
    { key: 'failed', label: 'failed at the service', color: '#c53030' },
    { key: 'cancelled', label: 'cancelled', color: '#718096' },
    { key: 'left', label: 'left to the menu', color: '#cbd5e0' },
    { key: 'abandoned', label: 'abandoned', color: '#dd6b20' },
    { key: 'error', label: 'error', color: '#742a2a' },
  ];

  const body = document.body;
  const refreshMs = Math.max(5, Number(body.dataset.refreshSeconds) || 15) * 1000;
  const $ = (id) => document.getElementById(id);
  const charts = new Map();
  /** What this page saw of the queue and the service since it was opened, for the small chart. */
  const seen = [];
  let loads = 0;

  function cell(tag, value, className) {
    const element = document.createElement(tag);
    element.textContent = String(value);
    if (className) element.className = className;
    return element;
  }
  const seconds = (ms) => (ms === null || ms === undefined ? '–' : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`);
  const share = (n, of) => (of > 0 ? `${Math.round((100 * n) / of)} %` : '–');

  /** Draws a chart on `canvas`, or gives the one already there new data. */
  function draw(key, canvas, config) {
    const existing = charts.get(key);
    if (existing && existing.canvas === canvas) {
      existing.data = config.data;
      existing.update('none');
      return existing;
    }
    if (existing) existing.destroy();
    const options = {
      animation: false,
      maintainAspectRatio: false,
      datasets: { bar: { maxBarThickness: 48 } },
      ...config.options,
    };
    const chart = new window.Chart(canvas, { ...config, options });
    charts.set(key, chart);
    return chart;
  }

  async function getJson(path) {
    const res = await fetch(path, {
      headers: { accept: 'application/json' },
      cache: 'no-store',
      credentials: 'same-origin',
    });
    if (!res.ok) throw new Error(`${path} answered ${res.status}`);
    return res.json();
  }

  function showStatus(status) {
    $('queue-depth').textContent = status.queueDepth === null ? 'unknown' : String(status.queueDepth);
    $('service-total').textContent = String(status.service.total);
    $('service-429').textContent = String(status.service.rateLimited);
    $('service-errors').textContent = String(status.service.errors);
    seen.push({
      at: new Date().toLocaleTimeString(),
      depth: status.queueDepth ?? 0,
      limited: status.service.rateLimited,
      errors: status.service.errors,
    });
    if (seen.length > 120) seen.shift();
    draw('service', $('service-chart'), {
      type: 'line',
      data: {
        labels: seen.map((s) => s.at),
        datasets: [
          {
            label: 'notifications waiting',
            data: seen.map((s) => s.depth),
            borderColor: '#3182ce',
            backgroundColor: '#3182ce',
          },
          {
            label: '429s (total)',
            data: seen.map((s) => s.limited),
            borderColor: '#805ad5',
            backgroundColor: '#805ad5',
          },
          {
            label: 'errors (total)',
            data: seen.map((s) => s.errors),
            borderColor: '#c53030',
            backgroundColor: '#c53030',
          },
        ],
      },
      options: { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }

  /** The section of one flow, made from the template the first time. */
  function sectionOf(flow) {
    let section = document.querySelector(`section.flow[data-flow="${CSS.escape(flow)}"]`);
    if (!section) {
      section = $('flow-template').content.firstElementChild.cloneNode(true);
      section.dataset.flow = flow;
      $('flows').append(section);
    }
    return section;
  }

  function showFlow(report) {
    const section = sectionOf(report.flow);
    const steps = report.steps.filter((s) => s.entered + s.movedOn + s.abandoned + s.failed > 0);
    const ended = OUTCOMES.filter((o) => report.outcomes[o.key] > 0).map((o) => `${report.outcomes[o.key]} ${o.label}`);
    section.querySelector('.flow-title').textContent = `${report.label ?? report.flow}: ${report.started} started`;
    section.querySelector('.flow-summary').textContent =
      steps.length === 0
        ? 'No run in this period.'
        : ended.length > 0
          ? `Ended: ${ended.join(', ')}.`
          : 'No run ended in this period.';
    section.dataset.empty = String(steps.length === 0);

    const leaving = steps
      .filter((s) => !s.final && s.dropOff > 0)
      .sort((a, b) => b.dropOff - a.dropOff || b.abandoned - a.abandoned)[0];
    section.querySelector('.flow-dropoff').textContent = leaving
      ? `Largest drop-off: ${leaving.label ?? leaving.step}, ${leaving.dropOff} of ${leaving.entered} did not move on (${leaving.abandoned} abandoned, ${leaving.failed} failed).`
      : '';

    const rows = section.querySelector('table.steps tbody');
    rows.replaceChildren(
      ...(steps.length === 0
        ? [
            (() => {
              const tr = document.createElement('tr');
              const td = cell('td', 'No run reached this flow in this period.', 'empty');
              td.colSpan = 8;
              tr.append(td);
              return tr;
            })(),
          ]
        : steps.map((s) => {
            const tr = document.createElement('tr');
            tr.dataset.step = s.step;
            if (leaving && s.step === leaving.step) tr.className = 'worst';
            const name = cell('td', s.final ? `${s.label ?? s.step} (end)` : (s.label ?? s.step));
            // The machine's name of the step stays at hand for an engineer (hover).
            name.title = s.step;
            tr.append(
              name,
              cell('td', s.entered),
              cell('td', s.movedOn),
              cell('td', s.abandoned),
              cell('td', s.failed),
              cell('td', s.final ? '–' : `${s.dropOff} (${share(s.dropOff, s.entered)})`),
              cell('td', seconds(s.medianMs)),
              cell('td', seconds(s.p90Ms)),
            );
            return tr;
          })),
    );

    const amount = (s, key) =>
      key === 'ended'
        ? s.final
          ? s.entered
          : 0
        : key === 'open'
          ? s.final
            ? 0
            : Math.max(0, s.entered - s.movedOn - s.abandoned - s.failed)
          : s.final
            ? 0
            : s[key];
    const funnelCanvas = section.querySelector('.funnel-chart');
    // A bar per step, each tall enough to carry its name.
    funnelCanvas.parentElement.style.height = `${Math.max(160, 60 + 24 * steps.length)}px`;
    draw(`${report.flow}:funnel`, funnelCanvas, {
      type: 'bar',
      data: {
        labels: steps.map((s) => s.label ?? s.step),
        datasets: STEP_SERIES.map((series) => ({
          label: series.label,
          data: steps.map((s) => amount(s, series.key)),
          backgroundColor: series.color,
        })),
      },
      options: {
        indexAxis: 'y',
        scales: {
          x: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
          y: { stacked: true, ticks: { autoSkip: false } },
        },
      },
    });

    const timed = steps.filter((s) => s.timed > 0);
    draw(`${report.flow}:time`, section.querySelector('.time-chart'), {
      type: 'bar',
      data: {
        labels: timed.map((s) => s.label ?? s.step),
        datasets: [
          { label: 'median', data: timed.map((s) => s.medianMs / 1000), backgroundColor: '#3182ce' },
          { label: '90th percentile', data: timed.map((s) => s.p90Ms / 1000), backgroundColor: '#90cdf4' },
        ],
      },
      options: { scales: { y: { beginAtZero: true } } },
    });

    const used = OUTCOMES.filter((o) => report.outcomes[o.key] > 0);
    const days = report.outcomesByDay;
    draw(`${report.flow}:outcomes`, section.querySelector('.outcome-chart'), {
      type: 'bar',
      data: {
        labels: days.map((d) => `${d.day} ${d.channel}`),
        datasets: used.map((o) => ({ label: o.label, data: days.map((d) => d[o.key]), backgroundColor: o.color })),
      },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } },
    });
    const head = section.querySelector('table.outcomes thead tr');
    head.replaceChildren(...['Day', 'Channel', 'Started', ...used.map((o) => o.label)].map((h) => cell('th', h)));
    section.querySelector('table.outcomes tbody').replaceChildren(
      ...days.map((d) => {
        const tr = document.createElement('tr');
        tr.append(
          cell('td', d.day),
          cell('td', d.channel),
          cell('td', d.started),
          ...used.map((o) => cell('td', d[o.key])),
        );
        return tr;
      }),
    );
  }

  const BUCKETS = [
    { key: 'completed', label: 'completed' },
    { key: 'failed', label: 'failed' },
    { key: 'open', label: 'still open' },
  ];
  /** A decimal string as money: its whole part in groups of three, then its currency ("8,150.5 NGN"). */
  const amountOf = (total, currency) => {
    const [whole, fraction] = String(total).split('.');
    const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return `${grouped}${fraction ? `.${fraction}` : ''} ${currency || '(no currency)'}`;
  };
  const figure = (c, currency) => `${c.count} · ${amountOf(c.total, currency)}`;

  function showMoney(money) {
    const section = $('money');
    section.dataset.state = 'ready';
    $('money-status').textContent = money.rows.length === 0 ? 'No operation in this period.' : '';
    $('money-totals').replaceChildren(
      ...money.totals.flatMap((t) =>
        BUCKETS.map((b) => {
          const card = document.createElement('div');
          card.className = `card money-${b.key}`;
          card.dataset.currency = t.currency;
          card.dataset.kind = t.kind;
          card.dataset.bucket = b.key;
          const value = document.createElement('span');
          value.className = 'value';
          value.textContent = amountOf(t[b.key].total, t.currency);
          const label = document.createElement('span');
          label.className = 'label';
          label.textContent = `${t.kind}s ${b.label}: ${t[b.key].count}`;
          card.append(value, label);
          return card;
        }),
      ),
    );
    $('money-days')
      .querySelector('tbody')
      .replaceChildren(
        ...money.rows.map((r) => {
          const tr = document.createElement('tr');
          tr.append(
            cell('td', r.day),
            cell('td', r.currency),
            cell('td', r.kind),
            ...BUCKETS.map((b) => cell('td', figure(r[b.key], r.currency))),
          );
          return tr;
        }),
      );
  }

  async function loadMoney(query) {
    if (body.dataset.journal !== 'on') {
      $('money').dataset.state = 'off';
      $('money-status').textContent = 'No journal here (no database): nothing to show.';
      return;
    }
    try {
      showMoney(await getJson(`/ops/money.json?${query}`));
    } catch (error) {
      $('money').dataset.state = 'error';
      $('money-status').textContent = `Could not read the journal: ${error.message}.`;
    }
  }

  async function load() {
    const query = new URLSearchParams({ days: $('days').value });
    if ($('channel').value) query.set('channel', $('channel').value);
    // The journal's money on its own: a database away leaves the funnel shown, and the other way round.
    const money = loadMoney(query);
    try {
      const [funnel, status] = await Promise.all([getJson(`/ops/funnel.json?${query}`), getJson('/ops/status.json')]);
      showStatus(status);
      for (const flow of funnel.flows) showFlow(flow);
      loads += 1;
      body.dataset.loads = String(loads);
      body.dataset.state = 'ready';
      $('updated').textContent =
        `Updated ${new Date().toLocaleTimeString([], { timeZoneName: 'short' })} (${funnel.days[0]} to ${funnel.days.at(-1)} UTC); refreshes every ${refreshMs / 1000} s.`;
    } catch (error) {
      body.dataset.state = 'error';
      $('updated').textContent = `Could not load the figures: ${error.message}. Trying again in ${refreshMs / 1000} s.`;
    }
    await money;
  }

  $('days').addEventListener('change', load);
  $('channel').addEventListener('change', load);
  load();
  setInterval(load, refreshMs);
})();
