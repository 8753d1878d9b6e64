/** svc-sidecar: the agent's process manager inside the sandbox. Not implemented yet. */
export const SIDECAR_NOT_IMPLEMENTED = 'svc-sidecar is not implemented yet: adapters, permission engine and delivery arrive with the sidecar issue';
