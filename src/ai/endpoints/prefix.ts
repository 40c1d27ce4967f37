/** The prefix of a `model` that names a route flow. */
export const DYNAMIC_PREFIX = 'dynamic/';
