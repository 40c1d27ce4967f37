/**
 * `breakwater/testing`: what tests of code built on Breakwater need: `FakeClock` (time that moves
 * only when the test says so) and the fault injection policy (latency, errors, hangs on a share of
 * calls).
 */
export { FakeClock } from '../core/index.js';
export {
  faultInjection,
  type LatencyFault,
  type ErrorFault,
  type HangFault,
  type FaultSettings,
  type FaultInjectionOptions,
  type FaultEvent,
  type FaultInjectionState,
  FAULT_INJECTION_DEFAULTS,
  FaultInjectionPolicy,
} from '../policy/index.js';
