/**
 * Socket Mode (an app token set): no HTTP route, start() opens the connection Slack names in
 * apps.connections.open, and a slash command arriving over the socket is acknowledged with the prompt.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedEngine, TEAM, USER, startRig, textOf, type Rig } from './harness.js';
import { SocketModeServer } from './socket-server.js';

let rig: Rig | undefined;
let socket: SocketModeServer | undefined;
afterEach(async () => {
  await rig?.close();
  await socket?.close();
  rig = undefined;
  socket = undefined;
});

describe('Socket Mode', () => {
  it('connects with the app token and answers a command over the socket', async () => {
    socket = new SocketModeServer();
    await socket.start();
    const engine = new ScriptedEngine(() => ({ text: 'Phone number to pay?', input: 'phone', final: false }));
    const url = socket.url;
    // start() asks apps.connections.open where to connect: our socket.
    rig = await startRig(
      engine,
      { appToken: 'xapp-1-A0001-test' },
      { beforeStart: (fake) => fake.script('apps.connections.open', { status: 200, body: { ok: true, url } }) },
    );

    const [open] = rig.fake.of('apps.connections.open');
    expect(open?.authorization).toBe('Bearer xapp-1-A0001-test');

    // The router serves nothing in Socket Mode.
    const http = await fetch(`${rig.appUrl}/slack/events`, { method: 'POST', body: 'x' });
    expect(http.status).toBe(404);

    socket.send({
      envelope_id: 'env-1',
      type: 'slash_commands',
      accepts_response_payload: true,
      payload: {
        team_id: TEAM,
        user_id: USER,
        command: '/momo',
        text: 'pay',
        channel_id: 'C0001',
        response_url: `${rig.fake.url}/respond/socket`,
        trigger_id: 'trig-socket-1',
      },
    });
    const ack = await socket.next();
    expect(ack.envelope_id).toBe('env-1');
    expect(ack.payload.response_type).toBe('ephemeral');
    expect(textOf(ack.payload.blocks)).toBe('Phone number to pay?');
    expect(engine.inbounds).toEqual([
      { channel: 'slack', conversationId: `${TEAM}:${USER}`, userId: USER, messageId: 'trig-socket-1', start: 'pay' },
    ]);
  });
});
