import type { AnyFlags, Result } from 'meow';

/** One `svc` command: its flags, its help (with examples), and what it does. Returns the exit code. */
export interface Command<Flags extends AnyFlags = AnyFlags> {
  name: string;
  summary: string;
  /** The help text after "Usage": usage lines, flags, examples. */
  help: string;
  flags: Flags;
  run(cli: Result<Flags>): Promise<number>;
}

/** The flags every command that talks to the gateway takes. */
export const connectionFlags = {
  url: { type: 'string', description: 'the gateway (default: $SVC_URL, the saved config, http://127.0.0.1:8080)' },
  token: { type: 'string', description: 'a user token (default: $SVC_TOKEN, then the one `svc login` saved)' },
} as const;

export const CONNECTION_HELP = `  --url <url>      the gateway (else $SVC_URL, the saved config, http://127.0.0.1:8080)
  --token <jwt>    a user token (else $SVC_TOKEN, then the one \`svc login\` saved)`;
