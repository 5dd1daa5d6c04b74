/** Starts the whole product (embedded sandbox, memory or Redis store) on port 0 and drives it over HTTP. */
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { productDatabase } from '../journal/server-database.js';

export async function startProduct(env: Record<string, string> = {}): Promise<RunningApp> {
  return startApp(loadConfig({ ...(await productDatabase()), PORT: '0', LOG_LEVEL: 'silent', ...env }));
}

/**
 * An Africa's Talking session: every answer so far joined by `*`, as the gateway sends it. `path` is the
 * callback route: `/ussd/africastalking/<USSD_CALLBACK_TOKEN>` in production.
 */
export class AtSession {
  private readonly answers: string[] = [];
  readonly screens: string[] = [];
  constructor(
    private readonly url: string,
    readonly phoneNumber: string,
    readonly sessionId = `at-${Math.random().toString(36).slice(2)}`,
    private readonly path = '/ussd/africastalking',
  ) {}

  private async post(): Promise<string> {
    const res = await fetch(`${this.url}${this.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        sessionId: this.sessionId,
        serviceCode: '*384*123#',
        phoneNumber: this.phoneNumber,
        networkCode: '63902',
        text: this.answers.join('*'),
      }),
    });
    if (res.status !== 200) throw new Error(`USSD answered ${res.status}: ${await res.text()}`);
    const screen = await res.text();
    this.screens.push(screen);
    return screen;
  }

  dial(): Promise<string> {
    return this.post();
  }

  answer(text: string): Promise<string> {
    this.answers.push(text);
    return this.post();
  }

  /** The same request again, as a gateway resends it. */
  resend(): Promise<string> {
    return this.post();
  }
}

export async function sandboxGet<T>(app: RunningApp, path: string): Promise<T> {
  const res = await fetch(`${app.url}${path}`, { headers: { authorization: 'Token sandbox-key' } });
  return (await res.json()) as T;
}
