/**
 * The registry of flows: the engine starts and restores flows from here, the catalogue merges their
 * messages. Each flow engineer adds one line.
 */
import { changePinFlow } from './change-pin.machine.js';
import { checkFlow } from './check.machine.js';
import { dataFlow } from './data.machine.js';
import { linkFlow } from './link.machine.js';
import { menuFlow } from './menu.machine.js';
import { pinFlow } from './pin.machine.js';
import { payFlow } from './pay.machine.js';
import { requestFlow } from './request.machine.js';
import type { FlowId, FlowModule } from './types.js';

export const flows: Partial<Record<FlowId, FlowModule>> = {
  menu: menuFlow,
  data: dataFlow,
  pin: pinFlow,
  pay: payFlow,
  request: requestFlow,
  check: checkFlow,
  changePin: changePinFlow,
  link: linkFlow,
};
