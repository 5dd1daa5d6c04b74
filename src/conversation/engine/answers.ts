/**
 * The engine's answers as Prompts in the user's language: a stored flow's current screen, "processing" (or,
 * once a money-moving call may have reached the service, "being confirmed, do not send it again"), and the
 * engine's own notices. Nothing here writes; the turn and the runner decide which answer a delivery gets.
 */
import type { Lang, Text } from '../../../flows/types.js';
import type { Logger } from '../../log.js';
import type { Catalogue } from '../flow/render.js';
import { currentView } from '../flow/render.js';
import { isBusy, isMoney, type FlowRuntime, type StoredFlow } from '../flow/flow-runtime.js';
import type { Channel, ChannelCapabilities, Prompt } from '../types.js';

export interface Answers {
  text(text: Text, lang: Lang): string;
  /** An engine notice (`common.*`). */
  notice(key: string, lang: Lang, final: boolean): Prompt;
  /**
   * Past the deadline: "processing, you will be notified", or with `money` "being confirmed, do not send it
   * again" (marked `money`), naming the payment by our short ref (`ref`) when it is known. Final on a channel
   * that cannot push (USSD): the outcome cannot follow on the same screen.
   */
  processing(channel: Channel, lang: Lang, money: boolean, ref?: string): Prompt;
  /**
   * Where the stored flow is: its screen (final once the flow ended), or "processing" while it is busy. One
   * this release cannot read (FlowRuntime.admit): "being confirmed" in a money state, else "try again in a moment".
   */
  screen(storedFlow: StoredFlow, lang: Lang, channel: Channel): Prompt;
  /** `prompt` with lines (pending outcomes, a note such as "your session timed out") above it. */
  withNotes(prompt: Prompt, notes: string[]): Prompt;
  /**
   * The words of an ended flow's last screen as catalogue text (its notice, or its final view's text when
   * no error line is above it), to say them again in another language; undefined for any other screen.
   */
  words(storedFlow: StoredFlow): Text | undefined;
  /**
   * The apology for a delivery that failed once its conversation was read: "being confirmed, do not send it
   * again" when the flow may have moved money (it is in a money state), "processing" while a run is out
   * (it goes on, and may still move money), `common.unavailable` ("try again in a minute; nothing you
   * confirmed is lost") when its latest answer told of a money call (the user may be looking for that
   * outcome: "start again" could make them pay twice), else "start again". (One whose conversation could
   * not be read gets `common.unavailable`: what it holds is unknown.)
   */
  failure(
    storedFlow: StoredFlow | undefined,
    running: boolean,
    afterMoney: boolean,
    lang: Lang,
    channel: Channel,
  ): Prompt;
}

export function createAnswers(
  catalogue: Catalogue,
  runtime: FlowRuntime,
  capabilitiesOf: (channel: Channel) => ChannelCapabilities,
  logger: Logger,
): Answers {
  const text = (t: Text, lang: Lang) => catalogue.render(t, lang);
  const notice = (key: string, lang: Lang, final: boolean): Prompt => ({
    text: text({ key }, lang),
    ...(lang === 'en' ? {} : { lang }),
    final,
  });
  const processing = (channel: Channel, lang: Lang, money: boolean, ref?: string): Prompt => {
    const final = !capabilitiesOf(channel).pushes;
    return money
      ? ref
        ? {
            text: text({ key: 'common.confirmingRef', params: { ref } }, lang),
            ...(lang === 'en' ? {} : { lang }),
            final,
            money: true,
          }
        : { ...notice('common.confirming', lang, final), money: true }
      : notice('common.processing', lang, final);
  };

  return {
    text,
    notice,
    processing,
    screen(storedFlow, lang, channel) {
      if (storedFlow.notice) return { text: text(storedFlow.notice, lang), final: true };
      const admitted = runtime.admit(storedFlow);
      // A flow this release cannot read (a later build's, or one a run is still finishing): not its screen.
      if (admitted.kind !== 'continue')
        return storedFlow.money ? processing(channel, lang, true) : notice('common.tryAgainSoon', lang, true);
      const snapshot = runtime.restore(admitted.storedFlow);
      if (isBusy(snapshot)) return processing(channel, lang, isMoney(snapshot));
      const view = currentView(snapshot);
      if (!view) {
        logger.error({ flow: storedFlow.flow, state: snapshot.value }, 'engine: a waiting state has no view');
        return notice('common.error', lang, true);
      }
      const prompt = catalogue.renderView(view, lang);
      return storedFlow.ended ? { ...prompt, final: true } : prompt;
    },
    words(storedFlow) {
      if (storedFlow.notice) return storedFlow.notice;
      if (!storedFlow.ended) return undefined;
      const admitted = runtime.admit(storedFlow);
      if (admitted.kind !== 'continue') return undefined;
      const view = currentView(runtime.restore(admitted.storedFlow));
      return view && !view.error ? view.text : undefined;
    },
    withNotes: (prompt, notes) =>
      notes.length === 0 ? prompt : { ...prompt, text: [...notes, prompt.text].join('\n') },
    failure(storedFlow, running, afterMoney, lang, channel) {
      const money = storedFlow !== undefined && runtime.isMoneyFlow(storedFlow);
      if (money || running) return processing(channel, lang, money);
      return notice(afterMoney ? 'common.unavailable' : 'common.error', lang, true);
    },
  };
}
